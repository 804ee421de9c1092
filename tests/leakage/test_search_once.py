"""The image search computes each shifted view and index once: the same answer as the plain way.

The plain search below computes everything where it is used (each shifted
view alone for the candidate search and again for the ranking, a fresh
faiss index per search, the pair distance one shift at a time with its
weighted re-centring written out); the search must give its nearest images
and, up to rounding, its distances.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fitaudit.leakage import image_features, image_leakage, image_search, image_space
from fitaudit.leakage.search import ExactIndex, nearest
from reference_search import brute_force_nearest


def textured_images(n: int, seed: int) -> np.ndarray:
    """Random colour images of 32 x 32 pixels with coarse blobs and fine noise (a shift changes their views)."""
    rng = np.random.default_rng(seed)
    coarse = rng.random((n, 3, 8, 8)).repeat(4, axis=2).repeat(4, axis=3)
    return np.clip(coarse + rng.normal(0, 0.05, coarse.shape), 0, 1).astype(np.float32)


def plain_pair_distances(shifted: np.ndarray, views: np.ndarray, floor: float,
                         native: tuple[int, int] = (32, 32)) -> np.ndarray:
    """d of image_space's docstring, one shift at a time: the luminance of both views re-centred on its mean
    over the cells the shift kept (weighted by the share kept), the closed-form gain, no buffers reused."""
    shifted, views = shifted.astype(np.float64), views.astype(np.float64)
    best = np.full(views.shape[:2], np.inf)
    for s, w in enumerate(image_space.kept_weights(native)):
        a, b = shifted[:, s].copy(), views.copy()
        a[:, :64] -= ((a[:, :64] * w[:64]).sum(-1) / w[:64].sum())[:, None]
        b[..., :64] -= ((b[..., :64] * w[:64]).sum(-1) / w[:64].sum())[..., None]
        aa, bb = (w * a**2).sum(-1)[:, None], (w * b**2).sum(-1)
        ab = np.einsum("nd,nkd->nk", a * w, b)
        gain = np.clip(ab / np.where(bb > 0, bb, 1.0), 1.0 / image_space.MAX_GAIN, image_space.MAX_GAIN)
        error = np.sqrt(np.maximum(aa - 2.0 * gain * ab + gain**2 * bb, 0.0))
        best = np.minimum(best, error / np.maximum(np.sqrt(np.sqrt(aa * bb)), floor))
    return best


def plain_twins(queries: image_space.ImageFeatures, reference: image_space.ImageFeatures, floor: float,
                own: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The search as before, in blocks of SEARCH_BLOCK queries, everything recomputed where it is used."""
    extra = 0 if own is None else 1
    reference_floored = image_space.floored(image_space.raw_view(reference.work), floor)
    distances, indices = [], []
    for start in range(0, len(queries), image_search.SEARCH_BLOCK):
        work = queries.work[start : start + image_search.SEARCH_BLOCK]
        found = [nearest(image_space.spectrum_of(work), image_space.spectrum_of(reference.work),
                         image_search.CANDIDATES + extra)[1]]
        for dy, dx in image_space.shifts(reference.shape[-2:], image_search.SEARCH_STEPS):
            view = image_space.floored(image_space.raw_view(work, dy, dx), floor)
            found.append(nearest(view, reference_floored, image_search.SHIFT_CANDIDATES + extra)[1])
        candidates = np.concatenate(found, axis=1)
        moves = image_space.shifts(reference.shape[-2:])
        shifted = np.stack([image_space.raw_view(work, dy, dx) for dy, dx in moves], axis=1)
        d = plain_pair_distances(shifted, image_space.raw_view(reference.work)[candidates], floor)
        if own is not None:
            d[candidates == own[start : start + len(work), None]] = np.inf
        best = np.argmin(d, axis=1)
        rows = np.arange(len(work))
        distances.append(d[rows, best])
        indices.append(np.where(np.isfinite(d[rows, best]), candidates[rows, best], -1))
    return np.concatenate(distances), np.concatenate(indices)


@pytest.fixture()
def small_blocks(monkeypatch):
    """Blocks of 24 queries ranked 10 at a time: several blocks and chunks, a short last one of each."""
    monkeypatch.setattr(image_search, "SEARCH_BLOCK", 24)
    monkeypatch.setattr(image_search, "RANK_CHUNK", 10)


@pytest.fixture()
def sets():
    train = textured_images(90, 1)
    scored = textured_images(70, 2)
    scored[:4] = np.roll(train[[3, 17, 40, 88]], (1, -2), axis=(2, 3))  # shifted twins
    scored[4:7] = np.clip(train[[5, 6, 7]] * 1.2, 0, 1)  # brighter twins
    scored[7] = train[60]  # a copy
    scored[8] = scored[9]  # a copy inside the scored set
    return scored, train


