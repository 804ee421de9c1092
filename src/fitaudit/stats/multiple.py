"""The false-discovery rate of a family of tests: Benjamini and Hochberg's step-up procedure.

Benjamini and Hochberg (J. R. Statist. Soc. B 57, 1995) order the m
p-values, ``p_(1) <= ... <= p_(m)``, and reject the k smallest for the largest
k with ``p_(k) <= k q / m``; the expected share of true null hypotheses among
the rejected ones is then at most ``q`` for independent tests, and for tests
that are positively dependent (PRDS: Benjamini and Yekutieli, Ann. Statist.
29, 2001), such as one-sided tests of overlapping slices of the same rows.
The adjusted p-value (q-value) of a test is the smallest ``q`` at which it
is rejected, ``min over j >= i of m p_(j) / j``, capped at 1: a test is
rejected at ``q`` exactly when its adjusted p-value is at most ``q``.
"""

from __future__ import annotations

import numpy as np

from fitaudit._errors import InputError


def benjamini_hochberg(pvalues: np.ndarray, m: int | None = None) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values of ``pvalues`` (any shape), in their order.

    ``m``: the size of the family when it holds hypotheses that were not
    tested (at least ``pvalues.size``): they count as p-values of 1, never
    rejected. Replacing a p-value by a larger one only removes rejections
    (the procedure is monotone), so the false-discovery rate of the whole
    family stays controlled whatever chose the tests that were made.

    Examples
    --------
    >>> benjamini_hochberg(np.array([0.01, 0.04, 0.03, 0.20])).round(3).tolist()
    [0.04, 0.053, 0.053, 0.2]
    >>> benjamini_hochberg(np.array([0.01, 0.04]), m=4).round(3).tolist()
    [0.04, 0.08]
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.size and (np.isnan(p).any() or p.min() < 0 or p.max() > 1):
        raise InputError("`pvalues` must be numbers in [0, 1].")
    flat = p.ravel()
    if m is not None and m < flat.size:
        raise InputError(f"`m` ({m}) must be at least the number of p-values ({flat.size}).")
    m = flat.size if m is None else int(m)
    order = np.argsort(flat, kind="stable")
    scaled = flat[order] * m / np.arange(1, flat.size + 1)
    adjusted = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    out = np.empty(flat.size, dtype=np.float64)
    out[order] = adjusted
    return out.reshape(p.shape)


__all__ = ["benjamini_hochberg"]
