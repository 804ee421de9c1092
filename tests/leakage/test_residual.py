"""The pixel residual e (fitaudit.leakage.residual): the FFT formulation against a plain loop, and what it sees."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from naive_residual import naive_residuals

from fitaudit.leakage import image_features, image_leakage, image_search, residual


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
