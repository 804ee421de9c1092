"""Two learners compared by repeated cross-validation: the corrected resampled t-test (Nadeau and Bengio 2003).

Over J train/test splits of the same rows (here r repetitions of k-fold
cross-validation, J = r k), let d_j be the difference of the two learners'
accuracies on the j-th test part. The d_j are not independent: their
training sets overlap, so the plain t-test's variance s^2 / J is too small
and its type I error too large (Dietterich 1998). Nadeau and Bengio (2003,
Sec. 4, the "corrected resampled t") replace it by

    (1 / J + n_test / n_train) s^2,

with s^2 the sample variance of the d_j, and refer
t = mean(d) / sqrt((1 / J + n_test / n_train) s^2) to Student's t with
J - 1 degrees of freedom; Bouckaert and Frank (2004) found it near its
level for repeated k-fold cross-validation. The question it answers is the
one a held-out comparison asks: whether the two learners, trained on samples
of this size from this distribution, differ in expected accuracy (the
training sample's variation included), not only whether the fitted models
differ on these rows (the exact McNemar test of :mod:`fitaudit.stats.paired`).

References
----------
.. [1] C. Nadeau and Y. Bengio, "Inference for the generalization error",
       Machine Learning 52, 239-281, 2003.
.. [2] R. R. Bouckaert and E. Frank, "Evaluating the replicability of
       significance tests for comparing learning algorithms", PAKDD 2004.
.. [3] T. G. Dietterich, "Approximate statistical tests for comparing
       supervised classification learning algorithms", Neural Computation
       10, 1895-1923, 1998.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import t as student_t


def corrected_standard_error(differences: Any, test_train_ratio: float) -> float:
    """sqrt((1 / J + n_test / n_train) s^2) of J split differences (Nadeau and Bengio 2003, Sec. 4).

    Examples
    --------
    >>> round(corrected_standard_error([0.1, 0.0, 0.05, 0.05], 0.25), 4)
    0.0289
    """
    d = np.asarray(differences, dtype=float)
    if d.ndim != 1 or d.size < 2:
        raise ValueError(f"need at least two split differences; got {d.size}")
    return math.sqrt((1 / d.size + test_train_ratio) * float(np.var(d, ddof=1)))


def corrected_interval(differences: Any, test_train_ratio: float,
                       confidence_level: float = 0.95) -> tuple[float, float]:
    """Two-sided interval on the expected difference: mean(d) -/+ t_{J-1} times the corrected standard error.

    Its ends are the one-sided tests at (1 - ``confidence_level``) / 2: the
    lower end is above a value x exactly when the test of "difference <= x"
    rejects at that level. With every d_j equal the interval is that value.

    Examples
    --------
    >>> low, high = corrected_interval([0.1, 0.0, 0.05, 0.05], 0.25)
    >>> round(low, 3), round(high, 3)
    (-0.042, 0.142)
    """
    d = np.asarray(differences, dtype=float)
    half = student_t.ppf(0.5 + confidence_level / 2, d.size - 1) * corrected_standard_error(d, test_train_ratio)
    return (float(d.mean() - half), float(d.mean() + half))


def corrected_pvalue(differences: Any, test_train_ratio: float) -> float:
    """One-sided p-value that the expected difference is above 0 (the corrected resampled t, J - 1 df).

    1 when every d_j is 0 (no evidence either way), 0 when every d_j is the
    same positive value.

    Examples
    --------
    >>> round(corrected_pvalue([0.1, 0.0, 0.05, 0.05], 0.25), 3)
    0.091
    """
    d = np.asarray(differences, dtype=float)
    error = corrected_standard_error(d, test_train_ratio)
    if error == 0:
        return 1.0 if not d.mean() > 0 else 0.0
    return float(student_t.sf(d.mean() / error, d.size - 1))


__all__ = ["corrected_interval", "corrected_pvalue", "corrected_standard_error"]
