"""Leakage between training and scored data: exact and near duplicates (docs/first-questions.md#did-the-scored-data-leak-into-training).

Barz & Denzler (J. Imaging 2020, "Do we train on test data? Purging CIFAR
of near-duplicates") found near duplicates of training images for 3.3% of
CIFAR-10's and 10% of CIFAR-100's test images. A model scores well on such
test examples whether or not it generalises, so the audit reports how many
scored examples have a twin in training and the accuracy without them.

* Exact duplicates: equal decoded content (equal BLAKE2b digests of the
  values).
* Near duplicates: the nearest training example of every scored example in
  a feature space (:mod:`fitaudit.leakage.image_space` for images,
  standardised features for tabular data, or given features such as a
  torch model's penultimate layer), within a threshold.
* The threshold and the null are calibrated on the training set itself,
  without labels, under exchangeability (:mod:`fitaudit.leakage.decision`):
  if scored and training examples are drawn alike, a scored example's
  distance to its nearest training example is distributed like a training
  example's distance to its nearest *other* training example. Up to
  ``n_calibration`` training examples (a seeded random subset) are each
  compared with all the others; a training example equal to another one (a
  natural duplicate of the data) is at distance 0 there, as a scored
  example equal to a training row is. The threshold is the ``quantile``
  (default 0.5%) of the calibration rows' distances to their nearest
  *distinct* training row (so that natural exact repeats, at distance 0,
  cannot pull it to 0 and hide every near copy); how many calibration rows
  fall within it (their nearest other row, repeats at 0), and how many
  training rows equal another one, are the null counts the decision
  compares the scored set's counts with.
* Tables are compared in their own columns
  (:func:`fitaudit.data.tables.comparable_features`): identifier-like
  columns are left out and named
  (:func:`fitaudit.data.tables.identifier_columns`), a column typed
  differently in the two tables is refused, and the pairs keep both rows
  as the tables hold them. For images, the
  distance's contrast floor is calibrated on the training images too (the
  25% quantile of their contrasts,
  :func:`fitaudit.leakage.image_space.contrast_floor`), and the threshold is
  by default a fixed relative distance (Lowe's ratio test, nearest over
  nearest of other content but the runner-up, at most 0.4: image_space's
  docstring) instead of a quantile, which collapses on featureless
  photographs.

Measured on 50,000 x 50,000 Shapes renders with planted twins
(``benchmarks/bench_leakage.py``): at the default quantile the image search
finds copies, JPEG re-encodings (quality 75), 1-2 pixel shifts and
brightness changes of training images at >= 95% each while flagging under
1% of clean scored images (``benchmarks/results/leakage.txt``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_array, check_float, check_int
from fitaudit.data.tables import (
    align_columns,
    as_frame,
    comparable_features,
    identifier_columns,
    is_frame,
)
from fitaudit.leakage import edits, image_search, image_space, mirror
from fitaudit.leakage.features import standardise, unit_rows
from fitaudit.leakage.result import LeakageResult
from fitaudit.leakage.resume import Checkpoints, as_checkpoints
from fitaudit.leakage.search import ExactIndex
from fitaudit.random import check_random_state
from fitaudit.stats.binomial import accuracy

#: default quantile of training-to-other-training nearest-neighbour distances used as the threshold
DEFAULT_QUANTILE = 0.005
#: default number of training examples whose nearest other training example calibrates it
DEFAULT_CALIBRATION = 5000

#: values of each row of a near pair kept in the result (tabular data: the first columns)
PAIR_COLUMNS = 8

#: nearest training example of every scored example: (distances, indices)
ToTrain = Callable[[], tuple[np.ndarray, np.ndarray]]
#: nearest other training example of the given training rows (leave one out): (distances, indices)
ToSelf = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
#: distance of the given training rows to their nearest training row with other content
ToDistinct = Callable[[np.ndarray], np.ndarray]


def exact_pairs(scored_hashes: np.ndarray, train_hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scored rows whose digest equals a training row's, and the first such training row."""
    first: dict[bytes, int] = {}
    for j, digest in enumerate(train_hashes.tolist()):
        first.setdefault(digest, j)
    pairs = [(i, first[h]) for i, h in enumerate(scored_hashes.tolist()) if h in first]
    scored = np.array([p[0] for p in pairs], dtype=np.int64)
    train = np.array([p[1] for p in pairs], dtype=np.int64)
    return scored, train


def repeated_rows(hashes: np.ndarray) -> np.ndarray:
    """Boolean mask of the rows whose digest another row shares (the set's own exact duplicates)."""
    _, inverse, counts = np.unique(hashes, return_inverse=True, return_counts=True)
    return np.asarray(counts[inverse.ravel()] > 1)