def test_shifted_views_are_each_view_computed_alone() -> None:
    work = image_space.working_images(textured_images(5, 3))
    shifted = image_space.shifted_views(work)
    assert shifted.shape == (5, len(image_space.STEPS), 96) == (5, 49, 96) and shifted.dtype == np.float32
    means = image_space._block_means
    for i, (dy, dx) in enumerate(image_space.shifts()):  # 32-pixel images: whole working pixels
        assert np.array_equal(shifted[:, i], image_space.raw_view(work, dy, dx))
        # the bits of one view computed alone, as before: B(dy) @ W @ B(dx).T per channel group
        luma = (means(8, dy) @ work[:, 0] @ means(8, dx).T).reshape(5, -1)
        chroma = (means(4, dy) @ work[:, 1:] @ means(4, dx).T).reshape(5, -1)
        alone = np.concatenate([luma - luma.mean(axis=1, keepdims=True), image_space.CHROMA_WEIGHT * chroma], axis=1)
        assert np.array_equal(shifted[:, i], alone)
        # and the view's definition, straight: the working image moved with its edges repeated, then averaged
        m, y, x = image_space.MAX_SHIFT, int(dy), int(dx)
        moved = np.pad(work, ((0, 0), (0, 0), (m, m), (m, m)), mode="edge")[:, :, m - y : m - y + 32, m - x : m - x + 32]
        luma = moved[:, 0].reshape(5, 8, 4, 8, 4).mean(axis=(2, 4)).reshape(5, -1)
        chroma = moved[:, 1:].reshape(5, 2, 4, 8, 4, 8).mean(axis=(3, 5)).reshape(5, -1)
        expected = np.concatenate([luma - luma.mean(axis=1, keepdims=True), image_space.CHROMA_WEIGHT * chroma], axis=1)
        assert shifted[:, i] == pytest.approx(expected, abs=1e-6)


def test_fractional_shifts_interpolate_the_working_image() -> None:
    """A shift of 1-3 native pixels of a 44-pixel image is a fraction of a working pixel: linear interpolation
    with the edges repeated (scipy.ndimage.shift, order 1, mode nearest, as the independent reference)."""
    from scipy import ndimage

    work = image_space.working_images(textured_images(3, 5))
    moves = image_space.shifts((44, 44))
    assert moves[0] == pytest.approx((-3 * 32 / 44, -3 * 32 / 44))
    shifted = image_space.shifted_views(work, (44, 44))
    for i, (dy, dx) in enumerate(moves):
        moved = ndimage.shift(work.astype(np.float64), (0, 0, dy, dx), order=1, mode="nearest")
        luma = moved[:, 0].reshape(3, 8, 4, 8, 4).mean(axis=(2, 4)).reshape(3, -1)
        chroma = moved[:, 1:].reshape(3, 2, 4, 8, 4, 8).mean(axis=(3, 5)).reshape(3, -1)
        expected = np.concatenate([luma - luma.mean(axis=1, keepdims=True), image_space.CHROMA_WEIGHT * chroma], axis=1)
        assert shifted[:, i] == pytest.approx(expected, abs=1e-5)


@pytest.mark.slow
def test_search_gives_the_plain_searchs_answer(small_blocks, sets) -> None:
    scored, train = sets
    queries, reference = image_features(scored), image_features(train)
    floor = image_space.contrast_floor(queries.raw_views)
    fast_d, fast_i = image_search.nearest_twins(queries, reference, floor=floor)
    slow_d, slow_i = plain_twins(queries, reference, floor)
    assert np.array_equal(fast_i, slow_i)
    assert fast_d == pytest.approx(slow_d, rel=1e-9, abs=1e-6)  # sqrt of rounding at 0
    assert fast_i[:8].tolist() == [3, 17, 40, 88, 5, 6, 7, 60]


def test_calibration_search_gives_the_plain_searchs_answer(small_blocks, sets) -> None:
    scored, _ = sets
    reference = image_features(scored)
    floor = image_space.contrast_floor(reference.raw_views)
    rows = np.array([0, 2, 5, 8, 9, 11, 13, 20, 21, 22, 30, 31, 40, 41, 42, 43, 50, 51, 60, 61, 62, 63, 64, 65, 66, 69])
    queries = image_space.ImageFeatures(reference.hashes[rows], reference.work[rows], reference.shape)
    fast = image_search.nearest_twins(queries, reference, floor=floor, query_index=rows, step="calibration")
    slow = plain_twins(queries, reference, floor, own=rows)
    assert np.array_equal(fast[1], slow[1]) and fast[0] == pytest.approx(slow[0], rel=1e-9, abs=1e-6)  # sqrt of rounding at 0
    assert fast[1][rows.tolist().index(8)] == 9 and fast[0][rows.tolist().index(8)] == 0  # its copy: the set's own
    assert np.all(fast[1] != rows)


