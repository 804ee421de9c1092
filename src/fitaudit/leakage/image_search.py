"""The image leakage search: candidates in the view space of :mod:`fitaudit.leakage.image_space`, ranked by d.

Near twins are judged by the *relative distance* of a scored image x to its
nearest training image y (:func:`relative_distances`):

    r(x) = d(x, y) / d(x, z),   z the nearest training image whose content differs from y's and from z1's,

z1 being the runner-up, the nearest training image of other content than
y's. This is Lowe's ratio test (Lowe, IJCV 2004, "Distinctive image
features from scale-invariant keypoints", section 7.1), as copy detection
uses it, with the runner-up skipped: x is a twin of y when it is much
nearer to y than to anything else but possibly one image, at most
:data:`RELATIVE_THRESHOLD` (0.4) times as far. The runner-up is skipped
because a training photo often has a natural near twin of its own (an
overlapping crop of the same scene): a copy of it is then about as near
that neighbour as its source, and the plain ratio (over z1) is near 1.
A global threshold on d collapses where featureless images (sky, plain
background) are near each other anyway; r is small for a twin whatever the
image holds and near 1 for a clean image.

The same ratio is taken of the pixel residual e
(:mod:`fitaudit.leakage.residual`: the luminance at native resolution,
aligned over the same shifts, with a gain and an offset fitted) over the
:data:`~fitaudit.leakage.residual.CHECKED` training images nearest under d,
and a scored image is a twin when either ratio is at most the threshold
(e's less the rounding to whole grey levels:
:func:`~fitaudit.leakage.residual.beyond_rounding`), paired with the
nearest image under the distance that gave the smaller plain ratio
(:func:`nearest_twins`, :func:`_smallest_ratio`). The 8 x 8 view of a featureless crop (sky,
a plain wall) is the view of any other crop of the same sky; its pixels
are not: a re-crop repeats its source's pixels where they overlap, a
brightness change repeats them up to a gain. JPEG re-encodings of
featureless crops are out of reach of both: quality 75 removes the grain
that tells one sky crop from another, and the re-encoded crop is then as
near other crops of that sky as its source. The same ratio is therefore
taken of the JPEG lattice distance j (:mod:`fitaudit.leakage.jpeg_lattice`:
the scored image's 8 x 8 block DCT coefficients against each candidate's
rounded to the lattice of the scored image's likeliest JPEG quantisation
table) over the same candidates: a re-encoding's coefficients are its
source's, rounded, whatever the image holds.

The nearest neighbour of a scored image is searched among the 60 training
images with the nearest spectra and, for each of 9 shifts of its view (0 or
+-2 native pixels along each axis), the 8 with the nearest *floored* views
(views over max(|v|, c0), whose Euclidean distance approximates d without
gain or shift), all found by exact search with faiss, then ranked by d. The
images of other content (z1 and z of r) are the nearest such candidates.
What each rule found on photographs and Shapes renders, against the rules
compared and against brute force: ``docs/leakage-image-space.md``.

Under an edit (:mod:`fitaudit.leakage.edits`: flips, rescales, rotations)
the search is coarse to fine (:func:`_block_edited`): a first pass compares
every query's edited view, unshifted, with the training views in their 32
principal axes (one exact search; a zoom-out's candidates then ranked at
the nearest of the nine search shifts, :data:`FIRST_STEPS`;
:func:`_first_pass`), and only queries
whose ratio there is at most :data:`FIRST_PASS` (1.5) times the threshold
are searched in full, with the first pass's candidates in the place of the
nine shifted searches. A twin's source is its nearest image in the first
pass too, and its rival there is no nearer than in the full search, so a
twin passes; on 20,000 x 20,000 Shapes renders with twins of every kind the
flagged set equals brute force's on a subsample of 120, and the search with
every edit takes 1.4-1.6 times the CPU time of the search without them,
depending on the load of the machine (about 5 times before the first pass;
``benchmarks/bench_leakage_sizes.py --speed``,
``benchmarks/results/leakage_speed.txt``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence

import numpy as np
from tqdm.auto import tqdm

from fitaudit.leakage import edits, jpeg_lattice, residual
from fitaudit.leakage.edited_views import edited_views
from fitaudit.leakage.image_space import (
    MAX_GAIN,
    MAX_SHIFT,
    STEPS,
    VIEW_SIZE,
    WORK_SIZE,
    ImageFeatures,
    _pair_distances,
    _views,
    floored,
    kept_weights,
    levels_per_unit,
    on_whole_levels,
    shifted_views,
    shifts,
)
from fitaudit.leakage.resume import Checkpoints, as_checkpoints
from fitaudit.leakage.search import ExactIndex

#: training candidates per scored image by spectrum
CANDIDATES = 60
#: shifts, in native pixels, of the scored image's view whose nearest floored training views are candidates
SEARCH_STEPS = [(dy, dx) for dy in (-2, 0, 2) for dx in (-2, 0, 2)]
#: training candidates per scored image and search shift
SHIFT_CANDIDATES = 8
#: candidates per query of an edit's first pass (the nearest floored views of the edited query, no shift)
FIRST_CANDIDATES = 40
#: shifts, in native pixels, of a zoom-out's view in its first pass, no shift first (:func:`_block_edited`)
FIRST_STEPS = ((0, 0), *(step for step in SEARCH_STEPS if step != (0, 0)))
#: principal axes of the floored views the first pass compares in (a third of the view's 96 numbers)
FIRST_DIMS = 32
#: a query is searched in full under an edit when its first pass's ratio is at most this many times the threshold
FIRST_PASS = 1.5
#: queries per block of the search (a resumable unit)
SEARCH_BLOCK = 8192
#: queries whose candidates are ranked at a time (bounds memory)
RANK_CHUNK = 2048
#: a scored image is a near twin when its nearest training image is at most this share as far as the nearest
#: one of other content but the runner-up (the relative distance r, :func:`relative_distances`)
RELATIVE_THRESHOLD = 0.4
#: how the image search's default threshold is set, in words (the report's threshold row)
RELATIVE_RULE = ("fixed: the nearest training image at most 0.4 times as far (view distance d, or pixel residual e or "
                 f"JPEG lattice distance j over the {residual.CHECKED} nearest by d) as the nearest training image of "
                 "other content but one (Lowe's ratio test, the runner-up skipped)")


class _Reference:
    """What the search needs of the reference images, computed once per search (not per block or shift).

    Each part is computed when a block first needs it: a search whose
    blocks all come from checkpoints computes none.

    Parameters
    ----------
    features : ImageFeatures
    floor : float
        The contrast floor c0.
    """

    def __init__(self, features: ImageFeatures, floor: float) -> None:
        self.features, self.floor = features, floor
        self._edited: dict[edits.Edit, _Reference] = {}

    @functools.cached_property
    def spectra(self) -> ExactIndex:
        """Exact search over the reference spectra."""
        return ExactIndex(self.features.spectra)

    @functools.cached_property
    def floored(self) -> ExactIndex:
        """Exact search over the reference views, :func:`floored`."""
        return ExactIndex(floored(self.features.raw_views, self.floor))

    @functools.cached_property
    def pixels(self) -> residual.PixelReference:
        """The reference fine images and their sums for the pixel residual e."""
        assert self.features.fine is not None  # asked only when both sets have fine images
        return residual.PixelReference(self.features.fine, residual.max_lag(self.features.shape, MAX_SHIFT))

    @functools.cached_property
    def levels(self) -> float | None:
        """Grey levels per unit of the reference images' values (:func:`levels_per_unit`)."""
        return levels_per_unit(self.features)

    @functools.cached_property
    def lattice(self) -> np.ndarray | None:
        """The reference blocks' coefficients in grey levels for the JPEG lattice distance j; None when the
        images are not on a scale of grey levels (:func:`levels_per_unit`)."""
        if self.levels is None or self.features.blocks is None:
            return None
        return jpeg_lattice.in_grey_levels(self.features.blocks, self.levels)

    @functools.cached_property
    def views(self) -> np.ndarray:
        """The reference views v in float64, shape (m, 96)."""
        return self.features.raw_views.astype(np.float64)

    @functools.cached_property
    def coarse(self) -> tuple[np.ndarray, np.ndarray, ExactIndex]:
        """The first pass's space: the floored views' mean, their :data:`FIRST_DIMS` principal axes (96, k), and an
        exact search over the views projected on them (:func:`_first_pass`, :attr:`projected`)."""
        mean, axes = self._axes
        return mean, axes, ExactIndex(self.projected)

    @functools.cached_property
    def _axes(self) -> tuple[np.ndarray, np.ndarray]:
        views = floored(self.features.raw_views, self.floor).astype(np.float64)
        _, vectors = np.linalg.eigh(np.cov(views, rowvar=False))  # ascending eigenvalues
        return views.mean(axis=0), vectors[:, ::-1][:, :FIRST_DIMS]

    @functools.cached_property
    def projected(self) -> np.ndarray:
        """The floored views, less their mean, on the first pass's axes: (m, :data:`FIRST_DIMS`), float32."""
        mean, axes = self._axes
        views = floored(self.features.raw_views, self.floor).astype(np.float64)
        return ((views - mean) @ axes).astype(np.float32)

    def under(self, edit: edits.Edit) -> _Reference:
        """The reference images under ``edit`` itself (a zoom-in, :func:`fitaudit.leakage.edits.on_reference`):
        working images only, computed once per edit."""
        if edit not in self._edited:
            features = self.features
            work = edits.apply(features.work, edits.forward(edit))
            self._edited[edit] = _Reference(ImageFeatures(features.hashes, work, features.shape), self.floor)
        return self._edited[edit]


