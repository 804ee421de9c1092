"""Named scikit-learn classifiers and data sets for the ``fitaudit pmv`` command.

Every catalogue learner is built with a fixed ``random_state=0`` where it
has one (so a command gives the same numbers twice); ``--param`` overrides
any parameter. Parameter values are Python's ``None``/``True``/``False`` or
parsed with :func:`json.loads` (numbers, ``true``/``false``/``null``, lists)
and otherwise kept as strings; nothing is evaluated.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_iris,
    load_wine,
    make_circles,
    make_classification,
    make_moons,
)
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis, QuadraticDiscriminantAnalysis
from sklearn.ensemble import (
    AdaBoostClassifier,
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

from fitaudit._errors import InputError

#: name -> factory of an unfitted classifier
ESTIMATORS: dict[str, Callable[[], BaseEstimator]] = {
    "adaboost": lambda: AdaBoostClassifier(random_state=0),
    "decision_tree": lambda: DecisionTreeClassifier(random_state=0),
    "extra_trees": lambda: ExtraTreesClassifier(random_state=0),
    "gaussian_process": lambda: GaussianProcessClassifier(1.0 * RBF(1.0), random_state=0),
    "gradient_boosting": lambda: GradientBoostingClassifier(random_state=0),
    "hist_gradient_boosting": lambda: HistGradientBoostingClassifier(random_state=0),
    "knn": lambda: KNeighborsClassifier(),
    "lda": lambda: LinearDiscriminantAnalysis(),
    "logistic_regression": lambda: LogisticRegression(max_iter=1000),
    "mlp": lambda: MLPClassifier(max_iter=1000, random_state=0),
    "naive_bayes": lambda: GaussianNB(),
    "qda": lambda: QuadraticDiscriminantAnalysis(),
    "random_forest": lambda: RandomForestClassifier(random_state=0),
    "svc_linear": lambda: SVC(kernel="linear", random_state=0),
    "svc_rbf": lambda: SVC(random_state=0),
}


def linearly_separable() -> tuple[np.ndarray, np.ndarray]:
    """The "linearly separable" set of scikit-learn's classifier-comparison example."""
    X, y = make_classification(
        n_features=2, n_redundant=0, n_informative=2, random_state=1, n_clusters_per_class=1
    )
    X += 2 * np.random.RandomState(2).uniform(size=X.shape)
    return X, y


#: name -> loader of a bundled or generated data set (X, y)
DATASETS: dict[str, Callable[[], tuple[np.ndarray, np.ndarray]]] = {
    "moons": lambda: make_moons(noise=0.3, random_state=0),
    "circles": lambda: make_circles(noise=0.2, factor=0.5, random_state=1),
    "linear": linearly_separable,
    "breast_cancer": lambda: load_breast_cancer(return_X_y=True),
    "digits": lambda: load_digits(return_X_y=True),
    "iris": lambda: load_iris(return_X_y=True),
    "wine": lambda: load_wine(return_X_y=True),
}


def _lookup(name: str, table: dict[str, Any], what: str) -> Any:
    if name not in table:
        raise InputError(f"`{what}` must be one of {', '.join(sorted(table))}; got {name!r}.")
    return table[name]


def make_estimator(name: str) -> BaseEstimator:
    """A fresh catalogue classifier."""
    return _lookup(name, ESTIMATORS, "--estimator")()


def load_dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    """A catalogue data set as ``(X, y)``."""
    return _lookup(name, DATASETS, "--dataset")()


#: Python spellings of the JSON constants, accepted as parameter values
PYTHON_CONSTANTS: dict[str, Any] = {"None": None, "True": True, "False": False}


def parse_param_value(text: str) -> Any:
    """The value of a ``--param``: Python's ``None``/``True``/``False``, a JSON value
    (``3``, ``0.5``, ``null``, ``true``, ``[1, 2]``), or else the string itself.

    Nothing is evaluated: ``"__import__('os')"`` stays a string.
    """
    if text.strip() in PYTHON_CONSTANTS:
        return PYTHON_CONSTANTS[text.strip()]
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return text


def parse_params(assignments: Sequence[str], estimator: BaseEstimator, name: str) -> dict[str, Any]:
    """Parse ``key=value`` strings and check the keys against ``estimator.get_params()``."""
    valid = estimator.get_params()
    params: dict[str, Any] = {}
    for item in assignments:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(f"`--param` must look like key=value; got {item!r}.")
        if key not in valid:
            raise InputError(
                f"`--param`: {name} has no parameter {key!r}; valid: {', '.join(sorted(valid))}."
            )
        if key in params:  # the last value would win without a word
            raise InputError(f"`--param` sets {key!r} twice; give each parameter once.")
        params[key] = parse_param_value(value)
    return params
