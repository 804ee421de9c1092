"""5-fold cross-validation beside PMV's choice, on the same data.

PMV (Zhang, Barr, Guedj, Harman, Shawe-Taylor 2019, Sec. 3) chooses the
learner with the largest |k_S| without any split; its choice is not the one
a held-out score makes (on real tables it often prefers the less capable
learner: docs/pmv.md#what-a-pass-does-and-does-not-predict). When asked
(``cv_check=True`` of :func:`fitaudit.pmv.compare_estimators` and
:class:`fitaudit.pmv.PMVSearchCV`, ``--compare-cv`` of ``fitaudit pmv``),
every candidate is also scored by the mean accuracy of scikit-learn's
``cross_val_score`` with 5 stratified folds (no shuffling, the folds
GridSearchCV uses by default), so both choices and their cross-validated
accuracies are recorded side by side.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.model_selection import cross_val_score

from fitaudit._errors import InputError
from fitaudit.pmv._engine import seed_unseeded
from fitaudit.random import as_seed

#: folds of the cross-validation PMV's choice is compared with
CV_FOLDS = 5


def check_cv_check(value: Any) -> bool:
    """``cv_check`` checked: True or False (numpy's bools too)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"`cv_check` must be True or False; got {value!r}.")
    return bool(value)


def cv_accuracies(estimators: list[Any], X: Any, y: Any, *, random_state: Any, n_jobs: int | None = None,
                  fit_params: dict[str, Any] | None = None) -> np.ndarray:
    """Mean 5-fold cross-validated accuracy of each learner on ``(X, y)`` (``fit_params`` passed to every fit).

    Learners whose ``random_state`` is None are seeded from ``random_state``
    (:func:`fitaudit.pmv._engine.seed_unseeded`), so the same seed gives the
    same numbers.
    """
    seed = as_seed(random_state)
    return np.array([float(np.mean(cross_val_score(seed_unseeded(estimator, seed), X, y, cv=CV_FOLDS,
                                                   scoring="accuracy", n_jobs=n_jobs, params=fit_params)))
                     for estimator in estimators])


def cv_choice(scores: np.ndarray) -> int:
    """Index of the learner cross-validation chooses: the largest accuracy, the first on ties."""
    return int(np.argmax(np.asarray(scores, dtype=float)))
