"""The result of the leakage search (pure data)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fitaudit.leakage.decision import exact_pvalue, leakage_verdict, near_pvalue
from fitaudit.results import Result
from fitaudit.stats.bernstein import ConfidenceInterval
from fitaudit.stats.binomial import DEFAULT_CONFIDENCE, AccuracyResult, binomial_interval
from fitaudit.verdict import Verdict


@dataclasses.dataclass(repr=False)
class LeakageResult(Result):
    """Exact and near duplicates of training examples among the scored examples.

    Attributes
    ----------
    space : str
        Feature space of the near-duplicate search: ``"image view, relative distance"``
        (small views compared up to a small shift; the distance of the nearest
        over that of the nearest of other content), ``"standardised features"``
        (tabular) or ``"penultimate features"`` (a torch model's).
    n_scored, n_train : int
        Sizes of the two sets.
    threshold : float
        A scored example is a near twin of its nearest training example when
        their distance is at most this.
    quantile : float or None
        The threshold is this quantile of the distances from training
        examples (the calibration rows) to their nearest *other* training
        example (``None``: the threshold was given or fixed by the method).
    n_calibration : int
        Training examples (a seeded random subset) whose nearest other
        training example is the null of the near twins (the ``c`` of
        :mod:`fitaudit.leakage.decision`).
    null_near : int
        Calibration rows within the threshold of another training example
        (equal ones included): the ``j`` of :mod:`fitaudit.leakage.decision`.
    null_exact : int
        Training examples equal to another training example (the data's own
        duplicates; ``j_e`` of :mod:`fitaudit.leakage.decision`, out of ``n_train``).
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
        The image distance's contrast floor c0, calibrated on the training
        images (:func:`fitaudit.leakage.image_space.contrast_floor`); ``None``
        in the other spaces.
    near_scored_file, near_train_file : list of str or None
        The files of every near pair's scored and training image (image
        folders and lists; ``None`` for arrays).
    near_scored_values, near_train_values : ndarray of float64, shape (n_near, k), or None
        The first ``k`` (at most :data:`fitaudit.leakage.core.PAIR_COLUMNS`)
        values of every near pair's scored and training row, as given
        (tabular data; ``None`` otherwise).
    n_columns : int or None
        How many values a row has (of which the pairs keep the first ``k``).
    pair_columns : list of str or None
        Tables: the user's columns, in which :attr:`near_scored_row` and
        :attr:`near_train_row` show every near pair's two rows (values as text).
    near_scored_row, near_train_row : list of list of str or None
    left_out_columns : dict or None
        Tables: the identifier-like columns left out of the distance, and why
        (:func:`fitaudit.data.tables.identifier_columns`).
    threshold_rule : str or None
        How the method fixed the threshold when neither a quantile nor a
        threshold was given (images: :data:`fitaudit.leakage.image_search.RELATIVE_RULE`).
    near_edit : list of str or None
        Images: the edit under whose inverse every near pair's scored image
        is nearest its training image (:mod:`fitaudit.leakage.edits`:
        ``"none"``, ``"horizontal flip"``, ``"rescaled 0.9x"``,
        ``"rotated 4 degrees"``); ``None`` in the other spaces.
    searched_edits : list of str or None
        Images: the edits searched (``"none"`` first).
    mirror_share : float or None
        Images: the share of the training images that are twins of their own
        mirror image (:func:`fitaudit.leakage.mirror.mirror_share`);
        flips are searched below :data:`fitaudit.leakage.edits.MIRROR_SHARE`.
    pipeline : dict or None
        With a model scoring images: the pipeline (or normalisation of image
        arrays) its predictions went through, the one it records and its
        accuracy under each (:meth:`fitaudit.data.pipeline_rule.PipelineChoice.to_dict`).
    """

    ALIGNED = (("exact_scored", "exact_train"),  # one per pair
               ("near_scored", "near_train", "near_distance", "near_scored_file", "near_train_file",
                "near_scored_values", "near_train_values", "near_scored_row", "near_train_row", "near_edit"))

    space: str
    n_scored: int
    n_train: int
    threshold: float
    quantile: float | None
    n_calibration: int
    null_near: int
    null_exact: int
    exact_scored: np.ndarray
    exact_train: np.ndarray
    near_scored: np.ndarray
    near_train: np.ndarray
    near_distance: np.ndarray
    accuracy: AccuracyResult | None = None
    accuracy_without: AccuracyResult | None = None
    contrast_floor: float | None = None
    near_scored_file: list[str] | None = None
    near_train_file: list[str] | None = None
    near_scored_values: np.ndarray | None = None
    near_train_values: np.ndarray | None = None
    n_columns: int | None = None
    pair_columns: list[str] | None = None
    near_scored_row: list[list[str]] | None = None
    near_train_row: list[list[str]] | None = None
    left_out_columns: dict[str, str] | None = None
    pipeline: dict[str, Any] | None = None
    threshold_rule: str | None = None
    near_edit: list[str] | None = None
    searched_edits: list[str] | None = None
    mirror_share: float | None = None

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

    def verdict(self, **context: Any) -> Verdict:
        """The leakage question's decision (:func:`fitaudit.leakage.decision.leakage_verdict`)."""
        return leakage_verdict(self, **{k: v for k, v in context.items() if k == "level"})

    def to_dict(self) -> dict[str, Any]:
        """Every field, and the two excess tests' p-values (copies: recomputed from the fields when read back)."""
        return {**super().to_dict(), "near_pvalue": near_pvalue(self), "exact_pvalue": exact_pvalue(self)}

    def pairs(self) -> list[tuple[int, int, float]]:
        """(scored index, training index, distance) of every near pair, nearest first."""
        return [(int(self.near_scored[i]), int(self.near_train[i]), float(self.near_distance[i]))
                for i in self.pair_order()]

    def pair_order(self) -> np.ndarray:
        """Positions of the near pairs, nearest first, exact copies first among pairs at equal distance (the order
        of :meth:`pairs`)."""
        exact = np.isin(self.near_scored, self.exact_scored)
        return np.lexsort((~exact, self.near_distance))  # stable: the search's order within equal keys

    def beyond_repeats(self, level: float | None = None) -> np.ndarray:
        """Positions of the near pairs beyond what the data's own repeats explain, closest first.

        The first ``n_beyond_repeats`` pairs of :meth:`pair_order` (exact
        copies first among pairs at equal distance), ``n_beyond_repeats`` the
        verdict's (:func:`fitaudit.leakage.decision.excess_counts`: the twins
        above the largest count each test leaves to the data's own repeats). Empty when there is no
        excess, and when most training rows repeat (no excess can be told
        there). ``level``: the verdict's (default
        :data:`~fitaudit.leakage.decision.LEAKAGE_LEVEL`).
        """
        numbers = self.verdict(**({} if level is None else {"level": level})).numbers
        return self.pair_order()[: numbers["n_beyond_repeats"] or 0].astype(np.int64)

    def pair_files(self, position: int) -> tuple[str, str] | None:
        """(scored file, training file) of the near pair at ``position``; ``None`` without files."""
        if self.near_scored_file is None or self.near_train_file is None:
            return None
        return self.near_scored_file[position], self.near_train_file[position]

    def pair_values(self, position: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The first values of the near pair's scored and training rows; ``None`` without them."""
        if self.near_scored_values is None or self.near_train_values is None:
            return None
        return np.asarray(self.near_scored_values[position]), np.asarray(self.near_train_values[position])

    def pair_edit(self, position: int) -> str | None:
        """The edit that explains the near pair at ``position`` (images; ``"none"``: no edit); ``None`` elsewhere."""
        return None if self.near_edit is None else self.near_edit[position]

    def pair_rows(self, position: int) -> tuple[list[str], list[str]] | None:
        """The near pair's scored and training rows in the user's columns (tables); ``None`` without them."""
        if self.near_scored_row is None or self.near_train_row is None:
            return None
        return self.near_scored_row[position], self.near_train_row[position]
