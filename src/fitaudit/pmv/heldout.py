"""Where PMV cannot tell: cross-validated accuracy of a learner that memorises its labels.

PMV (Zhang, Barr, Guedj, Harman, Shawe-Taylor 2019, Sec. 3) reads a small
|k_S| as memorising the noise. Random forests, boosting, 1-nearest-neighbour
and unbounded trees fit flipped labels by design, and some of them (boosting,
forests) are often the best learners on held-out data while others (an
unbounded tree, 1-NN) are not: PMV's slope cannot tell them apart. The paper's
own use of PMV is to choose between learners of the same data; for a
memoriser fitaudit answers the question that choice asks with the accuracy it
would take, measured without a separate split: :data:`REPEATS` repetitions of
:data:`FOLDS`-fold stratified cross-validation on the training data, of the
learner and of two baseline learners on the same folds (the majority class,
and a scaled logistic regression where the inputs are numeric).

Each comparison is the corrected resampled t-test of Nadeau and Bengio
(2003; :mod:`fitaudit.stats.resampled`) on the per-fold accuracy
differences, and its interval: it counts the variation of the training
sample, which a held-out comparison of two learners also carries. (An exact
McNemar test on the pooled out-of-fold predictions, used here before, asks
only whether these fitted models differ on these rows, and read HistGradient-
Boosting's 3-point cross-validated losses on 124-400 rows as shown where the
held-out split ranked it first: ``benchmarks/validity/pmv_heldout.py``.)

References
----------
.. [1] C. Nadeau and Y. Bengio, "Inference for the generalization error",
       Machine Learning 52, 239-281, 2003.
.. [2] R. R. Bouckaert and E. Frank, "Evaluating the replicability of
       significance tests for comparing learning algorithms", PAKDD 2004.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np
from sklearn.base import clone
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import RepeatedStratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fitaudit.pmv._engine import seed_unseeded
from fitaudit.random import as_seed
from fitaudit.results import Result
from fitaudit.stats.resampled import corrected_interval, corrected_pvalue

#: folds of each cross-validation (stratified, shuffled)
FOLDS = 5

#: repetitions of the cross-validation (each with other folds): 15 splits, so that the corrected t-test has 14
#: degrees of freedom and its variance factor 1 / 15 + 1 / 4 is within 30% of the 1 / 4 no repetition removes
REPEATS = 3

#: the reference learner's name in words
REFERENCE = "scaled logistic regression"


@dataclasses.dataclass(repr=False)
class HeldOutCheck(Result):
    """Per-fold accuracies of a learner, the majority class and a reference learner on the same folds.

    Attributes
    ----------
    folds, repeats : int
        Cross-validation folds, and how many times the cross-validation was repeated with other folds.
    n : int
        Training rows (each scored once per repetition, out of fold).
    test_train_ratio : float
        Mean test part over mean training part of the splits (n_test / n_train of the corrected t-test).
    split_accuracy : ndarray
        The learner's accuracy on each split's test part (``folds * repeats`` values).
    split_majority_accuracy : ndarray
        The majority-class learner's (fitted on each split's training part), on the same parts.
    reference : str or None
        The reference learner (:data:`REFERENCE`), or None where the inputs are not numeric.
    split_reference_accuracy : ndarray
        Its accuracy on the same parts (empty without one).
    """

    ALIGNED: ClassVar[tuple[tuple[str, ...], ...]] = (("split_accuracy", "split_majority_accuracy"),)

    folds: int
    repeats: int
    n: int
    test_train_ratio: float
    split_accuracy: np.ndarray
    split_majority_accuracy: np.ndarray
    reference: str | None
    split_reference_accuracy: np.ndarray

    @property
    def accuracy(self) -> float:
        """The learner's mean cross-validated accuracy."""
        return float(np.mean(self.split_accuracy))

    @property
    def majority_accuracy(self) -> float:
        """The majority-class learner's."""
        return float(np.mean(self.split_majority_accuracy))

    @property
    def reference_accuracy(self) -> float:
        """The reference learner's (NaN without one)."""
        return float(np.mean(self.split_reference_accuracy)) if self.reference is not None else math.nan

    def _gain(self) -> np.ndarray:
        return np.asarray(self.split_accuracy, float) - np.asarray(self.split_majority_accuracy, float)

    def _gap(self) -> np.ndarray:
        return np.asarray(self.split_reference_accuracy, float) - np.asarray(self.split_accuracy, float)

    def pvalue_above_majority(self) -> float:
        """One-sided corrected resampled t p-value that the learner is more accurate than the majority class."""
        return corrected_pvalue(self._gain(), self.test_train_ratio)

    def pvalue_below_reference(self) -> float:
        """One-sided corrected resampled t p-value that the learner is less accurate than the reference (1 without
        one)."""
        return 1.0 if self.reference is None else corrected_pvalue(self._gap(), self.test_train_ratio)

    def majority_interval(self, confidence_level: float = 0.95) -> tuple[float, float]:
        """Interval on (learner accuracy - majority-class accuracy), the corrected resampled t's."""
        return corrected_interval(self._gain(), self.test_train_ratio, confidence_level)

    def gap_interval(self, confidence_level: float = 0.95) -> tuple[float, float]:
        """Interval on (reference accuracy - learner accuracy), the corrected resampled t's (NaN without one).

        Examples
        --------
        >>> import numpy as np
        >>> check = HeldOutCheck(5, 1, 100, 0.25, np.array([0.9, 0.85, 0.9, 0.95, 0.9]), np.full(5, 0.6),
        ...                      REFERENCE, np.array([0.9, 0.9, 0.85, 0.95, 0.9]))
        >>> low, high = check.gap_interval()
        >>> round(low, 3) < 0 < round(high, 3)
        True
        """
        if self.reference is None:
            return (math.nan, math.nan)
        return corrected_interval(self._gap(), self.test_train_ratio, confidence_level)


