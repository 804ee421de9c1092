"""What the overfitting test decides from its result (the :class:`~fitaudit.verdict.Verdict` contract).

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019): a p-value of the pairwise
test (Test B), or of the N-model test (Test C), below the level ``delta``
rejects the model's independence of the scored data. The rejection means
something only where the test's assumptions hold; this module decides, in
order:

1. ``inconclusive`` (``g3_violated``) when the (G3) check on the scored
   images (:mod:`fitaudit.overfit.g3`) rejects (G3) at its level (its exact
   binomial p-value below ``g3_level``): the shifted crops are told from the
   centre crops, the importance weights are wrong and honest test sets may
   be rejected. The check's own test decides, read again from its counts
   (:func:`g3_rejects`), never a fixed accuracy bar: a significant
   separation, however small, is never left to the test;
2. ``inconclusive`` (``accuracy_at_chance``) when the model is no better
   than chance on the scored data (Cohen's kappa <= 0,
   :func:`fitaudit.models.labels.chance_check`, the rule every command
   applies): a wrong class order, pipeline or labels, not a model to test;
   ``inconclusive`` (``accuracy_not_shown_above_chance``) when kappa is
   above 0 but its lower confidence bound is not
   (:attr:`fitaudit.models.labels.ChanceCheck.shown_above`): an untrained
   network's luck, or too few examples to tell a weak model from chance;
3. on the training data (``role="train"``): ``info`` (rejection there is
   expected and shows the test's power);
4. ``fail`` (``pvalue_below_level``) when the test rejects;
5. with a ``control`` (the same test on the model's training data, read by
   the audit: ``{"reject", "pvalue", "status"}``) that could conclude:
   ``inconclusive`` (``control_not_rejected``) when even the training data
   was not rejected (the test has no power for this model), else ``pass``
   (``control_rejected``: the test had power);
6. otherwise by what the test could have seen (:mod:`fitaudit.overfit.power`):
   ``pass`` (``pvalue_at_or_above_level``) when the largest T the shifts
   allow reaches the T detected with 80% power at this m;
   ``inconclusive`` (``shifts_change_few_answers``) when it does not (the
   model's answers barely change under the shifts: the test could not have
   rejected, so a model fitted to the data would pass too), and
   ``inconclusive`` (``no_power_at_this_size``) when no T up to its largest
   is detected with 80% power at this m. A pass without power would claim
   more than the test could see.

Every verdict past the assumption checks carries ``detectable_T`` (and, for
a one-model test, ``shifted_answers`` and ``reachable_T``) in its numbers.

``fitaudit overfit`` decides by :func:`command_verdict`: the test's verdict,
with the same test on the model's training data as its control where the
command was given them (``--train-data``, ``--train-images``), and, where
the pipeline used is not the one the model records, whether that moves the
model's accuracy out of its exact interval under its own pipeline
(:func:`pipeline_numbers`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fitaudit.overfit.power import power_numbers, shifts_can_reveal
from fitaudit.verdict import Verdict

#: roles of the scored data: the data the model is scored on, or its training data
ROLES = ("test", "train")


def overfit_verdict(result: Any, *, role: str = "test", control: dict[str, Any] | None = None,
                    **_: Any) -> Verdict:
    """The verdict of an overfitting test result (one model or the N-model test).

    Parameters
    ----------
    result : OverfitTestResult, NModelTestResult or PairwiseTestResult
        Reads ``pvalue``, ``delta``, ``reject``, ``statistic`` and, where
        present, ``g3`` (:class:`~fitaudit.overfit.g3.G3ShiftTest`) and
        ``chance`` (:class:`~fitaudit.models.labels.ChanceCheck`).
    role : {"test", "train"}
        What the data are to the model.
    control : dict, optional
        The same test on the model's training data (``reject``, ``pvalue``,
        ``status`` of its verdict), given by the audit with training data.
    """
    numbers: dict[str, Any] = {"pvalue": result.pvalue, "level": result.delta, "statistic": result.statistic}
    g3 = getattr(result, "g3", None)
    if g3 is not None:
        numbers |= {"g3_accuracy": g3.accuracy, "g3_pvalue": g3.pvalue, "g3_level": g3.level, "g3_low": g3.low}
        if g3_rejects(g3):
            return Verdict("inconclusive", "g3_violated", numbers)
    chance = getattr(result, "chance", None)
    if chance is not None:
        numbers |= {"accuracy": chance.accuracy, "chance": chance.chance, "kappa": chance.kappa,
                    "kappa_low": chance.kappa_low}
        if chance.at_or_below:
            return Verdict("inconclusive", "accuracy_at_chance", numbers)
        if not chance.shown_above:
            return Verdict("inconclusive", "accuracy_not_shown_above_chance", numbers)
    if role == "train":
        numbers |= power_numbers(result)
        return Verdict("info", "dependent_on_training_data" if result.reject else "no_dependence_on_training_data",
                       numbers)
    if result.reject:
        return Verdict("fail", "pvalue_below_level", numbers)
    numbers |= power_numbers(result)
    if control is not None and control.get("status") == "info":  # the control concluded (not stopped by G3 or chance)
        numbers |= {"control_pvalue": float(control["pvalue"])}
        if not control["reject"]:
            return Verdict("inconclusive", "control_not_rejected", numbers)
        return Verdict("pass", "control_rejected", numbers)
    if numbers["detectable_T"] is None:
        return Verdict("inconclusive", "no_power_at_this_size", numbers)
    if not shifts_can_reveal(numbers):
        return Verdict("inconclusive", "shifts_change_few_answers", numbers)
    return Verdict("pass", "pvalue_at_or_above_level", numbers)


def g3_rejects(g3: Any) -> bool:
    """Whether a (G3) check (:class:`~fitaudit.overfit.g3.G3ShiftTest`) rejects (G3): its exact binomial p-value,
    recomputed from its counts, is below its level (its accuracy's lower bound lies above chance)."""
    from fitaudit.overfit.g3 import g3_evidence

    return g3_evidence(int(g3.statistic), int(g3.n_test), float(g3.level))[0] < float(g3.level)


def control_of(control: Any) -> dict[str, Any]:
    """The control's outcome as :func:`overfit_verdict` reads it: the test on the model's training data
    (``role="train"``), its verdict's ``status``, ``reject`` and ``pvalue``."""
    return {"status": control.verdict(role="train").status, "reject": bool(control.reject),
            "pvalue": float(control.pvalue)}


def pipeline_numbers(choice: Mapping[str, Any] | None, m: int, confidence_level: float = 0.95) -> dict[str, Any]:
    """Whether the pipeline used moves the model's accuracy out of its interval under the model's own pipeline.

    ``choice`` is :meth:`fitaudit.data.pipeline_rule.PipelineChoice.to_dict`
    output with both accuracies on the ``m`` scored images. The interval is
    the exact (Clopper-Pearson) ``confidence_level`` interval of the accuracy
    under the recorded pipeline (``recorded_low``, ``recorded_high``);
    ``pipeline_changes_accuracy`` is whether the accuracy under the pipeline
    used lies outside it. Empty when the pipelines agree or either accuracy
    is not known.
    """
    from fitaudit.stats.intervals import binomial_interval

    if not choice or not choice.get("differs") or choice.get("accuracy") is None \
            or choice.get("recorded_accuracy") is None or m < 1:
        return {}
    used, recorded = float(choice["accuracy"]), float(choice["recorded_accuracy"])
    interval = binomial_interval(round(recorded * m), m, confidence_level)
    return {"pipeline_accuracy": used, "recorded_accuracy": recorded, "recorded_low": interval.low,
            "recorded_high": interval.high, "recorded_confidence": confidence_level,
            "pipeline_changes_accuracy": not interval.low <= used <= interval.high}


def command_verdict(result: Any, **context: Any) -> Verdict:
    """``fitaudit overfit``'s decision: the test's (:func:`overfit_verdict`), with its control and its pipeline.

    ``result`` is an :class:`~fitaudit.overfit.runs.OverfitCommandResult`.
    Its ``control`` (the same test on the model's training data) is read
    as the audit reads its training part: a control that concluded decides
    between ``pass`` (``control_rejected``) and ``inconclusive``
    (``control_not_rejected``). The numbers gain :func:`pipeline_numbers`
    where the pipeline used is not the model's own.
    """
    control = getattr(result, "control", None)
    if control is not None and "control" not in context:
        context = {**context, "control": control_of(control)}
    verdict = result.test.verdict(**context)
    extra = pipeline_numbers(getattr(result, "pipeline_choice", None), int(result.m))
    if control is not None:
        extra["control_m"] = int(control.m)
    return Verdict(verdict.status, verdict.reason, {**verdict.numbers, **extra}) if extra else verdict


def ci_verdict(result: Any, **_: Any) -> Verdict:
    """Test A: ``fail`` when the intervals of R_S and R_g are disjoint at confidence 1 - 2 delta."""
    numbers = {"pvalue": float(result.pvalue), "confidence_level": float(result.confidence_level),
               "statistic": float(result.statistic), "reject": bool(result.reject)}
    if result.reject:
        return Verdict("fail", "intervals_disjoint", numbers)
    return Verdict("pass", "intervals_overlap", numbers)


# --------------------------------------------------------------------------- a saved result against its evidence


def pairwise_contradiction(result: Any) -> str | None:
    """Where a saved Test B disagrees with its own evidence (T, s2_T, m, U, delta), else ``None``.

    The p-value is recomputed (Werpachowski et al. 2019, Sec. 3, the
    Bernstein p-value), and so are the bound B(m, s2_T, delta, U) and the
    decision |T| > B: an edited ``reject`` or ``pvalue`` is caught.
    """
    from fitaudit.results import first_mismatch, mismatch
    from fitaudit.stats import bernstein_pvalue, empirical_bernstein_bound

    bound = empirical_bernstein_bound(int(result.m), float(result.variance), float(result.delta), float(result.U))
    return first_mismatch(
        mismatch("pvalue", result.pvalue, bernstein_pvalue(result.statistic, result.variance, result.m, result.U),
                 tolerance=1e-6),
        mismatch("bound", result.bound, bound, tolerance=1e-6),
        mismatch("reject", bool(result.reject), bool(abs(result.statistic) > bound)),
        mismatch("statistic", result.statistic, result.risk_adversarial - result.risk_plain, tolerance=1e-6),
    )


def _same_test(result: Any, pairwise: Any) -> str | None:
    from fitaudit.results import first_mismatch, mismatch

    return first_mismatch(*(mismatch(name, getattr(result, name), getattr(pairwise, f"{name}"))
                            for name in ("statistic", "pvalue", "reject", "delta", "U", "m")))


def overfit_contradiction(result: Any) -> str | None:
    """A one-model test's decision is its pairwise test's (checked on its own), and its risks are too."""
    from fitaudit.results import first_mismatch, mismatch

    return first_mismatch(_same_test(result, result.pairwise),
                          mismatch("risk_plain", result.risk_plain, result.pairwise.risk_plain),
                          mismatch("risk_adversarial", result.risk_adversarial, result.pairwise.risk_adversarial))


def nmodel_contradiction(result: Any) -> str | None:
    """The N-model test's decision is its pairwise test's on the Tbar_i (checked on its own)."""
    from fitaudit.results import first_mismatch, mismatch

    return first_mismatch(_same_test(result, result.pairwise), mismatch("n_models", result.n_models,
                                                                          len(result.per_model)))


def ci_pvalue(statistic: float, variance_plain: float, variance_adversarial: float, m: int) -> float:
    """Test A's p-value: twice the Bernstein p-value of ``R_g - R_S`` with variance ``(s_S + s_g)^2``, range 2.

    The closed form derived in :func:`fitaudit.overfit.independence.ci_test`
    (capped at 1), shared by the test and by the check of a saved result
    (:func:`ci_contradiction`).
    """
    from fitaudit.stats import bernstein_pvalue

    joint_s2 = (math.sqrt(variance_plain) + math.sqrt(variance_adversarial)) ** 2
    return min(1.0, 2.0 * bernstein_pvalue(statistic, joint_s2, m, 2.0))


def ci_contradiction(result: Any) -> str | None:
    """Test A's decision is whether its two saved intervals are disjoint, its p-value their closed form."""
    from fitaudit.results import first_mismatch, mismatch

    statistic = result.risk_adversarial - result.risk_plain
    pvalue = ci_pvalue(statistic, result.variance_plain, result.variance_adversarial, int(result.m))
    return first_mismatch(
        mismatch("reject", bool(result.reject), bool(result.ci_plain.disjoint(result.ci_adversarial))),
        mismatch("pvalue", result.pvalue, pvalue, tolerance=1e-6),
        mismatch("statistic", result.statistic, statistic, tolerance=1e-6),
        mismatch("confidence_level", result.confidence_level, 1.0 - 2.0 * result.delta),
    )


def command_contradiction(result: Any) -> str | None:
    """``fitaudit overfit``'s headline p-value and decision are those of the test it ran."""
    from fitaudit.results import first_mismatch, mismatch

    return first_mismatch(mismatch("pvalue", result.pvalue, result.test.pvalue),
                          mismatch("reject", bool(result.reject), bool(result.test.reject)))
