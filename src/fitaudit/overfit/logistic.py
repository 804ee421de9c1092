"""Linear classifiers trained by logistic regression with RMSProp.

The model of the synthetic experiment of Werpachowski, Gyorgy, Szepesvari
(NeurIPS 2019), Sec. 4 and Appendix A: f(x) = sign(w.x + b) trained on the
logistic loss with RMSProp, batch size 100, learning rate 0.01, 50,000 steps;
in the dependent case with the penalty 1e4 * w_1^2 added to the loss.

Choices the paper leaves open (made here, explicitly): RMSProp with Keras'
defaults (decay rho = 0.9, epsilon = 1e-7, no momentum); weights initialised
Glorot-uniform as a Keras ``Dense(1)`` layer (U(-a, a), a = sqrt(6 / (d + 1))),
bias 0; mini-batches from a fresh random permutation every epoch (the last
incomplete batch of an epoch is dropped); float32 arithmetic.

Many models are trained at once (one column each): every step computes the
scores of all n training points for all models with one matrix product and
masks the points outside each model's batch, which is much faster in numpy
than gathering per-model batches. The matrices are small, so BLAS runs on
one thread during training (faster than several threads, and much faster on a
loaded machine); parallelism comes from running several trainings at once.
The models differ only through their seeds (initialisation and batch order).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special
from threadpoolctl import threadpool_limits

from fitaudit._errors import InputError
from fitaudit._validation import check_array, check_float, check_int, check_labels
from fitaudit.random import RandomState, check_random_state


@dataclasses.dataclass
class LinearModel:
    """f(x) = 1[w.x + b > 0]: a binary linear classifier.

    It has ``n_classes``, ``logits``, ``predict_proba`` and ``predict``, so it
    is a classifier like any other (:class:`fitaudit.models.ClassifierProtocol`;
    :func:`fitaudit.models.as_classifier` returns it unchanged).

    Attributes
    ----------
    coef_ : ndarray, shape (d,)
        w.
    intercept_ : float
        b.
    """

    coef_: np.ndarray
    intercept_: float
    n_classes: int = 2

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        """w.x + b for each row of x, shape (n, d)."""
        d = int(np.shape(self.coef_)[0])
        points = check_array(x, "x", ndim=2, min_len=0)
        if points.shape[1] != d:
            raise InputError(
                f"`x` must have {d} features per example for this LinearModel, shape (n, {d}); "
                f"got shape {points.shape}."
            )
        return points @ np.asarray(self.coef_, dtype=np.float64) + self.intercept_

    def logits(self, x: np.ndarray) -> np.ndarray:
        """Class scores (0, w.x + b): their softmax is the logistic model's probabilities."""
        score = self.decision_function(x)
        return np.stack([np.zeros_like(score), score], axis=1)

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """(1 - sigmoid(w.x + b), sigmoid(w.x + b))."""
        p = special.expit(self.decision_function(x))
        return np.stack([1.0 - p, p], axis=1)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Labels in {0, 1}."""
        return (self.decision_function(x) > 0).astype(np.int64)


def train_logistic_models(
    x: np.ndarray,
    y: np.ndarray,
    *,
    n_models: int = 1,
    steps: int = 50_000,
    batch_size: int = 100,
    learning_rate: float = 0.01,
    first_coordinate_penalty: float = 0.0,
    random_state: RandomState = None,
) -> list[LinearModel]:
    """Train ``n_models`` logistic-regression models on (x, y) with RMSProp.

    The loss of each model is the mean logistic loss over a batch plus
    ``first_coordinate_penalty * w_1^2`` (the paper's dependent case uses 1e4,
    so that the model cannot use the informative coordinate).

    Parameters
    ----------
    x : array of shape (n, d)
    y : array of shape (n,)
        Labels in {0, 1}.
    n_models : int
        Models trained side by side, each with its own initialisation and
        batch order drawn from ``random_state``.
    steps : int
        RMSProp steps (paper: 50,000).
    batch_size : int
        Paper: 100; at most n.
    learning_rate : float
        Paper: 0.01.
    first_coordinate_penalty : float
        Coefficient of w_1^2 in the loss.
    random_state : int, Generator or None

    Returns
    -------
    list of LinearModel
    """
    features = check_array(x, "x", ndim=2, min_len=2)
    labels = check_labels(y, "y", n_classes=2, length=len(features))
    n_models = check_int(n_models, "n_models", minimum=1)
    steps = check_int(steps, "steps", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if batch_size > len(features):
        raise InputError(
            f"`batch_size` must be at most the number of training points {len(features)}; "
            f"got {batch_size}."
        )
    learning_rate = check_float(learning_rate, "learning_rate", low=0.0, low_inclusive=False)
    penalty = check_float(first_coordinate_penalty, "first_coordinate_penalty", low=0.0)
    rng = check_random_state(random_state)

    n, d = features.shape
    data = features.astype(np.float32)
    target = labels.astype(np.float32)[:, None]
    limit = math.sqrt(6.0 / (d + 1))
    weights = rng.uniform(-limit, limit, size=(d, n_models)).astype(np.float32)
    bias = np.zeros(n_models, dtype=np.float32)
    sq_weights = np.zeros_like(weights)
    sq_bias = np.zeros_like(bias)
    rho, eps = np.float32(0.9), np.float32(1e-7)
    lr = np.float32(learning_rate)
    batches_per_epoch = n // batch_size
    batch_of_point = np.empty((n, n_models), dtype=np.int64)
    with threadpool_limits(limits=1, user_api="blas"):
        for step in range(steps):
            position = step % batches_per_epoch
            if position == 0:  # new epoch: a fresh permutation for every model
                order = np.argsort(rng.random((n, n_models)), axis=0)
                batch_of_point[order, np.arange(n_models)] = np.arange(n)[:, None] // batch_size
            in_batch = (batch_of_point == position).astype(np.float32)
            residual = (special.expit(data @ weights + bias) - target) * in_batch / batch_size
            grad_weights = data.T @ residual
            grad_bias = residual.sum(axis=0)
            if penalty:
                grad_weights[0] += np.float32(2.0 * penalty) * weights[0]
            sq_weights = rho * sq_weights + (1 - rho) * grad_weights**2
            sq_bias = rho * sq_bias + (1 - rho) * grad_bias**2
            weights -= lr * grad_weights / (np.sqrt(sq_weights) + eps)
            bias -= lr * grad_bias / (np.sqrt(sq_bias) + eps)
    return [
        LinearModel(coef_=weights[:, k].astype(np.float64), intercept_=float(bias[k]))
        for k in range(n_models)
    ]