def plain_relative(queries: image_space.ImageFeatures, reference: image_space.ImageFeatures,
                   floor: float) -> tuple[np.ndarray, np.ndarray]:
    """Lowe's ratio the plain way, the runner-up skipped: d to the nearest over d to the nearest training image
    once the nearest and the next are taken out (every training image here is distinct), each from the plain
    search's candidates, one query at a time."""
    _, indices = plain_twins(queries, reference, floor)
    ratios = np.empty(len(queries))

    def without(rows: list[int]) -> image_space.ImageFeatures:
        others = [j for j in range(len(reference)) if j not in rows]
        return image_space.ImageFeatures(reference.hashes[others], reference.work[others], reference.shape)

    for q in range(len(queries)):
        query = queries.rows(slice(q, q + 1))
        nearest = plain_twins(query, reference, floor)[0][0]
        others = [j for j in range(len(reference)) if j != indices[q]]
        runner_up = others[int(plain_twins(query, without([int(indices[q])]), floor)[1][0])]
        ratios[q] = nearest / plain_twins(query, without([int(indices[q]), runner_up]), floor)[0][0]
    return ratios, indices


@pytest.mark.slow
def test_image_leakage_result_is_the_plain_searchs(small_blocks, sets) -> None:
    scored, train = sets
    # the view distance d alone: features without fine images or JPEG blocks (e and j: test_leakage's brute force)
    queries, reference = (dataclasses.replace(image_features(images), fine=None, blocks=None)
                          for images in (scored, train))
    result = image_leakage(queries, reference)
    distances, indices = plain_relative(queries, reference, float(result.contrast_floor))
    distances[7], indices[7] = 0.0, 60  # the exact duplicate
    near = np.flatnonzero(distances <= image_search.RELATIVE_THRESHOLD)
    assert near.tolist()[:8] == list(range(8))  # the shifted, brighter and copied twins
    assert result.near_scored.tolist() == near.tolist()
    assert result.near_train.tolist() == indices[near].tolist()
    assert result.near_distance == pytest.approx(distances[near], rel=1e-9, abs=1e-6)


def test_rows_reuse_computed_spectra_and_views_with_the_same_bits(sets) -> None:
    scored, _ = sets
    features = image_features(scored)
    assert "spectra" not in vars(features.rows(slice(0, 10)))  # nothing computed yet, nothing to slice
    whole_spectra, whole_views = features.spectra, features.raw_views
    for rows in (slice(0, 24), slice(24, 48), slice(48, 72)):
        part = features.rows(rows)
        assert "spectra" in vars(part) and "raw_views" in vars(part)
        assert np.array_equal(part.spectra, image_space.spectrum_of(features.work[rows]))
        assert np.array_equal(part.raw_views, image_space.raw_view(features.work[rows]))
        assert np.shares_memory(part.spectra, whole_spectra) and np.shares_memory(part.raw_views, whole_views)


def test_one_index_answers_many_searches_as_fresh_ones() -> None:
    rng = np.random.default_rng(4)
    reference = rng.standard_normal((300, 12))
    index = ExactIndex(reference)
    assert len(index) == 300
    for k, n in ((1, 5), (8, 40), (400, 3)):
        queries = rng.standard_normal((n, 12))
        kept, fresh = index.search(queries, k), nearest(queries, reference, k)
        assert kept[0].shape == (n, min(k, 300))
        assert np.array_equal(kept[0], fresh[0]) and np.array_equal(kept[1], fresh[1])
        # nearest() is built on ExactIndex too: the plain float64 search is the independent reference
        slow_d, slow_i = brute_force_nearest(queries, reference, k)
        assert np.array_equal(kept[1], slow_i)
        assert kept[0] == pytest.approx(slow_d, abs=1e-4)


def test_kept_weights_drop_the_strip_a_shift_invents() -> None:
    weights = image_space.kept_weights((8, 8))  # one native pixel = 4 working pixels = one luminance cell
    still = image_space.STEPS.index((0, 0))
    assert np.all(weights[still] == 1.0)
    down = image_space.STEPS.index((1, 0))  # content moved down one pixel: the top row of cells is invented
    luma = weights[down, :64].reshape(8, 8)
    assert np.all(luma[0] == 0.0) and np.all(luma[1:] == 1.0)
    chroma = weights[down, 64:80].reshape(4, 4)  # chroma cells are 8 working pixels: half of the top row kept
    assert np.all(chroma[0] == 0.5) and np.all(chroma[1:] == 1.0)


@pytest.mark.slow
def test_shifted_digits_touching_the_border_are_found() -> None:
    """8 x 8 digits fill their frame: a 1-2 pixel shift pushes part of the digit out (0 of 25 were found before
    the cells the shift invents were left out of the distance)."""
    from sklearn.datasets import load_digits

    from fitaudit.leakage import plant_twins
    from fitaudit.leakage.planted import planted_recall

    images = (load_digits().images / 16.0)[:, None].astype(np.float32)
    train, clean = images[:1000], images[1000:1300]
    twins = plant_twins(train, 25, kinds=("shift",), random_state=1)
    result = image_leakage(np.concatenate([clean, twins.images]), train)
    assert planted_recall(result, twins, offset=len(clean))["shift"] >= 0.8
    assert np.count_nonzero(result.near_scored < len(clean)) <= 0.02 * len(clean)
