"""Is the model better than a baseline? Its accuracy against the majority class and a simple reference learner.

On the same scored rows, each comparison counts the *discordant* rows: the
model right and the baseline wrong (wins), the reverse (losses). Rows both
get right or both get wrong say nothing about which is better. Under "the two
are equally accurate", a discordant row is a win or a loss with probability
1/2 each, so the exact McNemar test [1]_ is a binomial test of the wins among
the discordant rows (``scipy.stats.binomtest``). The accuracy difference
(model minus baseline) is (wins - losses) / n; its interval is the exact
conditional one, (m / n)(2 q - 1) over the Clopper-Pearson interval of
q = wins / m on the m discordant rows ([2]_, the conditional method): it
excludes 0 exactly when the two-sided exact test rejects at its level, so the
interval and the test never disagree.

The majority class is the most frequent label of the training rows (of the
scored rows when no training labels are given: then it is the best constant
prediction chosen on the scored rows themselves, a stricter baseline). The
reference learner, for tables, is a scaled logistic regression
(:func:`reference_learner`): one ordinary, well-understood model that any
fitted tabular model should not lose to. Its fit is the model's only rival
here; the test is conditional on both fitted models, so its level holds for
the rows scored, whatever the training did.

References
----------
.. [1] Q. McNemar, "Note on the sampling error of the difference between
       correlated proportions or percentages", Psychometrika 12(2), 1947.
.. [2] M. W. Fagerland, S. Lydersen, P. Laake, "The McNemar test for binary
       matched-pairs data: mid-p and asymptotic are better than exact
       conditional", BMC Medical Research Methodology 13:91, 2013.

Examples
--------
>>> import numpy as np
>>> from fitaudit.baseline import baseline_check
>>> y = np.array([0, 1] * 50)
>>> model = y.copy(); model[:15] = 1 - model[:15]        # 85 of 100 right
>>> reference = y.copy(); reference[-3:] = 1 - reference[-3:]
>>> result = baseline_check(y, model, reference_pred=reference, majority_label=0)
>>> result.accuracy, result.reference_accuracy, result.majority_accuracy
(0.85, 0.97, 0.5)
>>> result.verdict().status
'fail'
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binom

from fitaudit._errors import InputError
from fitaudit._validation import check_float
from fitaudit.results import Result, first_mismatch, mismatch
from fitaudit.stats.paired import one_sided_pvalue, paired_interval
from fitaudit.verdict import Verdict

#: the reference learner's name in words (:func:`reference_learner` says how it is built)
REFERENCE = "scaled logistic regression"

#: power at which :func:`detectable_difference` states the smallest difference the test sees
POWER = 0.8


def detectable_difference(discordant: int, n: int, level: float, power: float = POWER) -> float:
    """Smallest accuracy difference the one-sided exact test at ``level`` detects with ``power``, given the rows.

    Conditional on the ``discordant`` rows of ``n`` on which the two
    classifiers disagree: a true difference d makes each of them a win with
    probability q = 1/2 + d n / (2 m); the test rejects when the wins reach
    the smallest k whose exact p-value is below ``level``. The answer is the
    d at which P(Bin(m, q) >= k) = ``power``; NaN when even d = m / n (every
    discordant row a win) would not reach it (too few discordant rows).

    Examples
    --------
    >>> round(detectable_difference(40, 400, 0.025), 4)
    0.0443
    """
    if discordant == 0:
        return math.nan
    tail = binom.sf(np.arange(discordant + 1) - 1, discordant, 0.5)  # P(wins >= k) under equal accuracy
    below = np.flatnonzero(tail < level)
    if below.size == 0:
        return math.nan
    k = int(below[0])

    def shortfall(q: float) -> float:
        return float(binom.sf(k - 1, discordant, q)) - power

    if shortfall(1.0) < 0:
        return math.nan
    q = brentq(shortfall, 0.5, 1.0, xtol=1e-10)
    return (2 * q - 1) * discordant / n


@dataclasses.dataclass(repr=False)
class BaselineResult(Result):
    """The model's accuracy beside the majority class and a reference learner on the same scored rows.

    Attributes
    ----------
    n : int
        Rows scored.
    accuracy : float
        The model's accuracy on them.
    majority_label : str
        The majority class, as named.
    majority_source : str
        Where it was counted: ``"training labels"`` or ``"scored labels"``.
    majority_accuracy : float
        Accuracy of always predicting it.
    wins_vs_majority, losses_vs_majority : int
        Rows the model gets right and the majority class wrong, and the reverse.
    reference : str or None
        The reference learner (:data:`REFERENCE`), or None when there is none.
    reference_accuracy : float
        Its accuracy on the same rows (NaN without one).
    wins_vs_reference, losses_vs_reference : int
        Rows the model gets right and the reference wrong, and the reverse (0 without one).
    level : float
        Family level of the two comparisons (each at half of it).
    missing : str or None
        Why there is no reference learner (in words), when there is none.
    chance : float
        The accuracy predictions unrelated to the labels would score with the
        same class shares, ``p_e = sum_c P(label = c) P(prediction = c)``
        (Cohen 1960, eq. 1; :func:`fitaudit.models.labels.chance_check`); NaN
        in a result saved before it was recorded.
    chance_hint : str or None
        The likely causes of an accuracy at or below :attr:`chance`, in words
        (:func:`fitaudit.models.labels.chance_hint`: labels not in the model's
        order, ...), kept only when the accuracy is there.
    """

    n: int
    accuracy: float
    majority_label: str
    majority_source: str
    majority_accuracy: float
    wins_vs_majority: int
    losses_vs_majority: int
    reference: str | None
    reference_accuracy: float
    wins_vs_reference: int
    losses_vs_reference: int
    level: float = 0.05
    missing: str | None = None
    chance: float = math.nan
    chance_hint: str | None = None

    @property
    def at_chance(self) -> bool:
        """The accuracy is at or below :attr:`chance` (Cohen's kappa <= 0; False when it was not recorded)."""
        return bool(self.accuracy <= self.chance + 1e-12)

    def pvalue_above_majority(self) -> float:
        """One-sided exact McNemar p-value that the model is more accurate than the majority class."""
        return one_sided_pvalue(self.wins_vs_majority, self.losses_vs_majority)

    def pvalue_below_reference(self) -> float:
        """One-sided exact McNemar p-value that the model is less accurate than the reference (1 without one)."""
        if self.reference is None:
            return 1.0
        return one_sided_pvalue(self.losses_vs_reference, self.wins_vs_reference)

    def majority_interval(self, confidence_level: float | None = None) -> tuple[float, float]:
        """Interval on (model accuracy - majority accuracy), at ``1 - level`` unless given."""
        confidence = 1 - self.level if confidence_level is None else confidence_level
        return paired_interval(self.wins_vs_majority, self.losses_vs_majority, self.n, confidence)

    def reference_interval(self, confidence_level: float | None = None) -> tuple[float, float]:
        """Interval on (model accuracy - reference accuracy), at ``1 - level`` unless given; NaN without one."""
        if self.reference is None:
            return (math.nan, math.nan)
        confidence = 1 - self.level if confidence_level is None else confidence_level
        return paired_interval(self.wins_vs_reference, self.losses_vs_reference, self.n, confidence)

    def detectable_loss(self) -> float:
        """Smallest loss to the reference the test detects with 80% power on these rows (NaN without one)."""
        if self.reference is None:
            return math.nan
        return detectable_difference(self.wins_vs_reference + self.losses_vs_reference, self.n, self.level / 2)

    def verdict(self, **context: Any) -> Verdict:
        """The decision (:func:`fitaudit.baseline.decision.baseline_verdict`)."""
        from fitaudit.baseline.decision import baseline_verdict

        return baseline_verdict(self, **context)

    def contradiction(self) -> str | None:
        """Where the accuracies disagree with the counts of discordant rows."""
        problems = [mismatch("majority_accuracy", self.majority_accuracy,
                             self.accuracy - (self.wins_vs_majority - self.losses_vs_majority) / self.n
                             if self.n else self.majority_accuracy)]
        if self.reference is not None:
            problems.append(mismatch("reference_accuracy", self.reference_accuracy,
                                     self.accuracy - (self.wins_vs_reference - self.losses_vs_reference) / self.n))
        for name in ("wins_vs_majority", "losses_vs_majority", "wins_vs_reference", "losses_vs_reference"):
            if not 0 <= getattr(self, name) <= self.n:
                return f"`{name}` is {getattr(self, name)}, outside 0..n = {self.n}"
        if not (math.isnan(self.chance) or 0.0 <= self.chance <= 1.0):
            return f"`chance` is {self.chance}, outside 0..1"
        return first_mismatch(*problems)


def _labels(value: Any, name: str) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim != 1:
        raise InputError(f"`{name}` must be one label per row (1-D); got shape {array.shape}.")
    return array


def majority_of(labels: Any) -> Any:
    """The most frequent label (the smallest of those tied), as a numpy scalar."""
    values, counts = np.unique(_labels(labels, "labels"), return_counts=True)
    if values.size == 0:
        raise InputError("`labels` is empty: there is no majority class.")
    return values[int(np.argmax(counts))]


def baseline_check(y_true: Any, y_pred: Any, *, reference_pred: Any = None, majority_label: Any = None,
                   majority_source: str | None = None, reference: str = REFERENCE, level: float = 0.05,
                   missing: str | None = None, class_names: Any = None,
                   chance_hint: str | None = None) -> BaselineResult:
    """Compare a model's predictions with the majority class and a reference learner's, on the same rows.

    Parameters
    ----------
    y_true, y_pred : array-like, shape (n,)
        True labels and the model's predicted labels.
    reference_pred : array-like, shape (n,), optional
        The reference learner's predictions on the same rows
        (:func:`fit_reference` fits one on the training data).
    majority_label : optional
        The majority class (count it on the training labels with
        :func:`majority_of`); default: the most frequent of ``y_true``.
    majority_source : str, optional
        Where the majority class was counted, in words; default
        ``"training labels"`` when ``majority_label`` is given, else
        ``"scored labels"``.
    reference : str
        The reference learner's name in words.
    level : float
        Family level of the two comparisons (each at half of it).
    missing : str, optional
        Why there is no reference learner, when ``reference_pred`` is None.
    class_names : sequence, optional
        Names of the classes when the labels are their indices (the majority class is shown by name).
    chance_hint : str, optional
        The likely causes of an accuracy at or below chance, in words
        (:func:`fitaudit.models.labels.chance_hint`), kept when the accuracy is there.

    Returns
    -------
    BaselineResult
    """
    truth, predicted = _labels(y_true, "y_true"), _labels(y_pred, "y_pred")
    if truth.size == 0:
        raise InputError("`y_true` is empty: no scored row to compare on.")
    if predicted.shape != truth.shape:
        raise InputError(f"`y_pred` has {predicted.size} predictions for the {truth.size} rows of `y_true`.")
    level = check_float(level, "level", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    source = majority_source or ("scored labels" if majority_label is None else "training labels")
    majority = majority_of(truth) if majority_label is None else majority_label
    own = predicted == truth
    constant = truth == majority
    other = None
    if reference_pred is not None:
        rival = _labels(reference_pred, "reference_pred")
        if rival.shape != truth.shape:
            raise InputError(f"`reference_pred` has {rival.size} predictions for the {truth.size} rows of `y_true`.")
        other = rival == truth
    numeric = {truth.dtype.kind, predicted.dtype.kind} <= set("biuf")
    pooled = np.concatenate([truth, predicted] if numeric or truth.dtype == predicted.dtype
                            else [truth.astype(str), predicted.astype(str)])
    values, codes = np.unique(pooled, return_inverse=True)
    shares = [np.bincount(half, minlength=values.size) / truth.size for half in np.split(codes.reshape(-1), 2)]
    chance = float(shares[0] @ shares[1])  # Cohen (1960), eq. 1: p_e from the two marginal distributions
    at_chance = float(own.mean()) <= chance + 1e-12
    return BaselineResult(
        n=int(truth.size), accuracy=float(own.mean()),
        majority_label=str(majority if class_names is None else class_names[int(majority)]), majority_source=source,
        majority_accuracy=float(constant.mean()), wins_vs_majority=int(np.sum(own & ~constant)),
        losses_vs_majority=int(np.sum(~own & constant)), reference=None if other is None else reference,
        reference_accuracy=math.nan if other is None else float(other.mean()),
        wins_vs_reference=0 if other is None else int(np.sum(own & ~other)),
        losses_vs_reference=0 if other is None else int(np.sum(~own & other)), level=level,
        missing=None if other is not None else (missing or "no reference learner's predictions were given"),
        chance=chance, chance_hint=chance_hint if at_chance else None)


def reference_learner(X: Any) -> Any:
    """The reference learner for the table ``X`` (unfitted): a scaled logistic regression.

    Numeric columns: missing values imputed by the median, then standardised
    (``StandardScaler``); other columns (text, categories, booleans): missing
    values imputed by the most frequent value, then one-hot encoded (values
    not seen in training ignored); then ``LogisticRegression(max_iter=2000)``
    (L2, C = 1, multinomial for several classes). An array is all numeric.
    """
    from sklearn.compose import ColumnTransformer, make_column_selector
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from fitaudit.data.tables import is_frame

    numbers = make_pipeline(SimpleImputer(strategy="median"), StandardScaler())
    if not is_frame(X):
        return make_pipeline(numbers, LogisticRegression(max_iter=2000))
    others = make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore"))
    columns = ColumnTransformer([("numbers", numbers, make_column_selector(dtype_include="number")),
                                 ("others", others, make_column_selector(dtype_exclude="number"))])
    return make_pipeline(columns, LogisticRegression(max_iter=2000))


def fit_reference(X_train: Any, y_train: Any) -> Any:
    """:func:`reference_learner` fitted on the training rows.

    Raises
    ------
    InputError
        The training labels hold one class, or the table cannot be fitted (the message says why).
    """
    labels = _labels(y_train, "y_train")
    if np.unique(labels).size < 2:
        raise InputError(f"`y_train` holds one class ({labels[0]!r}): a reference learner needs two or more.")
    learner = reference_learner(X_train)
    try:
        return learner.fit(X_train, labels)
    except (ValueError, TypeError) as exc:
        raise InputError(f"the reference learner ({REFERENCE}) cannot be fitted on `X_train`: {exc}") from exc


def compare_with_baselines(model: Any, X: Any, y: Any, *, X_train: Any = None, y_train: Any = None,
                           level: float = 0.05) -> BaselineResult:
    """:func:`baseline_check` of a fitted ``model`` on ``(X, y)``, the baselines fitted on the training rows.

    With ``y_train``, the majority class is counted there; with ``X_train``
    too, the reference learner (:func:`fit_reference`) is fitted there and
    scored on ``X``. Without them the comparison is with the majority class
    of ``y`` only, and the result says what is missing.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.model_selection import train_test_split
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.4, stratify=y, random_state=0)
    >>> stump = DecisionTreeClassifier(max_depth=1).fit(X_train, y_train)
    >>> compare_with_baselines(stump, X_test, y_test, X_train=X_train, y_train=y_train).verdict().reason
    'worse_than_reference'
    """
    predicted = np.asarray(model.predict(X))
    if y_train is None:
        return baseline_check(y, predicted, level=level,
                              missing="no training data was given to fit one on")
    majority = majority_of(y_train)
    if X_train is None:
        return baseline_check(y, predicted, majority_label=majority, level=level,
                              missing="no training inputs were given to fit the reference learner on")
    rival = fit_reference(X_train, y_train).predict(X)
    return baseline_check(y, predicted, reference_pred=rival, majority_label=majority, level=level)


__all__ = ["POWER", "REFERENCE", "BaselineResult", "baseline_check", "compare_with_baselines",
           "detectable_difference", "fit_reference", "majority_of", "one_sided_pvalue", "paired_interval",
           "reference_learner"]
