"""Argument checks: accepted values come back converted, bad ones name the argument."""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit import FitauditError, InputError, MissingDependencyError
from fitaudit._optional import import_optional
from fitaudit._validation import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_labels,
    check_same_length,
)


def test_accepted_values():
    assert check_int(np.int64(3), "k", minimum=1) == 3 and type(check_int(np.int64(3), "k")) is int
    assert check_float(1, "eps", low=0.0, low_inclusive=False) == 1.0
    assert check_choice("a", "mode", ["a", "b"]) == "a"
    array = check_array([[1, 2], [3, 4]], "x", ndim=2)
    assert array.dtype == np.float64 and array.shape == (2, 2)
    np.testing.assert_array_equal(check_labels([0.0, 2.0], "y", n_classes=3), [0, 2])
    assert check_same_length(a=np.zeros(3), b=[1, 2, 3]) == 3


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: check_int(0, "eps", minimum=1), "`eps` must be a positive integer; got 0."),
        (lambda: check_int(True, "k"), "`k` must be an integer; got True."),
        (lambda: check_int(2.0, "k"), "`k` must be an integer; got 2.0."),
        (lambda: check_int(-1, "k", minimum=0), "`k` must be an integer >= 0; got -1."),
        (lambda: check_int(11, "k", maximum=10), "`k` must be an integer <= 10; got 11."),
        (lambda: check_float("x", "alpha"), "`alpha` must be a real number; got 'x'."),
        (lambda: check_float(float("nan"), "alpha"), "`alpha` must be finite; got nan."),
        (lambda: check_float(0.0, "alpha", low=0.0, high=1.0, low_inclusive=False),
         r"`alpha` must be in \(0, 1\]; got 0."),
        (lambda: check_float(2.0, "alpha", high=1.0), r"`alpha` must be in \(-inf, 1\]; got 2."),
        (lambda: check_float(0.0, "eps", low=0.0, low_inclusive=False), r"`eps` must be in \(0, inf\); got 0."),
        (lambda: check_float(float("inf"), "eps", low=0.0, low_inclusive=False), "`eps` must be finite; got inf."),
        (lambda: check_choice("c", "mode", ["a", "b"]), "`mode` must be one of 'a', 'b'; got 'c'."),
        (lambda: check_array([[1], [2, 3]], "x"), "`x` must be array-like; could not convert it"),
        (lambda: check_array(["a"], "x"), "`x` must hold numbers; got dtype <U1."),
        (lambda: check_array(np.zeros(3), "x", ndim=2), r"`x` must have 2 dimension\(s\); got shape \(3,\)."),
        (lambda: check_array(np.zeros((0, 2)), "x"), r"`x` must have at least 1 element\(s\); got 0."),
        (lambda: check_array([1.0, np.inf], "x"), r"`x` must be finite; it holds 1 NaN or infinite value\(s\)."),
        (lambda: check_array([0.5, 2.0], "p", value_range=(0, 1)), r"`p` must have values in \[0, 1\]; got values in \[0.5, 2\]."),
        (lambda: check_labels([], "y"), "`y` must not be empty."),
        (lambda: check_labels([[0], [1, 0]], "y"), "`y` must be array-like; could not convert it"),
        (lambda: check_labels([0, 1], "y", length=3), r"`y` must have 3 entries \(one per example\); got 2."),
        (lambda: check_same_length(x=np.zeros(3), y=np.zeros(2)),
         "arguments must have the same number of examples; `x` has 3, `y` has 2."),
    ],
)
def test_messages(call, message):
    with pytest.raises(InputError, match=message):
        call()


def test_error_hierarchy_and_optional_imports():
    assert issubclass(InputError, ValueError) and issubclass(InputError, FitauditError)
    assert issubclass(MissingDependencyError, ImportError)
    assert import_optional("numpy").__name__ == "numpy"
    with pytest.raises(MissingDependencyError, match=r"the demo needs the optional dependency `dask_nonexistent`; install it with `pip install 'fitaudit\[all\]'`"):
        import_optional("dask_nonexistent.sub", "the demo")