def prepare(reference: ImageFeatures, floor: float) -> _Reference:
    """What the searches keep of the reference images (their indexes, their edited copies), to share between
    searches against them (:func:`nearest_edited_twins`'s ``prepared``)."""
    return _Reference(reference, floor)


#: position of each search shift among the shifts of :func:`shifted_views`
_SEARCH_VIEWS = [STEPS.index(step) for step in SEARCH_STEPS]


def cell_weights(edit: edits.Edit) -> np.ndarray:
    """Per cell of the view (96), the share of its working pixels that the inverse of ``edit`` kept inside the image.

    1 everywhere for the identity and a flip; less at the border of a
    zoomed-out copy and the corners of a rotated one
    (:func:`fitaudit.leakage.edits.valid_share`).
    """
    valid = edits.valid_share(WORK_SIZE, WORK_SIZE, edit)
    half = VIEW_SIZE // 2
    luma = valid.reshape(VIEW_SIZE, WORK_SIZE // VIEW_SIZE, VIEW_SIZE, -1).mean(axis=(1, 3)).ravel()
    chroma = valid.reshape(half, WORK_SIZE // half, half, -1).mean(axis=(1, 3)).ravel()
    return np.concatenate([luma, chroma, chroma])


def edited(queries: ImageFeatures, edit: edits.Edit) -> ImageFeatures:
    """The query images under the inverse of ``edit``: working images warped; fine images flipped under a flip
    (dropped under a resampling edit); DCT blocks kept under the identity only (module :mod:`fitaudit.leakage.edits`)."""
    if edit.identity:
        return queries
    flip_only = edit.flip and edit.scale == 1.0 and not edit.angle
    fine = edits.apply(queries.fine, edit) if flip_only and queries.fine is not None else None
    return ImageFeatures(queries.hashes, edits.apply(queries.work, edit), queries.shape, queries.names, fine, None)


def _block_twins(queries: ImageFeatures, reference: _Reference, own: np.ndarray | None,
                 edit: edits.Edit = edits.IDENTITY, first: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Nearest reference image of every query under d and under the pixel residual e, and each one's rival.

    ``edit``: the queries are compared under its inverse (:func:`edited`;
    each cell of d weighted by :func:`cell_weights` too). ``first``: the
    candidates of an edit's first pass (:func:`_first_pass`), taken in the
    place of those by shifted floored view.

    Candidates by spectrum and by shifted floored view, ranked by d. Every
    query's shifted views are computed once: the candidate search uses 9 of
    them, the ranking all. ``"second"`` is d to the nearest candidate whose
    content (digest) differs from both the nearest one's and the runner-up's
    (the nearest candidate of other content than the nearest one; ``inf``
    when no third content is among the candidates). When both sets have
    fine images, e (:mod:`fitaudit.leakage.residual`) is computed to the
    :data:`~fitaudit.leakage.residual.CHECKED` distinct candidates nearest
    under d: ``"residual"``, ``"residual_index"`` and ``"residual_second"``
    are the same three numbers under e (``inf`` and -1 without fine images),
    and ``"lattice"``, ``"lattice_index"`` and ``"lattice_second"`` under the
    JPEG lattice distance j (:mod:`fitaudit.leakage.jpeg_lattice`) to the
    same candidates, when both sets have blocks on a scale of grey levels.
    """
    extra, floor = (0 if own is None else 1), reference.floor
    native = (queries.shape[-2], queries.shape[-1])
    queries = edited(queries, edit)
    shifted, weights = shifted_views(queries.work, native), kept_weights(native)
    if not edit.identity:
        weights = weights * cell_weights(edit)[None]
    found = [reference.spectra.search(queries.spectra, CANDIDATES + extra)[1]]
    if first is not None:
        found.append(first)
    else:
        for view in _SEARCH_VIEWS:
            found.append(reference.floored.search(floored(shifted[:, view], floor), SHIFT_CANDIDATES + extra)[1])
    candidates = np.concatenate(found, axis=1)
    out = {name: np.full(len(queries), np.inf)
           for name in ("distance", "second", "residual", "residual_second", "lattice", "lattice_second")}
    for name in ("index", "residual_index", "lattice_index"):
        out[name] = np.full(len(queries), -1, dtype=np.int64)
    coefficients = qualities = None
    if queries.blocks is not None and reference.lattice is not None and reference.levels is not None:
        coefficients = jpeg_lattice.in_grey_levels(queries.blocks, reference.levels)
        qualities = jpeg_lattice.likely_qualities(coefficients)
    for start in range(0, len(queries), RANK_CHUNK):
        stop = min(start + RANK_CHUNK, len(queries))
        cand = candidates[start:stop]
        d = _pair_distances(shifted[start:stop].astype(np.float64), reference.views[cand], floor, weights)
        if own is not None:
            d[cand == own[start:stop, None]] = np.inf
        hashes = reference.features.hashes[cand]
        nearest, out["distance"][start:stop], out["second"][start:stop] = _nearest_and_rival(d, cand, hashes)
        out["index"][start:stop] = nearest
        checked = _nearest_candidates(d, cand, residual.CHECKED)
        checked_hashes = reference.features.hashes[np.maximum(checked, 0)]
        if queries.fine is not None and reference.features.fine is not None:
            e = residual.residuals(queries.fine[start:stop], reference.pixels, checked, MAX_GAIN)
            found_e = _nearest_and_rival(e, checked, checked_hashes)
            out["residual_index"][start:stop], out["residual"][start:stop] = found_e[0], found_e[1]
            out["residual_second"][start:stop] = found_e[2]
        if coefficients is not None and qualities is not None and reference.lattice is not None:
            j = jpeg_lattice.lattice_distances(coefficients[start:stop], reference.lattice, checked,
                                               qualities[start:stop])
            found_j = _nearest_and_rival(j, checked, checked_hashes)
            out["lattice_index"][start:stop], out["lattice"][start:stop] = found_j[0], found_j[1]
            out["lattice_second"][start:stop] = found_j[2]
    return out


def _plain(queries: ImageFeatures) -> ImageFeatures:
    """The queries' working images alone (a comparison with edited training images has no pixel residual or JPEG
    lattice distance), with their views and spectra when already computed."""
    part = ImageFeatures(queries.hashes, queries.work, queries.shape, queries.names)
    for name in ("raw_views", "spectra"):
        if name in vars(queries):
            vars(part)[name] = vars(queries)[name]
    return part


def _first_pass(queries: ImageFeatures, reference: _Reference, own: np.ndarray | None,
                edit: edits.Edit, steps: Sequence[tuple[int, int]] = ((0, 0),)) -> tuple[np.ndarray, np.ndarray]:
    """A cheap estimate of every query's ratio under ``edit``, and its candidates: Lowe's ratio (the runner-up
    skipped) of the Euclidean distances of floored views, projected on the reference's :data:`FIRST_DIMS`
    principal axes (:attr:`_Reference.coarse`: a third of the cost of the full views), to the
    :data:`FIRST_CANDIDATES` nearest of the unshifted view (one exact search), over the share of the image the
    comparison keeps (:func:`fitaudit.leakage.edits.kept_area`). ``reference`` is already the one the edit
    compares with (a zoom-in's edited references, :func:`_block_edited`).

    With more ``steps`` than no shift (native pixels, no shift first: a zoom-out's :data:`FIRST_STEPS`), the
    estimate is the smaller of that ratio and the one with each candidate at the nearest of the shifts: the
    shifts bring the rivals nearer too, and on 20,000 Shapes renders the shifted ratio alone lost two 1.2x
    twins that the unshifted one keeps. The shifted views are compared with the unshifted view's candidates
    only, not searched (a search per shift took 1.22 s per 8,192 queries against 20,000, no shift 0.51)."""
    extra = 0 if own is None else 1
    moves = shifts((queries.shape[-2], queries.shape[-1]), list(steps))
    views = _views(queries.work, moves) if edit.identity else edited_views(queries.work, edit, moves)
    mean, axes, index = reference.coarse
    projected = [((floored(views[:, k], reference.floor) - mean) @ axes).astype(np.float32) for k in range(len(moves))]
    distance, cand = index.search(projected[0], FIRST_CANDIDATES + extra)  # the first move is no shift
    distances = [distance.astype(np.float64)]
    if len(moves) > 1:  # the unshifted view's candidates, each at its nearest shift
        moved = np.stack(projected, axis=2)  # (n, dims, shifts)
        dots = np.matmul(reference.projected[cand], moved)  # (n, k, shifts)
        squared = (np.square(reference.projected).sum(axis=1)[cand][..., None] - 2 * dots
                   + np.square(moved).sum(axis=1)[:, None])
        distances.append(np.sqrt(np.maximum(squared.min(axis=2), 0.0)).astype(np.float64))
    ratios = []
    for distance in distances:
        if own is not None:
            distance[cand == own[:, None]] = np.inf
        _, nearest, rival = _nearest_and_rival(distance, cand, reference.features.hashes[cand])
        ratios.append(relative_distances(nearest, rival))
    return np.min(ratios, axis=0) / edits.kept_area(edit, WORK_SIZE), cand


def _block_edited(queries: ImageFeatures, reference: _Reference, own: np.ndarray | None, edit: edits.Edit,
                  mark: float | None) -> dict[str, np.ndarray]:
    """:func:`_block_twins` under ``edit`` of the queries whose :func:`_first_pass` ratio is at most ``mark``
    (every query when ``mark`` is None); the others get no nearest image (``inf``, -1).

    A zoom-in is applied to the reference images (:meth:`_Reference.under`),
    every other edit's inverse to the queries. The full search of a query
    that passes takes the first pass's candidates in the place of the nine
    searches by shifted view. A zoom-out's first pass also tries the nine
    search shifts (:data:`FIRST_STEPS`): its re-crop, larger than its
    source's, is shifted where it met the photo's edge (on the photo worlds of
    ``benchmarks/validity/leakage_augmented.py`` a 1.185x one, shifted 4
    pixels: first-pass ratio 0.88 unshifted, full ratio 0.39); a zoom-in's
    lies inside its source's. A twin's source is nearest
    to it in the first pass too, while its rival there is one of fewer
    candidates (no nearer than the full search's): its first-pass ratio is
    at most about its full ratio, so :data:`FIRST_PASS` times the threshold
    keeps it (``benchmarks/bench_leakage_sizes.py`` compares the flagged
    sets with and without the first pass and with brute force).
    """
    steps = FIRST_STEPS if edit.scale > 1.0 else ((0, 0),)
    if edits.on_reference(edit):
        queries, reference, edit = _plain(queries), reference.under(edit), edits.IDENTITY
    if mark is None:
        return _block_twins(queries, reference, own, edit)
    estimate, first = _first_pass(queries, reference, own, edit, steps)
    passed = np.flatnonzero(estimate <= mark)
    out = {name: np.full(len(queries), np.inf)
           for name in ("distance", "second", "residual", "residual_second", "lattice", "lattice_second")}
    for name in ("index", "residual_index", "lattice_index"):
        out[name] = np.full(len(queries), -1, dtype=np.int64)
    if len(passed):
        part = ImageFeatures(queries.hashes[passed], queries.work[passed], queries.shape, None,
                             None if queries.fine is None else queries.fine[passed],
                             None if queries.blocks is None else queries.blocks[passed])
        found = _block_twins(part, reference, None if own is None else own[passed], edit, first[passed])
        for name, values in found.items():
            out[name][passed] = values
    return out


def _nearest_and_rival(distance: np.ndarray, cand: np.ndarray, hashes: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row: the nearest candidate (-1 when none is finite), its distance, and the distance to the rival.

    The rival is the nearest candidate whose content differs from both the
    nearest one's and the runner-up's (the nearest of other content than the
    nearest one, skipped with its copies); ``inf`` when there is none.
    """
    rows = np.arange(len(distance))
    best = np.argmin(distance, axis=1)
    nearest = distance[rows, best]
    index = np.where(np.isfinite(nearest), cand[rows, best], -1)
    other = np.where(hashes == hashes[rows, best][:, None], np.inf, distance)  # content other than the nearest's
    runner_up = hashes[rows, np.argmin(other, axis=1)][:, None]  # the nearest of them: skipped
    return index, nearest, np.where(hashes == runner_up, np.inf, other).min(axis=1)


def _nearest_candidates(distance: np.ndarray, cand: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` distinct candidates nearest under ``distance`` per row, nearest first; -1 past the finite ones."""
    order = np.argsort(distance, axis=1, kind="stable")
    ranked, values = np.take_along_axis(cand, order, 1), np.take_along_axis(distance, order, 1)
    by_row = np.argsort(ranked, axis=1, kind="stable")  # equal rows side by side, the nearest first
    grouped = np.take_along_axis(ranked, by_row, 1)
    repeated = np.zeros(ranked.shape, dtype=bool)
    np.put_along_axis(repeated, by_row[:, 1:], grouped[:, 1:] == grouped[:, :-1], axis=1)
    kept = ~repeated & np.isfinite(values)
    place = np.cumsum(kept, axis=1) - 1
    rows, cols = np.nonzero(kept & (place < k))
    out = np.full((len(cand), k), -1, dtype=np.int64)
    out[rows, place[rows, cols]] = ranked[rows, cols]
    return out


def relative_distances(nearest: np.ndarray, second: np.ndarray) -> np.ndarray:
    """r = d(x, y) / d(x, z): Lowe's ratio (IJCV 2004, section 7.1), the runner-up skipped (module docstring).

    ``nearest`` is d to the nearest image y, ``second`` d to z, the nearest
    image whose content differs from y's and from the runner-up's. 0 when
    both are 0 (the query is equally a copy of both); ``inf`` when no such
    z was compared (nothing tells what near means).
    """
    nearest, second = np.asarray(nearest, dtype=np.float64), np.asarray(second, dtype=np.float64)
    ratio = np.full(len(nearest), np.inf)
    known = np.isfinite(second) & (second > 0)
    ratio[known] = nearest[known] / second[known]
    ratio[(nearest == 0) & (second == 0)] = 0.0
    return ratio


def nearest_twins(
    queries: ImageFeatures,
    reference: ImageFeatures,
    *,
    floor: float,
    query_index: np.ndarray | None = None,
    progress: bool = False,
    checkpoint_dir: Checkpoints | str | os.PathLike[str] | None = None,
    step: str = "search",
    relative: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Nearest reference image of every query image under the distance d, in blocks of SEARCH_BLOCK queries.

    Parameters
    ----------
    queries, reference : ImageFeatures
    floor : float
        The contrast floor c0 (:func:`contrast_floor` of the training images).
    query_index : ndarray of int, optional
        When the queries are rows ``query_index`` of ``reference`` itself:
        every query's own row is skipped (rows with its exact content are
        not: they are the set's own duplicates, at distance 0).
    progress : bool
        A progress bar over the blocks (stderr).
    checkpoint_dir : path or Checkpoints, optional
        Keep every finished block there (:mod:`fitaudit.leakage.resume`).
    step : str
        The step's name in the checkpoints and the progress bar.
    relative : bool
        Return the relative distance r instead of d: the smaller of Lowe's
        ratio under d and under the pixel residual e (:func:`relative_distances`;
        e when both sets have fine images; :func:`_smallest_ratio`), with the
        nearest image under the distance that gave it.

    Returns
    -------
    distances : ndarray of float64, shape (n,)
        d to the nearest candidate (``inf`` when no candidate is left), or r with ``relative``.
    indices : ndarray of int64, shape (n,)
        Its row in ``reference`` (-1 when none).
    """
    prepared = _Reference(reference, floor)
    every = _search(queries, prepared, query_index, progress, as_checkpoints(checkpoint_dir), step, edits.IDENTITY)
    if every is None:
        return np.full(0, np.inf), np.full(0, -1, dtype=np.int64)
    if not relative:
        return every["distance"], every["index"]
    return _smallest_ratio(every, prepared.levels, on_whole_levels(queries, prepared.levels))


def _search(queries: ImageFeatures, prepared: _Reference, query_index: np.ndarray | None, progress: bool,
            checkpoints: Checkpoints, step: str, edit: edits.Edit,
            mark: float | None = None) -> dict[str, np.ndarray] | None:
    """:func:`_block_twins` of every block of queries under ``edit`` (checkpointed; an edit other than the identity
    through :func:`_block_edited` with its first pass's ``mark``); None without queries."""
    found: dict[str, list[np.ndarray]] = {}
    reference = prepared.features
    reference_key = (reference.hashes, reference.shape, reference.fine is not None, reference.blocks is not None,
                     prepared.levels)
    name = step if edit.identity else f"{step} under the edits"  # one count per step; the key names the edit
    starts = range(0, len(queries), SEARCH_BLOCK)
    for start in tqdm(starts, desc=f"leakage: {name}", unit="block", disable=not progress or len(starts) < 2):
        rows = slice(start, start + SEARCH_BLOCK)
        block = queries.rows(rows)
        own = None if query_index is None else query_index[rows]
        key = (block.hashes, own, reference_key, prepared.floor, block.fine is not None, block.blocks is not None)
        work = (functools.partial(_block_twins, block, prepared, own, edit) if edit.identity else
                functools.partial(_block_edited, block, prepared, own, edit, mark))
        done = checkpoints.block(name, key if edit.identity else (*key, edit.name, mark), work)
        for part, values in done.items():
            found.setdefault(part, []).append(values)
    if not found:
        return None
    return {part: np.concatenate(values) for part, values in found.items()}


def _smallest_ratio(every: dict[str, np.ndarray], levels: float | None,
                    rounded: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The smallest of Lowe's ratio under d, e less the rounding (:func:`fitaudit.leakage.residual.beyond_rounding`,
    ``levels`` grey levels per unit, for the queries ``rounded`` marks: stored in whole grey levels) and j per
    query, and the nearest image under the measure whose plain ratio (e as computed) is the smallest.

    The rounding is taken off for the decision only: it maps every
    candidate's e alike, so e's nearest image stays the same, but it
    brings e's ratio to about 0 for a query that two training images (a
    natural repeat and the source) both explain to within the rounding, where
    d still tells which one is nearer. On the photo worlds of
    ``benchmarks/validity/leakage_augmented.py``, pairing by the ratio less
    the rounding paired 3 brightness and contrast twins with such a repeat
    of their source.
    """
    measures = (("distance", "second"), ("residual", "residual_second"), ("lattice", "lattice_second"))
    plain = np.stack([relative_distances(every[nearest], every[rival]) for nearest, rival in measures])
    indices = np.stack([every["index"], every["residual_index"], every["lattice_index"]])
    columns = np.arange(plain.shape[1])
    smallest = np.argmin(plain, axis=0)  # ties go to d, then e
    ratios = plain.copy()
    ratios[1] = relative_distances(*residual.beyond_rounding(every["residual"], every["residual_second"], levels,
                                                             rounded))
    return ratios.min(axis=0), indices[smallest, columns]


def nearest_edited_twins(
    queries: ImageFeatures,
    reference: ImageFeatures,
    *,
    floor: float,
    searched: Sequence[edits.Edit] = (edits.IDENTITY,),
    query_index: np.ndarray | None = None,
    progress: bool = False,
    checkpoint_dir: Checkpoints | str | os.PathLike[str] | None = None,
    step: str = "search",
    threshold: float | None = None,
    prepared: _Reference | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The relative distance r of every query under each of ``searched`` edits, the smallest kept.

    As :func:`nearest_twins` with ``relative=True``, once per edit (the
    query compared under its inverse, a zoom-in's training images under the
    zoom: :mod:`fitaudit.leakage.edits`), each edit's ratio divided by the
    share of the image the comparison keeps
    (:func:`fitaudit.leakage.edits.kept_area`: an edit that compares less
    of the image needs proportionally more evidence); ties go to the
    earlier edit (list the identity first).

    ``threshold``: the threshold the ratios will be compared with. Under an
    edit other than the identity, only the queries whose first pass's ratio
    is at most :data:`FIRST_PASS` times it are searched in full
    (:func:`_block_edited`); the others' ratio under that edit is ``inf``.
    ``None``: every query is searched in full under every edit.
    ``prepared``: :func:`prepare` of ``reference`` and ``floor``, shared by
    the searches against the same training images (the calibration's and
    the scored images').

    Returns
    -------
    ratios : ndarray of float64, shape (n,)
    indices : ndarray of int64, shape (n,)
        The nearest training image under the edit and measure that gave the smallest ratio.
    edit : ndarray of int64, shape (n,)
        Its position in ``searched``.
    """
    prepared = _Reference(reference, floor) if prepared is None else prepared
    checkpoints = as_checkpoints(checkpoint_dir)
    ratios = np.full((len(searched), len(queries)), np.inf)
    indices = np.full((len(searched), len(queries)), -1, dtype=np.int64)
    rounded = on_whole_levels(queries, prepared.levels)
    for k, edit in enumerate(searched):
        mark = None if threshold is None else FIRST_PASS * threshold
        every = _search(queries, prepared, query_index, progress, checkpoints, step, edit, mark)
        if every is not None:
            ratios[k], indices[k] = _smallest_ratio(every, prepared.levels, rounded)
            ratios[k] /= edits.kept_area(edit, WORK_SIZE)
    best = np.argmin(ratios, axis=0) if len(searched) else np.zeros(len(queries), dtype=np.int64)
    columns = np.arange(len(queries))
    return ratios[best, columns], indices[best, columns], best.astype(np.int64)
