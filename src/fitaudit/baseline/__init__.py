"""Is the model better than a baseline? (issue 48, the ``baseline`` check; docs/baseline.md)

:func:`baseline_check` compares a model's predictions with the majority
class and a reference learner's on the same scored rows (exact McNemar
tests, the accuracy difference with its exact conditional interval);
:func:`compare_with_baselines` fits the baselines on the training rows
first. The decision is :func:`fitaudit.baseline.decision.baseline_verdict`.
"""

from fitaudit.baseline.decision import MATERIAL_GAP, baseline_verdict
from fitaudit.baseline.result import (
    POWER,
    REFERENCE,
    BaselineResult,
    baseline_check,
    compare_with_baselines,
    detectable_difference,
    fit_reference,
    majority_of,
    paired_interval,
    reference_learner,
)

__all__ = ["MATERIAL_GAP", "POWER", "REFERENCE", "BaselineResult", "baseline_check", "baseline_verdict",
           "compare_with_baselines", "detectable_difference", "fit_reference", "majority_of", "paired_interval",
           "reference_learner"]
