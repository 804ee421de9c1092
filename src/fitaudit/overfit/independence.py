"""The two independence tests on per-example loss vectors.

Werpachowski, Gyorgy, Szepesvari, "Detecting overfitting via adversarial
examples", NeurIPS 2019, Sec. 3. Inputs are the per-example vectors
L(f, X_i) and L(f, g(X_i)) h_g(g(X_i)); the null hypothesis H is that f is
independent of the sample.

* Test B (:func:`pairwise_test`, the main one): T_i = L(f, g(X_i)) h_g(g(X_i))
  - L(f, X_i), T = mean T_i; reject H at level delta when
  |T| > B(m, s2_T, delta, U); p-value in closed form.
* Test A (:func:`ci_test`, the baseline): reject at confidence 1 - 2 delta
  when R_S +- B(m, s2_S, delta, 1) and R_g +- B(m, s2_g, delta, 1) are
  disjoint.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_float, check_same_length
from fitaudit.overfit.decision import (
    ci_contradiction,
    ci_pvalue,
    ci_verdict,
    overfit_verdict,
    pairwise_contradiction,
)
from fitaudit.overfit.estimators import check_weighted_loss, check_zero_one_loss
from fitaudit.results import Result
from fitaudit.stats import (
    ConfidenceInterval,
    bernstein_pvalue,
    empirical_bernstein_bound,
    sample_mean_and_variance,
)
from fitaudit.verdict import Verdict


def check_delta(delta: float, *, high: float = 1.0) -> float:
    """The level ``delta``, in (0, ``high``): 1 for one test, 1/2 where a CI test at 1 - 2 delta runs too."""
    return check_float(delta, "delta", low=0.0, high=high, low_inclusive=False, high_inclusive=False)


def _interval(mean: float, s2: float, m: int, delta: float, U: float) -> ConfidenceInterval:
    half = empirical_bernstein_bound(m, s2, delta, U)
    return ConfidenceInterval(mean - half, mean + half)


def _check_pair(loss: object, weighted_adv_loss: object) -> tuple[np.ndarray, np.ndarray]:
    plain = check_zero_one_loss(loss, "loss")
    weighted = check_weighted_loss(weighted_adv_loss, "weighted_adv_loss")
    check_same_length(loss=plain, weighted_adv_loss=weighted)
    return plain, weighted


@dataclasses.dataclass(repr=False)
class IndependenceTestResult(Result):
    """What every test of independence between a model and its sample returns.

    The common part of :class:`PairwiseTestResult`,
    :class:`~fitaudit.overfit.one_model.OverfitTestResult` and
    :class:`~fitaudit.overfit.nmodel.NModelTestResult` (Werpachowski et al.
    2019, Tests B and C): the statistic T, its p-value, the decision at level
    ``delta``, the range U of the terms T_i and the number of examples m.
    """

    statistic: float
    pvalue: float
    reject: bool
    delta: float
    U: float
    m: int

    @property
    def n_scored(self) -> int:
        """The examples scored, m (the name of docs/reference/conventions.md)."""
        return self.m

    def verdict(self, **context: Any) -> Verdict:
        """The decision on the ``role`` data (:func:`fitaudit.overfit.decision.overfit_verdict`)."""
        return overfit_verdict(self, **context)


@dataclasses.dataclass(repr=False)
class PairwiseTestResult(IndependenceTestResult):
    """Result of the pairwise test (Test B).

    Attributes
    ----------
    statistic : float
        T = R_g - R_S, the mean of T_i = L(f, g(X_i)) h_g(g(X_i)) - L(f, X_i).
    pvalue : float
        min{1, 3 exp(-m/(9U^2)(s2_T + 3U|T| - s_T sqrt(s2_T + 6U|T|)))}.
    reject : bool
        |T| > B(m, s2_T, delta, U), i.e. ``pvalue < delta``.
    delta, U, m : level, range of the T_i, number of examples.
    variance : float
        s2_T, the biased empirical variance of the T_i.
    bound : float
        B(m, s2_T, delta, U).
    risk_plain, risk_adversarial : float
        R_S and R_g.
    variance_plain, variance_adversarial : float
        Biased empirical variances of L(f, X_i) and L(f, g(X_i)) h_g(g(X_i)).
    """

    variance: float
    bound: float
    risk_plain: float
    risk_adversarial: float
    variance_plain: float
    variance_adversarial: float

    def bound_at(self, delta: float) -> float:
        """B(m, s2_T, delta, U) at another level."""
        return empirical_bernstein_bound(self.m, self.variance, check_delta(delta), self.U)

    def rejects_at(self, delta: float) -> bool:
        """Whether |T| > B(m, s2_T, delta, U) at another level."""
        return abs(self.statistic) > self.bound_at(delta)

    def confidence_interval(self, confidence_level: float | None = None) -> ConfidenceInterval:
        """T +- B(m, s2_T, 1 - confidence_level, U): an interval for E[T_i] (0 under H).

        Werpachowski et al. (NeurIPS 2019), Sec. 3: with probability at least
        ``confidence_level`` the interval covers E[T_i], so it excludes 0
        exactly when the test rejects at level 1 - ``confidence_level``.

        Parameters
        ----------
        confidence_level : float, optional
            In [1/2, 1); default the stored level, 1 - :attr:`delta`.
        """
        return _interval(self.statistic, self.variance, self.m, self._interval_delta(confidence_level), self.U)

    def _interval_delta(self, confidence_level: float | None) -> float:
        if confidence_level is None:
            return self.delta
        level = check_float(confidence_level, "confidence_level", low=0.0, high=1.0, high_inclusive=False)
        if level < 0.5:
            raise InputError(
                f"`confidence_level` must be at least 0.5; got {level:g}. The first argument of "
                f"confidence_interval() is the confidence level, not the test's delta: for delta = {level:g} "
                f"pass confidence_level={1 - level:g}."
            )
        return 1.0 - level

    def risk_plain_interval(self, delta: float | None = None) -> ConfidenceInterval:
        """R_S +- B(m, s2_S, delta, 1)."""
        delta = self.delta if delta is None else check_delta(delta)
        return _interval(self.risk_plain, self.variance_plain, self.m, delta, 1.0)

    def risk_adversarial_interval(self, delta: float | None = None) -> ConfidenceInterval:
        """R_g +- B(m, s2_g, delta, 1)."""
        delta = self.delta if delta is None else check_delta(delta)
        return _interval(self.risk_adversarial, self.variance_adversarial, self.m, delta, 1.0)

    def contradiction(self) -> str | None:
        """Where a saved copy disagrees with its evidence (:func:`fitaudit.overfit.decision.pairwise_contradiction`)."""
        return pairwise_contradiction(self)


def pairwise_test_from_terms(
    terms: np.ndarray, *, U: float, delta: float, plain: np.ndarray, weighted: np.ndarray
) -> PairwiseTestResult:
    """Test B on already validated T_i (also used by the N-model test on Tbar_i)."""
    m = len(terms)
    low, high = float(np.min(terms)), float(np.max(terms))
    if low < -1 - 1e-12 or high > U - 1 + 1e-12:
        hint = (
            " h_g <= 1/2 on successful adversarial examples holds only for a deterministic AEG "
            "that preserves the density (G3); otherwise use U = 2."
            if high > U - 1
            else ""
        )
        raise InputError(
            f"the terms T_i = L(f, g(X_i)) h_g(g(X_i)) - L(f, X_i) must lie in [-1, U - 1] = "
            f"[-1, {U - 1:g}] for `U` = {U:g}; got values in [{low:g}, {high:g}].{hint}"
        )
    statistic, variance = sample_mean_and_variance(terms, "terms")
    risk_plain, variance_plain = sample_mean_and_variance(plain, "loss")
    risk_adv, variance_adv = sample_mean_and_variance(weighted, "weighted_adv_loss")
    bound = empirical_bernstein_bound(m, variance, delta, U)
    return PairwiseTestResult(
        statistic=statistic,
        pvalue=bernstein_pvalue(statistic, variance, m, U),
        reject=bool(abs(statistic) > bound),
        delta=delta,
        U=U,
        m=m,
        variance=variance,
        bound=bound,
        risk_plain=risk_plain,
        risk_adversarial=risk_adv,
        variance_plain=variance_plain,
        variance_adversarial=variance_adv,
    )


def pairwise_test(
    loss: object, weighted_adv_loss: object, *, U: float = 2.0, delta: float = 0.05
) -> PairwiseTestResult:
    """Pairwise test of independence between a model and its test sample (Test B).

    Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 3:
    T_i = L(f, g(X_i)) h_g(g(X_i)) - L(f, X_i), T = (1/m) sum_i T_i,
    s2_T = (1/m) sum_i (T_i - T)^2; reject independence at level delta if
    |T| > B(m, s2_T, delta, U).

    Parameters
    ----------
    loss : array of shape (m,)
        L(f, X_i) in {0, 1}.
    weighted_adv_loss : array of shape (m,)
        L(f, g(X_i)) h_g(g(X_i)) in [0, 1]
        (:attr:`fitaudit.overfit.AEGOutput.weighted_adv_loss`).
    U : float
        Range of the T_i: 2 in general, 3/2 for a deterministic AEG with
        h_g <= 1/2 on successful adversarial examples (deterministic and
        density preserving). Terms outside [-1, U - 1] raise an error.
    delta : float
        Level of the test, in (0, 1).

    Returns
    -------
    PairwiseTestResult
    """
    plain, weighted = _check_pair(loss, weighted_adv_loss)
    U = check_float(U, "U", low=0.0, low_inclusive=False)
    delta = check_delta(delta)
    return pairwise_test_from_terms(weighted - plain, U=U, delta=delta, plain=plain, weighted=weighted)


@dataclasses.dataclass(repr=False)
class CITestResult(Result):
    """Result of the confidence-interval test (Test A).

    Attributes
    ----------
    statistic : float
        R_g - R_S.
    pvalue : float
        The smallest level 2 delta at which the two intervals are disjoint,
        capped at 1 (see :func:`ci_test`).
    reject : bool
        The intervals at ``delta`` are disjoint (independence rejected at
        confidence 1 - 2 delta).
    delta : float
        Failure probability of each interval.
    confidence_level : float
        1 - 2 delta.
    m : int
    risk_plain, risk_adversarial : float
        R_S and R_g.
    ci_plain, ci_adversarial : ConfidenceInterval
        R_S +- B(m, s2_S, delta, 1) and R_g +- B(m, s2_g, delta, 1).
    variance_plain, variance_adversarial : float
        s2_S and s2_g (biased).
    """

    statistic: float
    pvalue: float
    reject: bool
    delta: float
    confidence_level: float
    m: int
    risk_plain: float
    risk_adversarial: float
    ci_plain: ConfidenceInterval
    ci_adversarial: ConfidenceInterval
    variance_plain: float
    variance_adversarial: float

    def verdict(self, **context: Any) -> Verdict:
        """The decision of Test A (:func:`fitaudit.overfit.decision.ci_verdict`)."""
        return ci_verdict(self, **context)

    def contradiction(self) -> str | None:
        """Where a saved copy disagrees with its evidence (:func:`fitaudit.overfit.decision.ci_contradiction`)."""
        return ci_contradiction(self)


def ci_test(loss: object, weighted_adv_loss: object, *, delta: float = 0.05) -> CITestResult:
    """Confidence-interval test of independence (Test A, the baseline).

    Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 3:
    CI_S = R_S +- B(m, s2_S, delta, 1), CI_g = R_g +- B(m, s2_g, delta, 1);
    disjoint intervals reject independence at confidence 1 - 2 delta (union
    bound over the two intervals).

    The p-value is our addition, derived in closed form: the intervals are
    disjoint iff |R_g - R_S| > B(m, s2_S, delta, 1) + B(m, s2_g, delta, 1)
    = B(m, (s_S + s_g)^2, delta, 2), so the smallest such delta is the
    Bernstein p-value of |R_g - R_S| with variance (s_S + s_g)^2 and range 2,
    and the reported p-value is twice it (the test's level is 2 delta),
    capped at 1.

    Parameters
    ----------
    loss : array of shape (m,)
        L(f, X_i) in {0, 1}.
    weighted_adv_loss : array of shape (m,)
        L(f, g(X_i)) h_g(g(X_i)) in [0, 1].
    delta : float
        Failure probability of each interval, in (0, 1/2).
    """
    plain, weighted = _check_pair(loss, weighted_adv_loss)
    delta = check_delta(delta, high=0.5)
    m = len(plain)
    risk_plain, variance_plain = sample_mean_and_variance(plain, "loss")
    risk_adv, variance_adv = sample_mean_and_variance(weighted, "weighted_adv_loss")
    ci_plain = _interval(risk_plain, variance_plain, m, delta, 1.0)
    ci_adv = _interval(risk_adv, variance_adv, m, delta, 1.0)
    return CITestResult(
        statistic=risk_adv - risk_plain,
        pvalue=ci_pvalue(risk_adv - risk_plain, variance_plain, variance_adv, m),
        reject=ci_plain.disjoint(ci_adv),
        delta=delta,
        confidence_level=1.0 - 2.0 * delta,
        m=m,
        risk_plain=risk_plain,
        risk_adversarial=risk_adv,
        ci_plain=ci_plain,
        ci_adversarial=ci_adv,
        variance_plain=variance_plain,
        variance_adversarial=variance_adv,
    )
