"""The corrected resampled t-test (Nadeau and Bengio 2003) against scipy's t-test and the formula by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import t as student_t
from scipy.stats import ttest_1samp

from fitaudit.stats.resampled import corrected_interval, corrected_pvalue, corrected_standard_error

DIFFERENCES = np.array([0.04, -0.01, 0.03, 0.06, 0.00, 0.02, 0.05, -0.02, 0.03, 0.01])


def test_without_the_correction_it_is_scipys_one_sample_t_test():
    """At n_test / n_train = 0 the variance factor is 1 / J: the plain one-sample t-test."""
    assert corrected_pvalue(DIFFERENCES, 0.0) == pytest.approx(
        ttest_1samp(DIFFERENCES, 0.0, alternative="greater").pvalue, rel=1e-12)
    low, high = corrected_interval(DIFFERENCES, 0.0, 0.9)
    scipy_low, scipy_high = ttest_1samp(DIFFERENCES, 0.0).confidence_interval(0.9)
    assert (low, high) == pytest.approx((scipy_low, scipy_high), rel=1e-12)


def test_the_correction_by_hand():
    """(1 / J + n_test / n_train) s^2 with J = 10 and 5-fold splits (n_test / n_train = 1 / 4)."""
    mean = sum(DIFFERENCES) / 10
    variance = sum((d - mean) ** 2 for d in DIFFERENCES) / 9
    error = math.sqrt((1 / 10 + 1 / 4) * variance)
    assert corrected_standard_error(DIFFERENCES, 0.25) == pytest.approx(error, rel=1e-12)
    assert corrected_pvalue(DIFFERENCES, 0.25) == pytest.approx(student_t.sf(mean / error, 9), rel=1e-12)
    low, high = corrected_interval(DIFFERENCES, 0.25, 0.95)
    assert (low, high) == pytest.approx((mean - student_t.ppf(0.975, 9) * error,
                                         mean + student_t.ppf(0.975, 9) * error), rel=1e-12)
    # the correction widens the interval and weakens the test against the plain t-test
    assert corrected_pvalue(DIFFERENCES, 0.25) > corrected_pvalue(DIFFERENCES, 0.0)


def test_interval_ends_are_the_one_sided_tests():
    """The 1 - 2a interval's lower end is above 0 exactly when the one-sided p-value is below a."""
    for shift in np.linspace(-0.03, 0.06, 19):
        d = DIFFERENCES + shift
        low, _ = corrected_interval(d, 0.25, 0.95)
        assert (low > 0) == (corrected_pvalue(d, 0.25) < 0.025)


def test_degenerate_splits():
    assert corrected_pvalue(np.zeros(15), 0.25) == 1.0 and corrected_interval(np.zeros(15), 0.25) == (0.0, 0.0)
    assert corrected_pvalue(np.full(15, 0.02), 0.25) == 0.0
    with pytest.raises(ValueError, match="at least two split differences"):
        corrected_standard_error([0.1], 0.25)
