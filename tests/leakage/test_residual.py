"""The pixel residual e (fitaudit.leakage.residual): the FFT formulation against a plain loop, and what it sees."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from naive_residual import naive_residuals

from fitaudit.leakage import image_features, image_leakage, image_search, image_space, residual


@pytest.mark.parametrize(("height", "width", "lag"), [(20, 17, 3), (9, 9, 2), (33, 33, 1), (12, 30, 0)])
def test_residuals_equal_the_plain_loop(height: int, width: int, lag: int) -> None:
    rng = np.random.default_rng(height + lag)
    queries = rng.random((5, height, width)).astype(np.float32)
    reference = rng.random((7, height, width)).astype(np.float32)
    reference[2] = 0.25  # flat: no gain can be fitted (the loop takes 1, the closed form the clipped 1/G; same residual)
    candidates = rng.integers(-1, 7, (5, 4))
    fast = residuals_of(queries, reference, candidates, lag)
    slow = naive_residuals(queries, reference, candidates, lag, 1.3)
    assert np.array_equal(np.isinf(fast), candidates < 0)
    assert fast[candidates >= 0] == pytest.approx(slow[candidates >= 0], rel=1e-9, abs=1e-12)


def residuals_of(queries: np.ndarray, reference: np.ndarray, candidates: np.ndarray, lag: int) -> np.ndarray:
    return residual.residuals(queries, residual.PixelReference(reference, lag), candidates, 1.3)


def test_a_recrop_and_a_relit_copy_are_at_zero_and_another_crop_is_not() -> None:
    photo = np.random.default_rng(0).random((80, 80)).astype(np.float32)
    source = photo[10:50, 10:50]
    recrop = photo[12:52, 7:47]  # 2 and 3 pixels away: new content at two borders, left out of the overlap
    relit = 0.8 * source + 0.1  # a gain within [1/1.3, 1.3] and an offset
    other = photo[30:70, 30:70]
    e = residuals_of(np.stack([recrop, relit, other]), source[None], np.zeros((3, 1), dtype=np.int64), 3)[:, 0]
    assert e[0] == 0 and e[1] == 0  # exactly: float64 rounding of an exact repeat is not a distance
    assert e[2] > 0.2  # uniform noise: about sqrt(2/12)
    beyond = residuals_of(recrop[None], source[None], np.zeros((1, 1), dtype=np.int64), 2)[0, 0]
    assert beyond > 0.2  # a 3-pixel shift is beyond L = 2


def test_fine_images_average_large_images_by_an_integer_factor() -> None:
    rng = np.random.default_rng(1)
    images = rng.random((2, 3, 224, 200)).astype(np.float32)
    fine = residual.fine_images(images)
    f = residual.fine_factor(images.shape[1:])
    assert f == 3 and fine.shape == (2, 74, 66)
    luma = 0.299 * images[:, 0] + 0.587 * images[:, 1] + 0.114 * images[:, 2]
    assert fine[1, 5, 7] == pytest.approx(luma[1, 15:18, 21:24].mean(), rel=1e-5)
    assert residual.max_lag(images.shape[1:], 3) == 1
    small = rng.random((1, 1, 40, 40)).astype(np.float32)
    assert np.array_equal(residual.fine_images(small), small[:, 0])  # native pixels up to FINE_SIDE


@pytest.mark.slow
def test_a_recrop_of_a_featureless_crop_is_found_by_its_pixels() -> None:
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:400, 0:400] / 400
    sky = 0.6 + 0.05 * yy + 0.02 * xx + rng.normal(0, 1.5 / 255, (400, 400))

    def crop(top: int, left: int) -> np.ndarray:
        return (np.clip(np.rint(sky[top : top + 48, left : left + 48] * 255), 0, 255)[None] / 255).astype(np.float32)

    places = rng.integers(0, 350, (60, 2))
    train = np.stack([crop(*p) for p in places])
    scored = np.stack([crop(*p) for p in rng.integers(0, 350, (30, 2))])
    scored[1] = crop(places[9][0] + 2, places[9][1] + 1)  # a re-crop 2 and 1 pixels away
    found = image_leakage(scored, train)
    assert 1 in found.near_scored.tolist()
    assert found.near_train[found.near_scored.tolist().index(1)] == 9
    views_only = image_leakage(*(dataclasses.replace(image_features(x), fine=None) for x in (scored, train)))
    assert 1 not in views_only.near_scored.tolist()  # the 8 x 8 views of plain sky crops look alike


def test_the_checked_candidates_are_the_nearest_distinct_ones() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        cand = rng.integers(0, 30, (40, 25))
        distance = rng.random((40, 25)).round(2)
        distance[rng.random(distance.shape) < 0.2] = np.inf
        for i in range(40):  # a candidate found by several searches has one distance
            for c in np.unique(cand[i]):
                distance[i, cand[i] == c] = distance[i, cand[i] == c][0]
        expected = np.full((40, 12), -1)
        for i in range(40):  # straight from the definition: by distance, first occurrences, finite, 12 at most
            seen: list[int] = []
            for j in np.argsort(distance[i], kind="stable"):
                if np.isfinite(distance[i, j]) and cand[i, j] not in seen and len(seen) < 12:
                    seen.append(int(cand[i, j]))
            expected[i, : len(seen)] = seen
        assert np.array_equal(image_search._nearest_candidates(distance, cand, 12), expected)


def test_a_crop_two_training_images_hold_exactly_is_paired_with_the_nearer_under_d() -> None:
    photo = np.random.default_rng(3).random((70, 70)).astype(np.float32)
    scored = photo[None, 10:50, 10:50]
    train = np.stack([photo[12:52, 9:49], photo[50:, 50:].repeat(2, 0).repeat(2, 1)[:40, :40], photo[8:48, 11:51]])
    reference = residual.PixelReference(train, 3)
    for order in ([0, 1, 2], [2, 1, 0]):  # the candidates come nearest under d first
        e = residual.residuals(scored, reference, np.array([order]), 1.3)[0]
        assert e[0] == 0 and e[2] == 0 and e[1] > 0.1  # both repeat the scored pixels exactly
        assert int(np.argmin(e)) == 0  # the first of the equal ones: the nearer under d


def test_beyond_rounding_takes_the_rounding_off_in_quadrature() -> None:
    nearest, second = np.array([0.2, 0.3, 0.0, 0.1]) / 255, np.array([0.5, 0.3, 0.2, np.inf]) / 255
    below = residual.beyond_rounding(nearest, second, 255.0)
    floor = 1 / 12 / 255**2
    assert below[0][[0, 2]].tolist() == [0.0, 0.0]  # within the rounding: none left
    assert below[1][0] == pytest.approx(np.sqrt(0.25 / 255**2 - floor))
    assert below[0][1] == below[1][1] == pytest.approx(np.sqrt(0.09 / 255**2 - floor))
    assert below[0][3] == 0 and below[1][3] == np.inf
    rival_within = residual.beyond_rounding(np.array([0.1]), np.array([0.25]), 1.0)  # 0-255 values: one level a unit
    assert rival_within[0].tolist() == [0.1] and rival_within[1].tolist() == [0.25]  # nothing tells them apart
    assert residual.beyond_rounding(nearest, second, None) == (nearest, second)


def _plain_photo_crops() -> tuple[np.ndarray, np.ndarray, list[int], np.ndarray]:
    """66-pixel 8-bit crops of scikit-image's camera photo (training from the top half, 60 clean from the bottom)
    and 0.8x contrast twins of three of the plainest training crops (luminance spread 2.7 grey levels: sky)."""
    skimage_data = pytest.importorskip("skimage.data")
    rng = np.random.default_rng(0)
    photo = skimage_data.camera() / 255.0
    places = [(int(rng.integers(0, 256 - 66)), int(rng.integers(0, 512 - 66))) for _ in range(100)]
    clean_places = [(int(rng.integers(256, 512 - 66)), int(rng.integers(0, 512 - 66))) for _ in range(60)]
    train, clean = (np.stack([np.rint(photo[None, y : y + 66, x : x + 66] * 255) / 255 for y, x in p])
                    .astype(np.float32) for p in (places, clean_places))
    sources = [int(s) for s in np.argsort(train.std(axis=(1, 2, 3)))[[3, 6, 7]]]
    means = train[sources].mean(axis=(1, 2, 3), keepdims=True)
    twins = (np.clip(np.rint((means + 0.8 * (train[sources] - means)) * 255), 0, 255) / 255).astype(np.float32)
    return train, clean, sources, twins


@pytest.mark.slow
def test_a_contrast_change_of_a_plain_crop_is_found_beyond_its_rounding(monkeypatch) -> None:
    """0.8x contrast twins of plain sky crops, stored in whole grey levels: e to the source is their rounding
    alone, e to another sky crop the grain that the contrast shrank, ratios just above the threshold; less the
    rounding (residual.beyond_rounding) each is found and paired, no more clean crops flagged, and the search's
    ratio of e less the rounding equals one computed from e to every training image by the plain loop."""
    train, clean, sources, twins = _plain_photo_crops()
    scored = np.concatenate([clean, twins])
    result = image_leakage(scored, train, augmented=False)
    pairs = dict(zip(result.near_scored.tolist(), result.near_train.tolist()))
    assert [pairs.get(len(clean) + k) for k in range(3)] == sources
    assert sum(i < len(clean) for i in pairs) <= 1
    monkeypatch.setattr(image_search, "CANDIDATES", len(train))  # every training image a candidate and checked
    monkeypatch.setattr(residual, "CHECKED", len(train))
    features, reference = image_features(twins), image_features(train)
    prepared = image_search.prepare(reference, image_space.contrast_floor(reference.raw_views))
    found = image_search._block_twins(features, prepared, None)
    e = naive_residuals(features.fine, reference.fine, np.tile(np.arange(len(train)), (3, 1)), 3, 1.3)
    order = np.argsort(e, axis=1, kind="stable")
    rows = np.arange(3)
    assert found["residual_index"].tolist() == order[:, 0].tolist() == sources
    assert found["residual"] == pytest.approx(e[rows, order[:, 0]], rel=1e-9)
    assert found["residual_second"] == pytest.approx(e[rows, order[:, 2]], rel=1e-9)  # the runner-up skipped
    beyond = np.sqrt(np.maximum(e**2 - 1 / 12 / 255**2, 0))  # less the rounding, straight from the definition
    slow = beyond[rows, order[:, 0]] / beyond[rows, order[:, 2]]
    plain = e[rows, order[:, 0]] / e[rows, order[:, 2]]
    assert np.all(slow <= 0.1) and np.all(plain > image_search.RELATIVE_THRESHOLD)
    others = [image_search.relative_distances(found[a], found[b]) for a, b in
              (("distance", "second"), ("lattice", "lattice_second"))]
    ratios, indices = image_search._smallest_ratio(found, 255.0)
    assert ratios == pytest.approx(np.minimum.reduce([slow, *others]), rel=1e-6, abs=1e-12)
    assert indices.tolist() == sources
    monkeypatch.setattr(residual, "ROUNDING_VARIANCE", 0.0)
    before = image_leakage(scored, train, augmented=False)
    assert not set(range(len(clean), len(scored))) & set(before.near_scored.tolist())


def test_the_grey_levels_of_every_image_are_read_from_its_pixels() -> None:
    """level_grid: 2 for whole numbers (0-255), 1 for whole multiples of 1/255 ([0, 1] in 8 bits), 0 for neither;
    on_whole_levels reads it at the set's scale of levels, and beyond_rounding leaves the images it marks False."""
    rng = np.random.default_rng(0)
    levels = rng.integers(0, 256, (4, 1, 8, 8)).astype(np.float32)
    images = np.stack([levels[0] / 255, levels[1], rng.random((1, 8, 8)), levels[3] / 255 + 0.3 / 255])
    grid = image_space.level_grid(images.astype(np.float32))
    assert grid.tolist() == [1, 2, 0, 0]
    features = image_space.ImageFeatures(np.zeros(4, dtype="S16"), np.zeros((4, 3, 32, 32), np.float32), (1, 8, 8),
                                         grid=grid)
    assert image_space.on_whole_levels(features, 255.0).tolist() == [True, True, False, False]
    assert image_space.on_whole_levels(features, 1.0).tolist() == [False, True, False, False]
    assert not image_space.on_whole_levels(features, None).any()
    features.grid = None  # built without it: no image taken as rounded
    assert not image_space.on_whole_levels(features, 255.0).any()
    nearest, second = np.array([0.2, 0.2]) / 255, np.array([0.5, 0.5]) / 255
    below = residual.beyond_rounding(nearest, second, 255.0, np.array([True, False]))
    assert below[0][0] == 0.0 and below[1][0] < second[0]
    assert below[0][1] == nearest[1] and below[1][1] == second[1]


