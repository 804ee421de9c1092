"""Losses of an examination: how bad a classifier's answer to one query is.

Shu, Liu, Qiu, Yuille (AAAI 2020, Sec. 3; docs/examiner.md#what-is-measured) score a
query x = g(z, s) of an instance with label y by L(f(x), y) = the negative
post-softmax probability of the true class, so that maximising the loss
looks for the factors under which the classifier is least sure of the right
answer. Two alternatives are selectable:

``"true_class_probability"`` (default)
    ``-p_y(x)`` with ``p = softmax(logits)``; in [-1, 0].
``"zero_one"``
    ``1`` when the predicted class (argmax) is not ``y``, else ``0``.
``"margin"``
    ``max_{k != y} logit_k(x) - logit_y(x)``: positive exactly when the
    prediction is wrong; unbounded.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fitaudit._validation import check_choice
from fitaudit.models.base import softmax

#: the selectable losses
LOSSES: tuple[str, ...] = ("true_class_probability", "zero_one", "margin")


class Scores(NamedTuple):
    """What one batch of queries yields: the loss, the prediction, the true-class probability."""

    loss: np.ndarray
    predicted: np.ndarray
    true_class_probability: np.ndarray


def check_loss(loss: object) -> str:
    """``loss`` if it names one of :data:`LOSSES`."""
    return check_choice(loss, "loss", LOSSES)


def score_queries(logits: np.ndarray, labels: np.ndarray, loss: str) -> Scores:
    """Losses of the rows of ``logits`` ``(n, k)`` against ``labels`` ``(n,)``.

    Parameters
    ----------
    logits : ndarray, shape (n, k)
        Class scores of the classifier.
    labels : ndarray of int, shape (n,)
        The true class of every row.
    loss : str
        One of :data:`LOSSES`.

    Returns
    -------
    Scores
        float64 losses, int64 predicted classes and float64 true-class
        probabilities, each of shape ``(n,)``.
    """
    rows = np.arange(len(labels))
    proba = softmax(np.asarray(logits, dtype=np.float64))
    true_prob = proba[rows, labels]
    predicted = np.argmax(logits, axis=1).astype(np.int64)
    if loss == "true_class_probability":
        values = -true_prob
    elif loss == "zero_one":
        values = (predicted != labels).astype(np.float64)
    else:
        others = np.array(logits, dtype=np.float64)
        others[rows, labels] = -np.inf
        values = others.max(axis=1) - logits[rows, labels]
    return Scores(np.asarray(values, dtype=np.float64), predicted, true_prob)
