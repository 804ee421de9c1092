"""What the overfitting test decides from its result (the :class:`~fitaudit.verdict.Verdict` contract).

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019): a p-value of the pairwise
test (Test B), or of the N-model test (Test C), below the level ``delta``
rejects the model's independence of the scored data. The rejection means
something only where the test's assumptions hold; this module decides, in
order:

1. ``inconclusive`` (``g3_violated``) when the (G3) check on the scored
   images (:mod:`fitaudit.overfit.g3`) found that shifted crops are not
   distributed like the centre crops: the importance weights are wrong and
   honest test sets are rejected;
2. ``inconclusive`` (``accuracy_at_chance``) when the model is no better
   than chance on the scored data (Cohen's kappa <= 0,
   :func:`fitaudit.models.labels.chance_check`, the rule every command
   applies): a wrong class order, pipeline or labels, not a model to test;
3. on the training data (``role="train"``): ``info`` (rejection there is
   expected and shows the test's power);
4. otherwise ``fail`` (``pvalue_below_level``) or ``pass``
   (``pvalue_at_or_above_level``).
"""

from __future__ import annotations

from typing import Any

from fitaudit.verdict import Verdict

#: roles of the scored data: the data the model is scored on, or its training data
ROLES = ("test", "train")


def overfit_verdict(result: Any, *, role: str = "test", **_: Any) -> Verdict:
    """The verdict of an overfitting test result (one model or the N-model test).

    Parameters
    ----------
    result : OverfitTestResult, NModelTestResult or PairwiseTestResult
        Reads ``pvalue``, ``delta``, ``reject``, ``statistic`` and, where
        present, ``g3`` (:class:`~fitaudit.overfit.g3.G3Check`) and
        ``chance`` (:class:`~fitaudit.models.labels.ChanceCheck`).
    role : {"test", "train"}
        What the data are to the model.
    """
    numbers: dict[str, Any] = {"pvalue": result.pvalue, "level": result.delta, "statistic": result.statistic}
    g3 = getattr(result, "g3", None)
    if g3 is not None:
        numbers |= {"g3_accuracy": g3.accuracy, "g3_pvalue": g3.pvalue, "g3_threshold": g3.threshold}
        if g3.violated:
            return Verdict("inconclusive", "g3_violated", numbers)
    chance = getattr(result, "chance", None)
    if chance is not None:
        numbers |= {"accuracy": chance.accuracy, "chance": chance.chance}
        if chance.at_or_below:
            return Verdict("inconclusive", "accuracy_at_chance", numbers)
    if role == "train":
        return Verdict("info", "dependent_on_training_data" if result.reject else "no_dependence_on_training_data",
                       numbers)
    if result.reject:
        return Verdict("fail", "pvalue_below_level", numbers)
    return Verdict("pass", "pvalue_at_or_above_level", numbers)


def ci_verdict(result: Any, **_: Any) -> Verdict:
    """Test A: ``fail`` when the intervals of R_S and R_g are disjoint at confidence 1 - 2 delta."""
    numbers = {"pvalue": float(result.pvalue), "confidence_level": float(result.confidence_level),
               "statistic": float(result.statistic), "reject": bool(result.reject)}
    if result.reject:
        return Verdict("fail", "intervals_disjoint", numbers)
    return Verdict("pass", "intervals_overlap", numbers)