@pytest.mark.slow
def test_the_rounding_is_taken_off_only_images_stored_in_whole_levels() -> None:
    """The 0.8x contrast twins of plain sky crops, once stored in 8 bits and once left in float with an error of the
    rounding's size added (uniform, half a level at most): e's ratio is taken less the rounding for the 8-bit ones
    only; the float ones' ratio is the smallest plain ratio of d, e and j, straight from the search's numbers
    (taken less the rounding, they would be smaller)."""
    train, _, sources, twins = _plain_photo_crops()
    means = train[sources].mean(axis=(1, 2, 3), keepdims=True)
    error = np.random.default_rng(1).uniform(-0.5, 0.5, twins.shape) / 255
    unrounded = (means + 0.8 * (train[sources] - means) + error).astype(np.float32)
    reference = image_features(train)
    floor = image_space.contrast_floor(reference.raw_views)
    stored, float_twins = image_features(twins), image_features(unrounded)
    assert stored.grid.tolist() == [1, 1, 1] and float_twins.grid.tolist() == [0, 0, 0]
    prepared = image_search.prepare(reference, floor)
    for features, rounded in ((stored, True), (float_twins, False)):
        ratios, _ = image_search.nearest_twins(features, reference, floor=floor, relative=True)
        found = image_search._block_twins(features, prepared, None)
        plain = np.minimum.reduce([image_search.relative_distances(found[a], found[b]) for a, b in
                                   (("distance", "second"), ("residual", "residual_second"),
                                    ("lattice", "lattice_second"))])
        if rounded:
            assert np.all(ratios < plain) and np.all(ratios <= image_search.RELATIVE_THRESHOLD)
        else:
            assert ratios == pytest.approx(plain, rel=1e-12)
            assert np.all(image_search._smallest_ratio(found, 255.0)[0] < plain)  # every query taken as rounded
