"""Leakage search: exact duplicates, near duplicates against brute force, planted twins, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.fft
from naive_residual import naive_residuals

from fitaudit import InputError
from fitaudit.leakage import (
    LeakageResult,
    image_features,
    image_leakage,
    image_search,
    image_space,
    jpeg_lattice,
    plant_twins,
    residual,
    tabular_leakage,
)
from fitaudit.leakage.search import nearest
from fitaudit.results import Result
from reference_search import brute_force_nearest


def smooth_images(n: int, seed: int, size: int = 12) -> np.ndarray:
    """Random smooth colour images in [0, 1] (blobs), channels first."""
    rng = np.random.default_rng(seed)
    coarse = rng.random((n, 3, 4, 4))
    return np.clip(coarse.repeat(size // 4, axis=2).repeat(size // 4, axis=3), 0, 1).astype(np.float32)


def brute_force_distance(x: np.ndarray, y: np.ndarray, floor: float) -> float:
    """d(x, y) of image_space's docstring, straight from its formula, one pair at a time.

    For every shift of up to MAX_SHIFT native pixels: the working image moved by
    scipy (linear interpolation, edges repeated), the cells weighted by the
    share of their pixels the shift kept (not repeated edge), both views'
    luminance centred on its weighted mean; the gain minimised numerically
    (scipy's bounded scalar search), not by the closed form the search uses.
    """
    from scipy import ndimage
    from scipy.optimize import minimize_scalar

    wx, wy = image_space.working_images(x[None])[0], image_space.working_images(y[None])[0]
    target = image_space.raw_view(wy[None])[0].astype(np.float64)
    m, top = image_space.MAX_SHIFT, image_space.MAX_GAIN
    per_pixel = 32 / x.shape[1], 32 / x.shape[2]  # working pixels per native pixel
    best = np.inf
    for dy in range(-m, m + 1):
        for dx in range(-m, m + 1):  # native pixels
            sy, sx = dy * per_pixel[0], dx * per_pixel[1]
            moved = ndimage.shift(wx.astype(np.float64), (0, sy, sx), order=1, mode="nearest")
            view = image_space.raw_view(moved[None].astype(np.float32))[0].astype(np.float64)
            kept = np.zeros((32, 32))
            rows, cols = np.arange(32) - sy, np.arange(32) - sx
            kept[np.ix_((rows >= 0) & (rows <= 31), (cols >= 0) & (cols <= 31))] = 1.0
            weight = np.concatenate([kept.reshape(8, 4, 8, 4).mean(axis=(1, 3)).ravel(),
                                     *[kept.reshape(4, 8, 4, 8).mean(axis=(1, 3)).ravel()] * 2])
            a, b = view.copy(), target.copy()
            for v in (a, b):
                v[:64] -= np.sum(weight[:64] * v[:64]) / weight[:64].sum()
            fit = minimize_scalar(lambda g, a=a, b=b, w=weight: float(np.sqrt(np.sum(w * (a - g * b) ** 2))),
                                  bounds=(1 / top, top), method="bounded", options={"xatol": 1e-10})
            scale = max(np.sqrt(np.sqrt(np.sum(weight * a**2) * np.sum(weight * b**2))), floor)
            best = min(best, float(fit.fun) / scale)
    return best


def test_faiss_search_equals_brute_force() -> None:
    rng = np.random.default_rng(0)
    queries, reference = rng.standard_normal((50, 7)), rng.standard_normal((200, 7))
    d_fast, i_fast = nearest(queries, reference, 3)
    d_slow, i_slow = brute_force_nearest(queries, reference, 3)
    assert np.array_equal(i_fast, i_slow)
    assert d_fast == pytest.approx(d_slow, abs=1e-4)


@pytest.mark.slow
def test_image_search_equals_brute_force_when_every_image_is_a_candidate(monkeypatch) -> None:
    scored, train = smooth_images(15, 1), smooth_images(30, 2)
    scored[:5] = np.clip(train[[3, 8, 13, 21, 28]] * 1.1, 0, 1)  # five twins
    monkeypatch.setattr(image_search, "CANDIDATES", len(train))
    monkeypatch.setattr(image_search, "SHIFT_CANDIDATES", 1)
    result = image_leakage(scored, train)
    contrasts = [np.linalg.norm(image_space.raw_view(image_space.working_images(t[None])).astype(np.float64)) for t in train]
    assert result.contrast_floor == pytest.approx(np.sort(contrasts)[int(np.ceil(0.25 * len(train))) - 1], rel=1e-6)
    slow = np.array([[brute_force_distance(s, t, result.contrast_floor) for t in train] for s in scored])
    ordered = np.sort(slow, axis=1)  # the training images are all distinct: each is of its own content
    by_view = ordered[:, 0] / ordered[:, 2]  # Lowe's ratio with the runner-up skipped, straight from the definition
    # the pixel residual e to the CHECKED images nearest under d, on the luminance (ITU-R BT.601) at native size
    checked = np.argsort(slow, axis=1)[:, : residual.CHECKED]
    luma = [np.einsum("c,nchw->nhw", [0.299, 0.587, 0.114], images) for images in (scored, train)]
    pixels = naive_residuals(*luma, checked, image_space.MAX_SHIFT, image_space.MAX_GAIN)
    ordered_pixels = np.sort(pixels, axis=1)
    by_pixels = ordered_pixels[:, 0] / ordered_pixels[:, 2]
    # the JPEG lattice distance j to the same images, on block DCTs taken by scipy (grey levels: images in [0, 1])
    blocks = [np.stack([[scipy.fft.dctn(image[r : r + 8, c : c + 8], norm="ortho").ravel()
                         for r in range(0, image.shape[0] - 7, 8) for c in range(0, image.shape[1] - 7, 8)]
                        for image in 255 * images]) for images in luma]
    for b in blocks:
        b[..., 0] -= 8 * 128
    lattice = jpeg_lattice.lattice_distances(blocks[0], blocks[1], checked, jpeg_lattice.likely_qualities(blocks[0]))
    ordered_lattice = np.sort(lattice, axis=1)
    with np.errstate(invalid="ignore"):
        by_lattice = np.nan_to_num(ordered_lattice[:, 0] / ordered_lattice[:, 2], nan=np.inf)
    ratios = np.stack([by_view, by_pixels, by_lattice])
    beyond = np.sqrt(np.maximum(ordered_pixels**2 - 1 / 12 / 255**2, 0))  # e less the rounding to whole grey levels
    stored = np.all(np.abs(scored * 255 - np.rint(scored * 255)) < 1e-3, axis=(1, 2, 3))  # in whole levels
    assert stored.tolist() == [False] * 15  # float images: the rounding is not taken off
    with np.errstate(invalid="ignore", divide="ignore"):
        by_pixels_beyond = np.where((beyond[:, 2] > 0) & stored, beyond[:, 0] / beyond[:, 2], by_pixels)
    relative = np.minimum.reduce([by_view, by_pixels_beyond, by_lattice])  # pairs: by the plain ratios (below)
    expected = np.flatnonzero(relative <= image_search.RELATIVE_THRESHOLD)
    assert expected.tolist() == [0, 1, 2, 3, 4]  # the five twins, none of the others
    assert result.threshold == image_search.RELATIVE_THRESHOLD and result.quantile is None
    assert result.threshold_rule == image_search.RELATIVE_RULE
    assert result.near_scored.tolist() == expected.tolist()
    rows = np.arange(len(checked))
    nearest = np.stack([slow.argmin(axis=1), checked[rows, pixels.argmin(axis=1)], checked[rows, lattice.argmin(axis=1)]])
    nearest = nearest[ratios.argmin(axis=0), rows]  # ties go to d, then e
    assert result.near_train.tolist() == nearest[expected].tolist()
    assert result.near_distance == pytest.approx(relative[expected], abs=1e-4)
    assert {0, 1, 2, 3, 4} <= set(result.near_scored.tolist())


@pytest.mark.slow
def test_exact_duplicates_by_content() -> None:
    train = smooth_images(30, 3)
    scored = smooth_images(20, 4)
    scored[[2, 7]] = train[[5, 11]]
    result = image_leakage(scored, train)
    assert result.exact_scored.tolist() == [2, 7] and result.exact_train.tolist() == [5, 11]
    assert result.n_exact == 2
    assert {2, 7} <= set(result.near_scored.tolist())


def test_batches_give_the_same_features_as_one_array() -> None:
    images = smooth_images(30, 5)
    whole = image_features(images)
    streamed = image_features(iter([images[:7], images[7:19], images[19:]]))
    assert np.array_equal(whole.hashes, streamed.hashes)
    assert np.allclose(whole.work, streamed.work)


def test_distance_ignores_brightness_and_contrast_but_not_content() -> None:
    image = smooth_images(1, 6) * 0.5 + 0.2
    other = smooth_images(1, 7) * 0.5 + 0.2
    work = image_space.working_images(np.concatenate([image, image * 1.2, image * 0.8, other]))
    views = image_space.floored(image_space.raw_view(work), floor=1e-3)
    assert np.linalg.norm(views[0]) == pytest.approx(1.0, abs=1e-5)
    assert views[0] == pytest.approx(views[1], abs=1e-5)
    faint = image_space.floored(image_space.raw_view(work) / 100, floor=1.0)
    assert np.linalg.norm(faint[0]) == pytest.approx(np.linalg.norm(image_space.raw_view(work[:1])) / 100, rel=1e-5)
    shifted = image_space.shifted_views(work[:1], image.shape[-2:])
    raw = image_space.raw_view(work)
    same = image_space.pair_distances(shifted, raw[None, :3], floor=1e-3, native=(12, 12))
    assert same == pytest.approx(np.zeros((1, 3)), abs=1e-5)
    assert image_space.pair_distances(shifted, raw[None, 3:], floor=1e-3, native=(12, 12))[0, 0] > 0.3


def test_contrast_floor_limits_the_noise_of_low_contrast_images() -> None:
    """The same absolute noise on a faint image is a small distance once the floor is above its contrast."""
    rng = np.random.default_rng(3)
    faint = smooth_images(1, 9) * 0.05 + 0.4
    noisy = faint + rng.normal(0, 0.01, faint.shape).astype(np.float32)
    work = image_space.working_images(np.concatenate([faint, noisy]))
    shifted, raw = image_space.shifted_views(work[:1], faint.shape[-2:]), image_space.raw_view(work[1:])[None]
    contrast = float(np.linalg.norm(image_space.raw_view(work[:1])))
    without = image_space.pair_distances(shifted, raw, floor=1e-9, native=(12, 12))[0, 0]
    with_floor = image_space.pair_distances(shifted, raw, floor=10 * contrast, native=(12, 12))[0, 0]
    assert without > 0.2  # relative to its own tiny contrast the noise is large
    assert with_floor < without / 5  # relative to a floor ten times that contrast it is small


@pytest.fixture(scope="module")
def shapes_with_twins():
    from fitaudit.data.shapes import make_splits

    splits = make_splits({"train": 40, "test": 40}, 2, random_state=0)  # 960 renders each
    train, clean = splits["train"].images, splits["test"].images
    twins = plant_twins(train, 40, random_state=1)
    return train, clean, twins


@pytest.mark.slow
def test_planted_twins_of_shapes_renders_are_found(shapes_with_twins) -> None:
    from fitaudit.leakage.planted import planted_recall

    train, clean, twins = shapes_with_twins
    result = image_leakage(np.concatenate([clean, twins.images]), train)
    recall = planted_recall(result, twins, offset=len(clean))
    assert all(recall[kind] >= 0.95 for kind in ("copy", "jpeg", "shift", "brightness")), recall
    false_pairs = np.count_nonzero(result.near_scored < len(clean))
    assert false_pairs <= 0.01 * len(clean)


@pytest.mark.slow
def test_search_agrees_with_brute_force_on_shapes_renders(shapes_with_twins) -> None:
    """The candidate stage finds the training image brute force (d to every training image) finds."""
    train, clean, twins = shapes_with_twins
    scored = np.concatenate([clean[:200], twins.images])
    result = image_leakage(scored, train)
    queries, reference = image_features(scored), image_features(train)
    fast_d, fast_i = image_search.nearest_twins(queries, reference, floor=result.contrast_floor)
    slow_d, slow_i = np.empty(len(scored)), np.empty(len(scored), dtype=np.int64)
    for i in range(len(scored)):
        native = (queries.shape[-2], queries.shape[-1])
        every = image_space.pair_distances(image_space.shifted_views(queries.work[i : i + 1], native),
                                           reference.raw_views[None], result.contrast_floor, native)[0]
        slow_i[i] = int(np.argmin(every))
        slow_d[i] = every[slow_i[i]]
    assert np.all(fast_d >= slow_d - 1e-9)  # never nearer than the true nearest
    assert np.mean(fast_i == slow_i) >= 0.9
    assert np.array_equal(fast_d <= result.threshold, slow_d <= result.threshold)  # the same twins


def test_accuracy_with_and_without_twins() -> None:
    x_train = np.arange(40, dtype=float).reshape(20, 2)
    x_scored = np.array([[100.0, 3.0], [0.0, 1.0], [-50.0, 9.0], [6.0, 7.0], [300.0, -2.0]])
    y_true = np.array([0, 1, 1, 0, 1])
    y_pred = np.array([1, 1, 0, 0, 1])
    result = tabular_leakage(x_scored, x_train, y_true=y_true, y_pred=y_pred, threshold=1e-9)
    assert result.exact_scored.tolist() == [1, 3] and result.exact_train.tolist() == [0, 3]
    assert result.near_scored.tolist() == [1, 3]
    assert result.accuracy is not None and (result.accuracy.correct, result.accuracy.n) == (3, 5)
    assert result.accuracy_without is not None
    assert (result.accuracy_without.correct, result.accuracy_without.n) == (1, 3)


def test_tabular_search_equals_brute_force_on_standardised_features() -> None:
    rng = np.random.default_rng(7)
    train = rng.standard_normal((300, 4)) * [1, 10, 100, 0.1]
    scored = rng.standard_normal((60, 4)) * [1, 10, 100, 0.1]
    scored[:6] = train[:6] + rng.normal(0, 0.01, (6, 4)) * [1, 10, 100, 0.1]
    result = tabular_leakage(scored, train)
    mean, std = train.mean(axis=0), train.std(axis=0)
    d_train, i_train = brute_force_nearest((scored - mean) / std, (train - mean) / std, 1)
    d_self, _ = brute_force_nearest((train - mean) / std, (train - mean) / std, 2)  # itself, then the nearest other
    threshold = np.quantile(d_self[:, 1], result.quantile, method="inverted_cdf")
    assert result.threshold == pytest.approx(threshold, rel=1e-4)
    assert result.n_calibration == 300 and result.null_near == np.sum(d_self[:, 1] <= result.threshold)
    expected = np.flatnonzero(d_train[:, 0] <= threshold)
    assert result.near_scored.tolist() == expected.tolist()
    assert result.near_train.tolist() == i_train[expected, 0].tolist()
    assert set(range(6)) <= set(expected.tolist())


def test_round_trip_through_json() -> None:
    result = tabular_leakage([[0.0, 1.0], [5.0, 5.0], [9.0, 2.0]], [[0.0, 1.0], [3.0, 3.0]], y_true=[0, 1, 1], y_pred=[0, 1, 0])
    again = Result.from_dict(result.to_dict())
    assert isinstance(again, LeakageResult)
    assert again.near_scored.tolist() == result.near_scored.tolist()
    assert again.accuracy is not None and again.accuracy.correct == 2
    assert again.pairs() == result.pairs()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: tabular_leakage(np.zeros((3, 2)), np.zeros((4, 3))), r"`x_train` has rows of shape \(3,\) but `x_scored` of shape \(2,\)"),
        (lambda: tabular_leakage(np.zeros((4, 2)), np.zeros((1, 2))), r"`x_train` must hold at least 2 examples"),
        (lambda: image_leakage(smooth_images(3, 0), smooth_images(3, 1, size=16)), r"`train_images` holds images of shape \(3, 16, 16\)"),
        (lambda: image_leakage(np.zeros((3, 12, 12)), smooth_images(3, 1)), r"`scored_images` must hold images of shape"),
        (lambda: image_leakage(smooth_images(3, 0), smooth_images(3, 1), y_true=[0, 1, 1]), r"`y_pred` is needed too"),
        (lambda: image_leakage(smooth_images(3, 0), smooth_images(3, 1), y_true=[0, 1], y_pred=[0, 1]), r"`y_true` must have one entry per scored example \(3\)"),
        (lambda: image_leakage(smooth_images(3, 0), smooth_images(3, 1), quantile=0), r"`quantile` must be in \(0, 1\)"),
        (lambda: image_leakage(iter([]), smooth_images(3, 1)), r"`scored_images` holds no images"),
        (lambda: plant_twins(smooth_images(3, 0), 1, kinds=("blur",)), r"`kinds` must hold names from"),
    ],
)
def test_bad_input_names_the_argument(call, message: str) -> None:
    with pytest.raises(InputError, match=message):
        call()


@pytest.mark.slow
def test_planted_recall_counts_matches_to_the_source() -> None:
    from fitaudit.leakage.planted import planted_recall

    train = smooth_images(40, 8)
    twins = plant_twins(train, 3, kinds=("copy", "brightness"), random_state=0)
    clean = smooth_images(10, 9)
    result = image_leakage(np.concatenate([clean, twins.images]), train)
    assert planted_recall(result, twins, offset=10) == {"copy": 1.0, "brightness": 1.0}


def test_penultimate_features_are_the_last_linear_layers_input() -> None:
    torch = pytest.importorskip("torch")
    from fitaudit.leakage import feature_leakage, penultimate_features
    from fitaudit.models import as_classifier

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    x = np.random.default_rng(0).random((7, 3, 2, 2)).astype(np.float32)
    features = penultimate_features(as_classifier(net), x, batch_size=3)
    with torch.no_grad():
        hidden = net[2](net[1](net[0](torch.from_numpy(x)))).numpy()
    expected = hidden / np.linalg.norm(hidden, axis=1, keepdims=True)
    assert features == pytest.approx(expected, abs=1e-6)
    result = feature_leakage(features, features[:4])  # the first four scored rows are in training
    assert result.space == "penultimate features" and set(range(4)) <= set(result.near_scored.tolist())
    with pytest.raises(InputError, match=r"`model` must be a torch model"):
        penultimate_features(as_classifier(lambda v: np.zeros((len(v), 2)), n_classes=2), x)


@pytest.mark.slow
def test_images_on_two_value_scales_are_refused() -> None:
    """One image in [0, 255] and in [0, 1] is no twin of itself: the library refuses the pair of scales."""
    images = np.random.default_rng(0).random((8, 3, 16, 16)).astype(np.float32)
    images[:, :, :4] = 1.0  # white rows: luminance 1 up to rounding, still the [0, 1] scale
    with pytest.raises(InputError, match=r"`scored_images` and `train_images` hold images on different value scales"):
        image_leakage(images * 255, images)
    assert len(image_leakage(images, images).exact_scored) == 8
    standardised = (images - 0.5) / 0.25  # negative values: not judged
    assert len(image_leakage(standardised, standardised * 0.2).exact_scored) == 0


def test_confidence_interval_of_the_share_with_a_twin_is_scipys_exact_interval() -> None:
    from scipy import stats

    rng = np.random.default_rng(5)
    train = rng.normal(size=(200, 6))
    scored = np.concatenate([train[:30] + 1e-9, rng.normal(size=(170, 6))])
    result = tabular_leakage(scored, train, threshold=1e-6)
    assert (result.n_near, result.n_scored) == (30, 200)
    for level in (0.9, 0.95, 0.99):
        expected = stats.binomtest(30, 200).proportion_ci(confidence_level=level, method="exact")
        ci = result.confidence_interval(level)
        assert (ci.low, ci.high) == pytest.approx((expected.low, expected.high))
    assert result.confidence_interval() == result.confidence_interval(0.95)
    assert result.confidence_interval().low < result.fraction_near < result.confidence_interval().high
    with pytest.raises(InputError, match="confidence_level"):
        result.confidence_interval(1.5)