def _calibration_rows(n_train: int, n_calibration: int, random_state: Any) -> np.ndarray:
    rng = check_random_state(random_state)
    if n_train <= n_calibration:
        return np.arange(n_train)
    return np.sort(rng.choice(n_train, size=n_calibration, replace=False))


def _check_settings(quantile: float, threshold: float | None, n_calibration: int) -> tuple[float, float | None, int]:
    quantile = check_float(quantile, "quantile", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    if threshold is not None:
        threshold = check_float(threshold, "threshold", low=0.0)
    n_calibration = check_int(n_calibration, "n_calibration", minimum=2)
    return quantile, threshold, n_calibration


def _check_labels(
    y_true: Any, y_pred: Any, n_scored: int
) -> tuple[np.ndarray, np.ndarray] | None:
    if (y_true is None) != (y_pred is None):
        missing = "y_pred" if y_pred is None else "y_true"
        raise InputError(f"`{missing}` is needed too: accuracy with and without twins needs labels and predictions.")
    if y_true is None:
        return None
    truth, pred = np.asarray(y_true), np.asarray(y_pred)
    for name, values in (("y_true", truth), ("y_pred", pred)):
        if values.ndim != 1 or len(values) != n_scored:
            raise InputError(f"`{name}` must have one entry per scored example ({n_scored}); got shape {values.shape}.")
    return truth, pred


def _assemble(
    *,
    space: str,
    n_scored: int,
    n_train: int,
    scored_hashes: np.ndarray,
    train_hashes: np.ndarray,
    to_train: ToTrain,
    to_self: ToSelf,
    quantile: float,
    threshold: float | None,
    n_calibration: int,
    random_state: Any,
    labels: tuple[np.ndarray, np.ndarray] | None,
    n_classes: int | None,
    class_names: Sequence[str] | None,
    train_name: str,
    contrast_floor: float | None = None,
    names: tuple[Sequence[str] | None, Sequence[str] | None] = (None, None),
    rows_of: tuple[np.ndarray | None, np.ndarray | None] = (None, None),
    to_distinct: ToDistinct | None = None,
) -> LeakageResult:
    """The search's result: calibration on the training rows, the near pairs and what names them.

    ``names`` are the scored and training examples' files and ``rows_of``
    their values as given (2-d), when known: the pairs keep theirs. The
    threshold is the ``quantile`` of the calibration rows' distances to
    their nearest *distinct* training row (``to_distinct``; without it,
    the rows that repeat no other are used, whose nearest other row is
    distinct): a scored row closer to a training row than that counts
    whatever the data's own rate of exact repeats (which are at distance 0
    and would otherwise pull the quantile to 0).
    """
    if n_train < 2:
        raise InputError(
            f"`{train_name}` must hold at least 2 examples: the null of the leakage question is every training "
            f"example against the others; got {n_train}."
        )
    rows = _calibration_rows(n_train, n_calibration, random_state)
    repeated = repeated_rows(train_hashes)
    own, _ = to_self(rows)
    own = np.where(repeated[rows], 0.0, own)  # a natural duplicate is at 0, as a scored copy is
    if threshold is None:
        distinct = to_distinct(rows) if to_distinct is not None else own[~repeated[rows]]
        distinct = distinct[np.isfinite(distinct)] if len(distinct) else distinct
        calibrated = distinct if len(distinct) else own
        limit, used_quantile = float(np.quantile(calibrated, quantile, method="inverted_cdf")), quantile
    else:
        limit, used_quantile = threshold, None
    exact_scored, exact_train = exact_pairs(scored_hashes, train_hashes)
    distances, indices = to_train()
    distances[exact_scored] = 0.0
    indices[exact_scored] = exact_train
    near = np.flatnonzero(distances <= limit)
    result = LeakageResult(
        space=space,
        n_scored=n_scored,
        n_train=n_train,
        threshold=limit,
        quantile=used_quantile,
        n_calibration=int(len(rows)),
        null_near=int(np.sum(own <= limit)),
        null_exact=int(repeated.sum()),
        exact_scored=exact_scored,
        exact_train=exact_train,
        near_scored=near.astype(np.int64),
        near_train=indices[near].astype(np.int64),
        near_distance=distances[near].astype(np.float64),
        contrast_floor=contrast_floor,
    )
    pair_train = result.near_train
    scored_names, train_names = names
    if scored_names is not None and train_names is not None:
        result.near_scored_file = [str(scored_names[int(i)]) for i in near]
        result.near_train_file = [str(train_names[int(j)]) for j in pair_train]
    scored_rows, train_rows = rows_of
    if scored_rows is not None and train_rows is not None:
        result.n_columns = int(scored_rows.shape[1])
        result.near_scored_values = scored_rows[near, :PAIR_COLUMNS].astype(np.float64)
        result.near_train_values = train_rows[pair_train, :PAIR_COLUMNS].astype(np.float64)
    if labels is not None:
        truth, pred = labels
        result.accuracy = accuracy(truth, pred, n_classes=n_classes, class_names=class_names)
        keep = np.ones(n_scored, dtype=bool)
        keep[near] = False
        if keep.any():
            k = result.accuracy.n_classes
            result.accuracy_without = accuracy(truth[keep], pred[keep], n_classes=k, class_names=class_names)
    return result


def image_leakage(
    scored_images: np.ndarray | Iterable[np.ndarray] | image_space.ImageFeatures,
    train_images: np.ndarray | Iterable[np.ndarray] | image_space.ImageFeatures,
    *,
    y_true: Any = None,
    y_pred: Any = None,
    n_classes: int | None = None,
    class_names: Sequence[str] | None = None,
    quantile: float | None = None,
    threshold: float | None = None,
    n_calibration: int = DEFAULT_CALIBRATION,
    random_state: Any = 0,
    scored_name: str = "scored_images",
    train_name: str = "train_images",
    progress: bool = False,
    checkpoint_dir: Checkpoints | str | os.PathLike[str] | None = None,
    augmented: bool = True,
) -> LeakageResult:
    """Exact and near duplicates of training images among the scored images.

    Parameters
    ----------
    scored_images, train_images : ndarray (n, C, H, W), iterable of such batches, or ImageFeatures
        Channels-first images (any value scale, the same for both sets:
        :func:`~fitaudit.leakage.image_space.check_same_scale`; both sets
        through the same pipeline). Batches are reduced to digests, 3 x 32 x 32 working
        images and fine images (the luminance, at most 96 x 96: :mod:`~fitaudit.leakage.residual`)
        as they come (16-48 KB per image is kept, not the pixels).
    y_true, y_pred : array-like of int, shape (n,), optional
        Labels and the model's predictions of the scored images: the result
        then holds the accuracy with and without the near twins.
    n_classes : int, optional
    class_names : sequence of str, optional
    quantile : float, optional
        Calibrate the threshold as this quantile of the training images'
        relative distances, each against the others (module docstring), in
        (0, 1), instead of the fixed :data:`~fitaudit.leakage.image_search.RELATIVE_THRESHOLD`.
    threshold : float, optional
        Another fixed threshold on the relative distance r of
        :mod:`fitaudit.leakage.image_space` (0 for copies, shifted copies and
        unclipped brightness changes).
    n_calibration : int
        At most this many training images calibrate the threshold and the null.
    random_state : None, int or numpy Generator
        Picks the calibration subset of the training images.
    scored_name, train_name : str
        Argument names used in error messages.
    progress : bool
        Progress bars of the features, the calibration and the search (stderr).
    checkpoint_dir : path or fitaudit.leakage.resume.Checkpoints, optional
        Keep every finished block of the features (of arrays given as
        images), the calibration and the search there: a rerun with the same
        images, settings and code reuses them (:mod:`fitaudit.leakage.resume`).
    augmented : bool
        Also search the copies augmentation makes (:mod:`fitaudit.leakage.edits`):
        each scored image is compared with training under the inverse of a
        horizontal flip (unless the training images are mirror-symmetric by
        nature: :func:`~fitaudit.leakage.mirror.mirror_share`), of
        rescales and of small rotations; each pair names its edit
        (``near_edit``). The calibration images are searched under the same
        edits, so the null counts twins under any edit as the scored count does.

    Returns
    -------
    LeakageResult
        With the contrast floor c0 of the distance (``contrast_floor``,
        calibrated on the training images); its ``verdict()`` is the
        question's decision (:mod:`fitaudit.leakage.decision`).

    References
    ----------
    Barz & Denzler, "Do we train on test data? Purging CIFAR of
    near-duplicates", J. Imaging 6(6), 41, 2020; docs/first-questions.md#leakage.
    """
    rule = None
    if quantile is None and threshold is None:
        threshold, rule = image_search.RELATIVE_THRESHOLD, image_search.RELATIVE_RULE
    quantile, threshold, n_calibration = _check_settings(
        DEFAULT_QUANTILE if quantile is None else quantile, threshold, n_calibration)
    checkpoints = as_checkpoints(checkpoint_dir)
    scored = image_space.as_features(scored_images, scored_name, checkpoint_dir=checkpoints, progress=progress)
    train = image_space.as_features(train_images, train_name, checkpoint_dir=checkpoints, progress=progress)
    image_space.check_same_shape(scored, train, scored_name, train_name)
    image_space.check_same_scale(scored, train, scored_name, train_name)
    labels = _check_labels(y_true, y_pred, len(scored))
    floor = image_space.contrast_floor(train.raw_views)  # cached: the searches use them too
    searched: tuple[edits.Edit, ...] = (edits.IDENTITY,)
    mirrored = None
    if augmented:
        sample = np.unique(np.linspace(0, len(train) - 1, min(len(train), edits.MIRROR_SAMPLE)).astype(np.int64))
        mirrored = mirror.mirror_share(train, sample, floor)
        searched += ((edits.FLIP,) if mirrored < edits.MIRROR_SHARE else ()) + edits.RESAMPLED
    found_edits: dict[str, np.ndarray] = {}
    prepared = image_search.prepare(train, floor)  # the calibration's search and the scored images' share it

    def to_train() -> tuple[np.ndarray, np.ndarray]:
        ratios, indices, found_edits["scored"] = image_search.nearest_edited_twins(
            scored, train, floor=floor, searched=searched, progress=progress, checkpoint_dir=checkpoints,
            threshold=threshold, prepared=prepared)
        return ratios, indices

    def to_self(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        subset = image_space.ImageFeatures(train.hashes[rows], train.work[rows], train.shape,
                                           fine=None if train.fine is None else train.fine[rows],
                                           blocks=None if train.blocks is None else train.blocks[rows],
                                           grid=None if train.grid is None else train.grid[rows])
        ratios, indices, _ = image_search.nearest_edited_twins(
            subset, train, floor=floor, searched=searched, query_index=rows, progress=progress,
            checkpoint_dir=checkpoints, step="calibration", threshold=threshold, prepared=prepared)
        return ratios, indices

    result = _assemble(
        space="image view, relative distance",
        n_scored=len(scored),
        n_train=len(train),
        scored_hashes=scored.hashes,
        train_hashes=train.hashes,
        to_train=to_train,
        to_self=to_self,
        quantile=quantile,
        threshold=threshold,
        n_calibration=n_calibration,
        random_state=random_state,
        labels=labels,
        n_classes=n_classes,
        class_names=class_names,
        train_name=train_name,
        contrast_floor=floor,
        names=(scored.names, train.names),
    )
    result.threshold_rule = rule
    exact = np.zeros(len(scored), dtype=bool)
    exact[result.exact_scored] = True
    result.near_edit = ["none" if exact[i] else searched[found_edits["scored"][i]].name
                        for i in result.near_scored.tolist()]
    result.searched_edits = [edit.name for edit in searched]
    result.mirror_share = mirrored
    return result


def _feature_nearest(scored: np.ndarray, train: np.ndarray) -> tuple[ToTrain, ToSelf]:
    """Nearest-neighbour functions in a plain Euclidean feature space."""
    index = ExactIndex(train)

    def to_train() -> tuple[np.ndarray, np.ndarray]:
        distances, indices = index.search(scored, 1)
        return distances[:, 0].astype(np.float64), indices[:, 0]

    def to_self(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # the 2 nearest: the row itself and its nearest other row; when the row is not among them,
        # ties at distance 0 (its duplicates) took both places
        distances, indices = index.search(train[rows], 2)
        distances = np.where(indices == rows[:, None], np.inf, distances.astype(np.float64))
        best = np.argmin(distances, axis=1)
        picked = np.arange(len(rows))
        return distances[picked, best], indices[picked, best]

    return to_train, to_self


def _distinct_nearest(train: np.ndarray, hashes: np.ndarray) -> ToDistinct:
    """Distance of training rows to their nearest training row of other content (an index of the distinct rows)."""
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    index = ExactIndex(train[first]) if len(first) > 1 else None

    def to_distinct(rows: np.ndarray) -> np.ndarray:
        if index is None:  # one distinct row: none other to be near
            return np.full(len(rows), np.inf)
        distances, indices = index.search(train[rows], 2)
        # the row's own content is one of its 2 nearest distinct rows unless two others tie at 0 (float32)
        return np.where(indices == inverse[rows][:, None], np.inf, distances.astype(np.float64)).min(axis=1)

    return to_distinct


def tabular_leakage(
    x_scored: Any,
    x_train: Any,
    *,
    y_true: Any = None,
    y_pred: Any = None,
    n_classes: int | None = None,
    class_names: Sequence[str] | None = None,
    quantile: float = DEFAULT_QUANTILE,
    threshold: float | None = None,
    n_calibration: int = DEFAULT_CALIBRATION,
    random_state: Any = 0,
    scored_name: str = "x_scored",
    train_name: str = "x_train",
    space: str = "standardised features",
    standardise_features: bool = True,
) -> LeakageResult:
    """Exact and near duplicates of training rows among the scored rows.

    Features are standardised with the training rows' mean and standard
    deviation; distances are Euclidean. Exact duplicates are rows with equal
    values. Other parameters as :func:`image_leakage`.

    Parameters
    ----------
    x_scored : array-like, shape (n, d), or a table
    x_train : array-like, shape (m, d), or a table
        Tables (pandas DataFrames, anything with ``__dataframe__``) may hold
        text and missing values: they are compared in one numeric space
        (:func:`fitaudit.data.tables.comparable_features`).
    space : str
        Name of the feature space in the result.
    standardise_features : bool
        Standardise (tabular data); ``False`` compares the features as given
        (e.g. unit-length penultimate features, :func:`feature_leakage`).
    """
    quantile, threshold, n_calibration = _check_settings(quantile, threshold, n_calibration)
    frames = None
    if is_frame(x_scored) or is_frame(x_train):  # tables: text and missing values as numbers in one space
        scored_frame = as_frame(x_scored, scored_name)  # the training table's columns matched by name
        frames = (scored_frame, align_columns(scored_frame, as_frame(x_train, train_name)))
        left_out = identifier_columns(*frames) if frames[0].columns.equals(frames[1].columns) else {}
        x_scored, x_train = comparable_features(*frames, scored_name=scored_name, train_name=train_name,
                                                leave_out=list(left_out))
    scored = check_array(x_scored, scored_name, ndim=(2, 3, 4))
    train = check_array(x_train, train_name, ndim=(2, 3, 4))
    if scored.shape[1:] != train.shape[1:]:
        raise InputError(
            f"`{train_name}` has rows of shape {train.shape[1:]} but `{scored_name}` of shape {scored.shape[1:]}; "
            "training and scored data must have the same features."
        )
    labels = _check_labels(y_true, y_pred, len(scored))
    scored_hashes = image_space.content_hashes(scored, np.float64)
    train_hashes = image_space.content_hashes(train, np.float64)
    if standardise_features:
        train_features, scored_features = standardise(train, scored)
    else:
        train_features = train.reshape(len(train), -1).astype(np.float32)
        scored_features = scored.reshape(len(scored), -1).astype(np.float32)
    to_train, to_self = _feature_nearest(scored_features, train_features)
    result = _assemble(
        to_distinct=_distinct_nearest(train_features, train_hashes),
        space=space,
        n_scored=len(scored),
        n_train=len(train),
        scored_hashes=scored_hashes,
        train_hashes=train_hashes,
        to_train=to_train,
        to_self=to_self,
        quantile=quantile,
        threshold=threshold,
        n_calibration=n_calibration,
        random_state=random_state,
        labels=labels,
        n_classes=n_classes,
        class_names=class_names,
        train_name=train_name,
        rows_of=((scored.reshape(len(scored), -1), train.reshape(len(train), -1))
                 if standardise_features and frames is None else (None, None)),
    )
    if frames is not None:  # the pairs in the user's own columns, and the columns left out
        result.left_out_columns = left_out
        result.pair_columns = [str(c) for c in frames[0].columns]
        result.near_scored_row = _as_text(frames[0], result.near_scored)
        result.near_train_row = _as_text(frames[1], result.near_train)
    return result


def _as_text(frame: Any, rows: np.ndarray) -> list[list[str]]:
    """The given rows of a table, every value as text (a missing one as ``""``)."""
    picked = frame.iloc[rows.tolist()]
    return [["" if v is None or (isinstance(v, float) and v != v) else str(v) for v in row]
            for row in picked.astype(object).to_numpy().tolist()]


def feature_leakage(scored_features: Any, train_features: Any, **kwargs: Any) -> LeakageResult:
    """Near duplicates in given features (e.g. a torch model's penultimate features), scaled to unit length.

    Keyword arguments as :func:`tabular_leakage`; ``space`` defaults to
    ``"penultimate features"``. Exact duplicates are equal feature vectors.
    """
    kwargs.setdefault("space", "penultimate features")
    scored = unit_rows(check_array(scored_features, kwargs.get("scored_name", "scored_features"), ndim=2))
    train = unit_rows(check_array(train_features, kwargs.get("train_name", "train_features"), ndim=2))
    return tabular_leakage(scored, train, standardise_features=False, **kwargs)
