"""Risk estimators of Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 2.

* plain risk                      R_S = (1/m) sum_i L(f, X_i)
* importance-weighted adversarial R_g = (1/m) sum_i L(f, g(X_i)) h_g(g(X_i))
* plain (unweighted) adversarial  (1/m) sum_i L(f, g(X_i)), biased upwards;
  reported for information only.

R_S and R_g are both unbiased for the risk R(f) when f is independent of the
sample, and Var(R_g) <= Var(R_S).
"""

from __future__ import annotations

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_array, check_same_length


def check_zero_one_loss(loss: object, name: str = "loss") -> np.ndarray:
    """Validate a 1-d vector of zero-one losses (at least 2 examples)."""
    array = check_array(loss, name, ndim=1, min_len=2)
    if not np.all((array == 0) | (array == 1)):
        bad = array[(array != 0) & (array != 1)][0]
        raise InputError(f"`{name}` must hold zero-one losses (0 or 1); got the value {bad:g}.")
    return array


def check_weighted_loss(values: object, name: str = "weighted_adv_loss") -> np.ndarray:
    """Validate L(f, g(X_i)) h_g(g(X_i)) terms: 1-d, finite, in [0, 1]."""
    return check_array(values, name, ndim=1, min_len=2, value_range=(0.0, 1.0))


def plain_risk(loss: object) -> float:
    """R_S = (1/m) sum_i L(f, X_i), the error rate on the sample."""
    return float(np.mean(check_zero_one_loss(loss)))


def adversarial_risk(adv_loss: object, weight: object | None = None) -> float:
    """Adversarial risk estimate (1/m) sum_i L(f, g(X_i)) [h_g(g(X_i))].

    Parameters
    ----------
    adv_loss : array of shape (m,)
        L(f, g(X_i)) in {0, 1}.
    weight : array of shape (m,), optional
        h_g(g(X_i)) in [0, 1]. With it, the importance-weighted estimate R_g,
        unbiased for R(f) under independence (Werpachowski et al. 2019,
        Sec. 2); without it, the plain adversarial error rate, which is biased
        upwards and must not be used for testing.
    """
    losses = check_zero_one_loss(adv_loss, "adv_loss")
    if weight is None:
        return float(np.mean(losses))
    weights = check_array(weight, "weight", ndim=1, min_len=2, value_range=(0.0, 1.0))
    check_same_length(adv_loss=losses, weight=weights)
    return float(np.mean(losses * weights))