def numeric_inputs(X: Any) -> bool:
    """Whether ``X`` can be fed to the reference learner as it is (a numeric array or all-numeric frame)."""
    try:
        values = np.asarray(X)
    except Exception:  # a ragged or exotic container
        return False
    return values.ndim == 2 and np.issubdtype(values.dtype, np.number)


def heldout_check(estimator: Any, X: Any, y: Any, *, random_state: Any = 0, n_jobs: int | None = None,
                  fit_params: dict[str, Any] | None = None) -> HeldOutCheck:
    """Cross-validate ``estimator`` beside the majority class and a scaled logistic regression, on the same folds.

    Costs ``3 * FOLDS * REPEATS`` fits (``2 * FOLDS * REPEATS`` with non-numeric inputs; the majority class's are
    trivial).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> check = heldout_check(RandomForestClassifier(n_estimators=20), X, y)
    >>> check.pvalue_above_majority() < 0.05
    True
    """
    labels = np.asarray(y)
    seed = as_seed(random_state)
    splits = RepeatedStratifiedKFold(n_splits=FOLDS, n_repeats=REPEATS, random_state=seed)
    parts = [(len(train), len(test)) for train, test in splits.split(np.zeros(labels.size), labels)]

    def scores(learner: Any, params: dict[str, Any] | None = None) -> np.ndarray:
        return np.asarray(cross_val_score(seed_unseeded(learner, seed), X, labels, cv=splits, scoring="accuracy",
                                          n_jobs=n_jobs, params=params), dtype=float)

    reference = None
    if numeric_inputs(X):
        reference = scores(clone(make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))))
    return HeldOutCheck(
        folds=FOLDS, repeats=REPEATS, n=int(labels.size),
        test_train_ratio=float(np.mean([test for _, test in parts]) / np.mean([train for train, _ in parts])),
        split_accuracy=scores(estimator, fit_params),
        split_majority_accuracy=scores(DummyClassifier(strategy="most_frequent")),
        reference=None if reference is None else REFERENCE,
        split_reference_accuracy=np.array([]) if reference is None else reference,
    )


__all__ = ["FOLDS", "REFERENCE", "REPEATS", "HeldOutCheck", "heldout_check"]
