"""Label perturbation for perturbed model validation (PMV).

Zhang, Barr, Guedj, Harman and Shawe-Taylor (2019), "Perturbed Model
Validation: A New Framework to Validate Model Relevance", build noisy
training sets S_r by flipping a fraction r of the labels *of each class*
(Sec. 3; user guide: docs/pmv.md#perturbed-training-sets).

Counting rule
-------------
Class c with n_c examples gets exactly ``floor(r * n_c + 0.5)`` flipped
labels (round half up), chosen uniformly without replacement. A rate that
would flip no label of some class (``r * n_c < 0.5``) is an error rather than
a silent no-op: every nominal rate is realised in every class.

Schemes (where a flipped label goes)
------------------------------------
``"next"``
    cyclic next class: the k-th class (in sorted order) goes to class
    k + 1 mod K. The scheme of the later "mutation validation" paper, and
    the default.
``"random"``
    a class drawn uniformly from the K - 1 other classes, independently for
    every flipped example.

With two classes both schemes are the paper's binary flip: r of the positive
and r of the negative labels change sign.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import as_array, check_choice, check_float
from fitaudit.random import check_random_state

#: where a flipped label goes (see the module docstring)
SCHEMES = ("next", "random")

#: the paper's noise rates r_1..r_k: 0.05, 0.10, ..., 0.50
DEFAULT_RATES: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(1, 11))


def plain_label(label: Any) -> Any:
    """A label as a plain Python value (for messages): ``np.int64(1)`` -> ``1``."""
    return label.item() if isinstance(label, np.generic) else label


def check_no_missing_labels(labels: np.ndarray, name: str = "y") -> None:
    """Raise if a label is missing (NaN or None): it would be taken for a class of its own."""
    if labels.dtype.kind in "fc":
        missing = int(np.count_nonzero(np.isnan(labels)))
    elif labels.dtype == object:
        missing = sum(1 for v in labels if v is None or (isinstance(v, (float, np.floating)) and np.isnan(v)))
    else:
        missing = 0
    if missing:
        raise InputError(
            f"`{name}` holds {missing} missing label(s) (NaN or None); every example needs a class "
            "label: drop those examples or fill in their labels first."
        )


def flip_counts(class_sizes: np.ndarray, rate: float) -> np.ndarray:
    """Number of labels flipped in each class at ``rate`` (round half up)."""
    return np.floor(rate * np.asarray(class_sizes) + 0.5).astype(np.int64)


def check_rates(rates: Any, name: str = "rates") -> np.ndarray:
    """Validate noise rates: a non-empty, duplicate-free list of numbers in (0, 0.5].

    Returns them sorted, as a float array (r = 0 is added by the callers).
    """
    if isinstance(rates, (str, bytes)):
        raise InputError(f"`{name}` must be a list of noise rates in (0, 0.5]; got the string {rates!r}.")
    if isinstance(rates, (int, float, np.number)):
        raise InputError(
            f"`{name}` must be a list of noise rates in (0, 0.5]; got a single number {rates!r}."
        )
    try:
        values = [check_float(r, name, low=0.0, high=0.5, low_inclusive=False) for r in rates]
    except TypeError as exc:
        raise InputError(
            f"`{name}` must be a list of noise rates in (0, 0.5]; got {rates!r}."
        ) from exc
    if not values:
        raise InputError(f"`{name}` must hold at least one noise rate in (0, 0.5]; got none.")
    if len(set(values)) != len(values):
        raise InputError(f"`{name}` must not repeat a rate; got {sorted(values)}.")
    return np.array(sorted(values), dtype=np.float64)


def check_class_sizes(
    classes: np.ndarray, class_sizes: np.ndarray, rates: Sequence[float], name: str = "y"
) -> None:
    """Raise if a class is too small for the smallest rate to flip one label."""
    smallest = float(min(rates))
    counts = flip_counts(class_sizes, smallest)
    if np.any(counts < 1):
        c = int(np.argmin(class_sizes))
        need = int(np.ceil(0.5 / smallest - 1e-9))
        raise InputError(
            f"`{name}`: class {plain_label(classes[c])!r} has {int(class_sizes[c])} example(s); flipping a "
            f"fraction {smallest:g} of it needs at least {need} examples per class "
            f"(counts are rounded, r * n_c >= 0.5). Use larger rates or more data."
        )


def flip_labels(
    y: Any, rate: float, *, scheme: str = "next", random_state: Any = None
) -> np.ndarray:
    """Return a copy of ``y`` with a fraction ``rate`` of each class's labels changed.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels of any type (ints, strings, ...); at least two classes.
    rate : float
        Fraction r in (0, 0.5] of every class to relabel; class c loses
        exactly ``floor(r * n_c + 0.5)`` labels.
    scheme : {"next", "random"}
        Where a relabelled example goes: the cyclic next class (sorted order)
        or a uniformly random other class. Identical for two classes.
    random_state : None, int, SeedSequence or Generator
        Chooses which examples are relabelled (and, for ``"random"``, their
        new classes). The same seed gives the same labels.

    Returns
    -------
    numpy.ndarray
        The perturbed labels, same dtype and classes as ``y``.

    References
    ----------
    Zhang, Barr, Guedj, Harman, Shawe-Taylor (2019), Perturbed Model
    Validation, Sec. 3 (label noise injected per class).
    """
    labels = as_array(y, "y")
    if labels.ndim != 1 or labels.size == 0:
        raise InputError(
            f"`y` must be a non-empty 1-d array of class labels; got shape {labels.shape}."
        )
    check_no_missing_labels(labels)
    rate = check_float(rate, "rate", low=0.0, high=0.5, low_inclusive=False)
    scheme = check_choice(scheme, "scheme", SCHEMES)
    rng = check_random_state(random_state)
    classes, codes, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    if classes.size < 2:
        raise InputError(
            f"`y` must hold at least two classes; got only one class ({plain_label(classes[0])!r})."
        )
    check_class_sizes(classes, sizes, [rate])
    new_codes = codes.copy()
    n_classes = classes.size
    for c, count in enumerate(flip_counts(sizes, rate)):
        members = np.flatnonzero(codes == c)
        chosen = rng.choice(members, size=int(count), replace=False)
        if scheme == "next":
            new_codes[chosen] = (c + 1) % n_classes
        else:
            shift = rng.integers(1, n_classes, size=chosen.size)
            new_codes[chosen] = (c + shift) % n_classes
    return classes[new_codes]
