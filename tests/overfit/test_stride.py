"""Translational AEGs with a stride: shifts beyond a model's augmentation (issue 50, items 2 and 3).

``TranslationAEG(stride=s)`` uses ``V = {s u : u in V_eps}``; its weight
``h_g = 1 / (1 + n(x'))`` is the paper's (Werpachowski et al. 2019, App. B)
over that symmetric set. Checked against the direct enumeration of the
reference implementation, and by simulating the test on honest data where
the shifts preserve the density exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit._errors import InputError
from fitaudit.overfit import overfit_test
from fitaudit.overfit.g3 import check_g3, plan_g3
from fitaudit.overfit.mirror import MirrorTranslationAEG
from fitaudit.overfit.translation import VARIANTS, TranslationAEG, centre_crop, random_shifts
from reference_translation import naive_translation_aeg


class LinearModel:
    """Fixed linear scores on the flattened crop (chosen before any sample is drawn: independent of it)."""

    def __init__(self, weights: np.ndarray, bias: np.ndarray | None = None) -> None:
        self.weights = weights
        self.bias = np.zeros(weights.shape[1]) if bias is None else bias
        self.n_classes = weights.shape[1]

    def logits(self, x: np.ndarray) -> np.ndarray:
        return x.reshape(len(x), -1).astype(np.float64) @ self.weights + self.bias


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("stride", [2, 3])
def test_strided_aeg_matches_the_direct_enumeration(variant: str, stride: int) -> None:
    rng = np.random.default_rng(stride)
    side, margin, m = 5, 3 * stride, 30
    canvases = rng.random((m, 2, side + 2 * margin, side + 2 * margin)).astype(np.float32)
    model = LinearModel(rng.normal(size=(2 * side * side, 3)))
    y = model.logits(centre_crop(canvases, margin)).argmax(axis=1)
    flip = rng.random(m) < 0.2
    y[flip] = (y[flip] + 1) % 3
    aeg = TranslationAEG(
        eps=1, margin=margin, variant=variant, stride=stride, batch_size=41, random_state=3
    )
    loss = (model.logits(centre_crop(canvases, margin)).argmax(axis=1) != y).astype(float)
    fast = aeg.generate(model, canvases, y, loss=loss)
    drawn = None if aeg.deterministic else random_shifts(variant, 1, m, 3)
    slow = naive_translation_aeg(
        model, canvases, y, eps=1, margin=margin, variant=variant, drawn=drawn, stride=stride
    )
    np.testing.assert_array_equal(fast.shift, slow.shift)
    np.testing.assert_array_equal(fast.images, slow.images)
    np.testing.assert_array_equal(fast.adv_loss, slow.adv_loss)
    np.testing.assert_allclose(fast.weight, slow.weight, rtol=1e-12)
    assert fast.success.any() and (fast.preimage_mass > 0).any()
    moved = np.any(fast.shift != 0, axis=1)
    assert moved.any() and np.all(fast.shift[moved] % stride == 0)  # only lattice shifts, in pixels
    assert np.all(np.abs(fast.shift).max(axis=1)[moved] == stride)
    assert fast.evaluations <= m * ((4 + 1) ** 2 + 1)  # the cost of eps = 1, whatever the stride


def test_stride_needs_its_margin_and_changes_the_key() -> None:
    with pytest.raises(InputError, match=r"3 \* eps \* stride = 12 .* Use eps <= 1"):
        TranslationAEG(eps=2, margin=11, stride=2)
    with pytest.raises(InputError, match="at least 6 spare pixels per side at this stride"):
        TranslationAEG(eps=1, margin=5, stride=2)
    plain, strided = (
        TranslationAEG(eps=1, margin=6, random_state=0),
        TranslationAEG(eps=1, margin=6, stride=2, random_state=0),
    )
    assert plain.fingerprint() != strided.fingerprint() and "stride=2" in repr(strided)
    assert (
        plain.fingerprint()
        == TranslationAEG(eps=1, margin=6, stride=1, random_state=0).fingerprint()
    )


@pytest.mark.slow
def test_the_g3_check_draws_the_strided_offsets() -> None:
    plan = plan_g3(400, eps=1, stride=4, random_state=1)
    assert set(np.unique(np.abs(plan.shift))) == {0, 4} and np.all(
        np.abs(plan.shift).max(axis=1) == 4
    )
    # a square always in the middle: told apart at stride 4 as at stride 1
    centred = np.zeros((300, 1, 8 + 24, 8 + 24))
    centred[:, :, 14:18, 14:18] = 1.0
    check = check_g3(centred, margin=12, eps=1, stride=4)
    assert check.violated and check.stride == 4


def _honest_sample(
    rng: np.random.Generator, m: int, base: int, margin: int
) -> tuple[np.ndarray, np.ndarray]:
    """Periodic noise images (a random ``base x base`` tile wrapped around): a crop at any offset is a cyclic
    shift of the tile, whose pixels are exchangeable, so every shift keeps the density exactly (G3); the label
    (whether the tile is bright, with 20% of labels flipped) is the same for every shift (G1)."""
    tiles = rng.random((m, 1, base, base))
    canvases = np.pad(
        tiles, ((0, 0), (0, 0), (margin, margin), (margin, margin)), mode="wrap"
    ).astype(np.float32)
    labels = (tiles.mean(axis=(1, 2, 3)) > 0.5).astype(np.int64)
    flip = rng.random(m) < 0.2
    labels[flip] = 1 - labels[flip]
    return canvases, labels


def _rejections_on_honest_data(aeg: TranslationAEG | MirrorTranslationAEG, base: int) -> tuple[int, float]:
    """The test with ``aeg`` on 200 honest samples (m = 200, ``base``-px tiles wrapped to ``aeg.margin``): a fixed
    model that does not look at shifts the same way at every pixel (random positive weights), so shifts do change
    its answers. Returns the rejections and the share of examples with a successful adversarial example."""
    rng = np.random.default_rng(2024)
    runs, m = 200, 200
    weights = rng.random((base * base, 1))
    model = LinearModel(
        np.hstack([np.zeros((base * base, 1)), weights - weights.mean() + 1 / base**2]),
        bias=np.array([0.0, -0.5]),
    )
    rejected, successes = 0, 0
    for _ in range(runs):
        canvases, labels = _honest_sample(rng, m, base, aeg.margin)
        result = overfit_test(model, canvases, labels, aeg, delta=0.05, check_density=False)
        rejected += bool(result.reject)
        successes += int(result.n_success)
    return rejected, successes / (runs * m)


@pytest.mark.slow
def test_type_one_error_of_the_strided_test_on_honest_data_is_at_most_the_level() -> None:
    """eps = 1, stride 2 on 7-px tiles (shifts of 2 px, distinct cyclic shifts): the test rejects at most at its
    level (0.05) beyond binomial noise."""
    rejected, shifted = _rejections_on_honest_data(TranslationAEG(eps=1, margin=6, stride=2), 7)
    assert shifted > 0.05  # the shifts change answers: the test had something to see
    assert rejected <= 17  # P(Binomial(200, 0.05) > 17) < 0.03


@pytest.mark.slow
def test_type_one_error_of_shifts_of_4_px_and_their_mirror_images_is_at_most_the_level() -> None:
    """The photo benchmark's AEG (eps 2, stride 4, with mirror images; P = 24) on 7-px tiles: every shift up to
    24 px is a distinct cyclic shift of the tile, and a mirrored tile of exchangeable pixels has the same density
    and brightness (G1, G3 hold exactly); the test rejects at most at its level beyond binomial noise."""
    rejected, shifted = _rejections_on_honest_data(MirrorTranslationAEG(eps=2, margin=24, stride=4), 7)
    assert shifted > 0.05
    assert rejected <= 17
