"""Where PMV cannot tell: cross-validated accuracy of a learner that memorises its labels.

PMV (Zhang, Barr, Guedj, Harman, Shawe-Taylor 2019, Sec. 3) reads a small
|k_S| as memorising the noise. Random forests, boosting, 1-nearest-neighbour
and unbounded trees fit flipped labels by design, and some of them (boosting,
forests) are often the best learners on held-out data while others (an
unbounded tree, 1-NN) are not: PMV's slope cannot tell them apart. The paper's
own use of PMV is to choose between learners of the same data; for a
memoriser fitaudit answers the question that choice asks with the accuracy it
would take, measured without a separate split: 5-fold stratified
cross-validation on the training data, of the learner and of two baseline
learners of the same rows (the majority class, and a scaled logistic
regression where the inputs are numeric).

Each comparison is a paired exact test on the rows the two learners' out-of-
fold predictions disagree on (McNemar's test in its exact, binomial form [1]_;
``scipy.stats.binomtest``), so it uses the same rows for both. The difference
of accuracies, (losses - wins) / n, has the conditional interval
(m / n) (2 q - 1) over the Clopper-Pearson interval of q = losses / m among
the m discordant rows (Fagerland, Lydersen and Laake [2]_, the conditional
method).

References
----------
.. [1] Q. McNemar, "Note on the sampling error of the difference between
       correlated proportions or percentages", Psychometrika 12, 1947.
.. [2] M. W. Fagerland, S. Lydersen, P. Laake, "The McNemar test for binary
       matched-pairs data: mid-p and asymptotic are better than exact
       conditional", BMC Medical Research Methodology 13:91, 2013.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fitaudit.pmv._engine import seed_unseeded
from fitaudit.random import as_seed
from fitaudit.results import Result
from fitaudit.stats.paired import one_sided_pvalue, paired_interval

#: folds of the cross-validation (stratified, not shuffled: the folds GridSearchCV uses by default)
FOLDS = 5

#: the reference learner's name in words
REFERENCE = "scaled logistic regression"


@dataclasses.dataclass(repr=False)
class HeldOutCheck(Result):
    """Out-of-fold accuracy of a learner against the majority class and a reference learner.

    Attributes
    ----------
    folds : int
        Cross-validation folds.
    n : int
        Rows scored (every training row, once, out of fold).
    accuracy : float
        The learner's out-of-fold accuracy.
    majority_accuracy : float
        The majority-class learner's (fitted on each fold's training part).
    wins_vs_majority, losses_vs_majority : int
        Rows the learner gets right and the majority learner wrong, and the reverse.
    reference : str or None
        The reference learner (:data:`REFERENCE`), or None where the inputs are not numeric.
    reference_accuracy : float
        Its out-of-fold accuracy (NaN without one).
    wins_vs_reference, losses_vs_reference : int
        Rows the learner gets right and the reference wrong, and the reverse.
    """

    folds: int
    n: int
    accuracy: float
    majority_accuracy: float
    wins_vs_majority: int
    losses_vs_majority: int
    reference: str | None
    reference_accuracy: float
    wins_vs_reference: int
    losses_vs_reference: int

    def pvalue_above_majority(self) -> float:
        """One-sided exact McNemar p-value that the learner is more accurate than the majority class."""
        return one_sided_pvalue(self.wins_vs_majority, self.losses_vs_majority)

    def pvalue_below_reference(self) -> float:
        """One-sided exact McNemar p-value that the learner is less accurate than the reference (1 without one)."""
        if self.reference is None:
            return 1.0
        return one_sided_pvalue(self.losses_vs_reference, self.wins_vs_reference)

    def gap_interval(self, confidence_level: float = 0.95) -> tuple[float, float]:
        """Interval on (reference accuracy - learner accuracy), conditional on the discordant rows.

        Examples
        --------
        >>> check = HeldOutCheck(5, 100, 0.9, 0.6, 35, 5, REFERENCE, 0.9, 4, 4)
        >>> low, high = check.gap_interval()
        >>> round(low, 3) < 0 < round(high, 3)
        True
        """
        if self.reference is None:
            return (math.nan, math.nan)
        return paired_interval(self.losses_vs_reference, self.wins_vs_reference, self.n, confidence_level)


def numeric_inputs(X: Any) -> bool:
    """Whether ``X`` can be fed to the reference learner as it is (a numeric array or all-numeric frame)."""
    try:
        values = np.asarray(X)
    except Exception:  # a ragged or exotic container
        return False
    return values.ndim == 2 and np.issubdtype(values.dtype, np.number)


def heldout_check(estimator: Any, X: Any, y: Any, *, random_state: Any = 0, n_jobs: int | None = None,
                  fit_params: dict[str, Any] | None = None) -> HeldOutCheck:
    """Cross-validate ``estimator`` beside the majority class and a scaled logistic regression.

    Costs ``3 * FOLDS`` fits (``2 * FOLDS`` with non-numeric inputs).

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
    folds = StratifiedKFold(FOLDS)

    def correct(learner: Any, params: dict[str, Any] | None = None) -> np.ndarray:
        predicted = cross_val_predict(seed_unseeded(learner, seed), X, labels, cv=folds, n_jobs=n_jobs,
                                      params=params)
        return np.asarray(predicted) == labels

    own = correct(estimator, fit_params)
    majority = correct(DummyClassifier(strategy="most_frequent"))
    reference = None
    if numeric_inputs(X):
        reference = correct(clone(make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))))
    return HeldOutCheck(
        folds=FOLDS, n=int(labels.size), accuracy=float(own.mean()), majority_accuracy=float(majority.mean()),
        wins_vs_majority=int(np.sum(own & ~majority)), losses_vs_majority=int(np.sum(~own & majority)),
        reference=None if reference is None else REFERENCE,
        reference_accuracy=math.nan if reference is None else float(reference.mean()),
        wins_vs_reference=0 if reference is None else int(np.sum(own & ~reference)),
        losses_vs_reference=0 if reference is None else int(np.sum(~own & reference)),
    )


__all__ = ["FOLDS", "REFERENCE", "HeldOutCheck", "heldout_check"]
