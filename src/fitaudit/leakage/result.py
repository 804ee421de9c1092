"""The result of the leakage search (pure data)."""

from __future__ import annotations

import dataclasses

import numpy as np

from fitaudit.results import Result
from fitaudit.stats.bernstein import ConfidenceInterval
from fitaudit.stats.binomial import DEFAULT_CONFIDENCE, AccuracyResult, binomial_interval


@dataclasses.dataclass(repr=False)
class LeakageResult(Result):
    """Exact and near duplicates of training examples among the scored examples.

    Attributes
    ----------
    space : str
        Feature space of the near-duplicate search: ``"image view"``
        (small views compared up to a small shift), ``"standardised features"``
        (tabular) or ``"penultimate features"`` (a torch model's).
    n_scored, n_train : int
        Sizes of the two sets.
    threshold : float
        A scored example is a near twin of its nearest training example when
        their distance is at most this.
    quantile : float or None
        The threshold is this quantile of the distances from scored examples
        to their nearest *other* scored example (``None``: the threshold was given).
    n_calibration : int
        Scored examples whose nearest other scored example set the threshold.
    exact_scored, exact_train : ndarray of int64
        Pairs with equal decoded content (one training example per scored example).
    near_scored, near_train : ndarray of int64
        Every scored example within the threshold of its nearest training
        example, and that example (exact duplicates included, distance 0).
    near_distance : ndarray of float64
        Their distances.
    accuracy : AccuracyResult or None
        Accuracy on all scored examples (when labels and predictions were given).
    accuracy_without : AccuracyResult or None
        Accuracy on the scored examples without a near twin (``None`` when
        none is left or no predictions were given).
    contrast_floor : float or None
        The image distance's contrast floor c0, calibrated on the scored
        images (:func:`fitaudit.leakage.image_space.contrast_floor`); ``None``
        in the other spaces.
    """

    ALIGNED = (("exact_scored", "exact_train"), ("near_scored", "near_train", "near_distance"))  # one per pair

    space: str
    n_scored: int
    n_train: int
    threshold: float
    quantile: float | None
    n_calibration: int
    exact_scored: np.ndarray
    exact_train: np.ndarray
    near_scored: np.ndarray
    near_train: np.ndarray
    near_distance: np.ndarray
    accuracy: AccuracyResult | None = None
    accuracy_without: AccuracyResult | None = None
    contrast_floor: float | None = None

    @property
    def n_exact(self) -> int:
        """Scored examples with an exact duplicate in training."""
        return int(len(self.exact_scored))

    @property
    def n_near(self) -> int:
        """Scored examples with a near twin (exact duplicates included) in training."""
        return int(len(self.near_scored))

    @property
    def fraction_near(self) -> float:
        """Share of the scored examples with a near twin in training."""
        return self.n_near / self.n_scored

    def confidence_interval(self, confidence_level: float = DEFAULT_CONFIDENCE) -> ConfidenceInterval:
        """Exact (Clopper-Pearson) interval of :attr:`fraction_near` at ``confidence_level``.

        The share of scored examples with a near twin in training, as
        ``scipy.stats.binomtest(n_near, n_scored).proportion_ci(confidence_level,
        method="exact")`` (Clopper & Pearson, Biometrika 1934): when the
        scored examples are drawn independently it covers the share in the
        population they come from with at least that probability.
        """
        return binomial_interval(self.n_near, self.n_scored, confidence_level)

    def pairs(self) -> list[tuple[int, int, float]]:
        """(scored index, training index, distance) of every near pair, nearest first."""
        order = np.argsort(self.near_distance, kind="stable")
        return [(int(self.near_scored[i]), int(self.near_train[i]), float(self.near_distance[i])) for i in order]
