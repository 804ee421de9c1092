"""The translational AEG with mirror images (fitaudit.overfit.mirror), against a brute-force enumeration.

The reference builds every image explicitly (crop the canvas, shift the
window, flip the pixels with numpy), finds g at every point within reach by
scoring all its candidates, and counts the pre-images of g(x) by comparing
images pixel by pixel: n(x') = #{z != x' : g(z) = x'} (Werpachowski et al.
2019, App. B), with none of the group algebra the AEG uses.
"""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit.overfit import overfit_test
from fitaudit.overfit.g3 import check_g3, plan_g3
from fitaudit.overfit.mirror import MirrorTranslationAEG, act, inverse, mirror_set
from fitaudit.overfit.translation import TranslationAEG, centre_crop


class LinearModel:
    def __init__(self, weights: np.ndarray) -> None:
        self.weights, self.n_classes = weights, weights.shape[1]

    def logits(self, x: np.ndarray) -> np.ndarray:
        return x.reshape(len(x), -1).astype(np.float64) @ self.weights


def _problem(seed: int, m: int, stride: int):
    rng = np.random.default_rng(seed)
    side, margin = 4, 3 * stride
    canvases = rng.random((m, 1, side + 2 * margin, side + 2 * margin)).astype(np.float32)
    model = LinearModel(rng.normal(size=(side * side, 3)))
    y = model.logits(centre_crop(canvases, margin)).argmax(axis=1)
    flip = rng.random(m) < 0.25
    y[flip] = (y[flip] + 1) % 3
    return model, canvases, y, margin


def _brute_force(model, canvas, label, *, margin, stride, variant):
    """g(x) and n(g(x)) of one canvas by explicit images (eps = 1)."""
    height = canvas.shape[1] - 2 * margin

    def image(o, w):  # the image crop(F^o C, w), cut explicitly
        source = canvas[..., ::-1] if o else canvas
        r, c = margin + stride * w[0], margin + stride * w[1]
        return np.ascontiguousarray(source[:, r : r + height, c : c + height])

    def candidates(
        o, w
    ):  # F^t tau_v applied to the image: move the window by v, then flip the pixels
        flips, moves = mirror_set(1)
        found = []
        for t, v in zip(flips, moves):
            moved = image(o, (w[0] + v[0], w[1] + v[1]))
            found.append((moved[..., ::-1].copy() if t else moved, float(v @ v)))
        return found

    def outcome(x):
        logits = model.logits(x[None])[0]
        return int(np.argmax(logits)) != label, float(
            np.max(np.delete(logits, label)) - logits[label]
        )

    def g(o, w):
        here = image(o, w)
        if outcome(here)[0]:
            return here
        best, key = here, None
        for x, distance in candidates(o, w):
            wrong, excess = outcome(x)
            score = excess if variant == "strongest" else -distance
            if wrong and (key is None or score > key):
                best, key = x, score
        return best

    x_adv = g(0, (0, 0))
    points = [(o, (r, c)) for o in (0, 1) for r in range(-2, 3) for c in range(-2, 3)]
    mass = sum(
        1
        for o, w in points
        if not np.array_equal(image(o, w), x_adv) and np.array_equal(g(o, w), x_adv)
    )
    return x_adv, mass


@pytest.mark.parametrize("variant", ["strongest", "nearest"])
@pytest.mark.parametrize("stride", [1, 2])
def test_mirror_aeg_matches_the_brute_force(variant: str, stride: int) -> None:
    model, canvases, y, margin = _problem(7 + stride, 10, stride)
    aeg = MirrorTranslationAEG(eps=1, margin=margin, variant=variant, stride=stride, batch_size=37)
    loss = (model.logits(centre_crop(canvases, margin)).argmax(axis=1) != y).astype(float)
    out = aeg.generate(model, canvases, y, loss=loss)
    for i in range(len(y)):
        x_adv, mass = _brute_force(
            model, canvases[i], int(y[i]), margin=margin, stride=stride, variant=variant
        )
        np.testing.assert_array_equal(out.images[i], x_adv)
        assert out.preimage_mass[i] == mass, i
    np.testing.assert_array_equal(centre_crop(out.x_adv, margin), out.images)
    assert out.flipped.any() and out.success.any() and (out.preimage_mass > 0).any()
    # the flip adds candidates: at least as many answers change as with the shifts alone
    shifts_only = TranslationAEG(eps=1, margin=margin, variant=variant, stride=stride).generate(
        model, canvases, y, loss=loss
    )
    assert out.success.sum() >= shifts_only.success.sum()


def test_the_set_is_closed_under_inverses() -> None:
    flips, moves = mirror_set(2)
    back_flip, back_move = inverse(flips, moves)
    o, w = act(
        back_flip,
        back_move,
        *act(flips, moves, np.zeros(len(flips), bool), np.zeros((len(flips), 2), int)),
    )
    assert not o.any() and not w.any()  # u^{-1}(u(x)) = x for every u
    pairs = {(bool(f), tuple(v)) for f, v in zip(flips, moves)}
    assert {(bool(f), tuple(v)) for f, v in zip(back_flip, back_move)} == pairs
    assert len(pairs) == 24 + 25


@pytest.mark.parametrize("variant", ["random", "random2"])
def test_random_mirror_weights_are_the_expected_counts(variant: str) -> None:
    """For a drawn u, n(x') sums P(g(z) = x') = [z right] / |options| over the pre-images z = u^{-1}(x')."""
    model, canvases, y, margin = _problem(3, 20, 1)
    aeg = MirrorTranslationAEG(eps=1, margin=margin, variant=variant, random_state=4)
    loss = (model.logits(centre_crop(canvases, margin)).argmax(axis=1) != y).astype(float)
    out = aeg.generate(model, canvases, y, loss=loss)
    options = (
        8 + 9 + (variant == "random2")
    )  # V_1 and its 9 flipped shifts (and staying, for random2)
    counts = out.preimage_mass * options
    np.testing.assert_allclose(counts, np.rint(counts), atol=1e-9)
    assert np.all(counts <= 17) and (counts > 0).any() and out.flipped.any()


@pytest.mark.slow
def test_the_g3_check_draws_mirror_images_and_sees_a_handed_world() -> None:
    plan = plan_g3(2000, eps=1, mirror=True, random_state=0)
    assert plan.flip is not None and 0.4 < plan.flip.mean() < 0.6  # 25 of the 49 maps flip
    # an arrow always pointing right at a random place of a periodic tile (wrapped around: every shift is a
    # cyclic shift, so shifts keep the density exactly); its mirror image points left
    rng = np.random.default_rng(0)
    tiles = np.zeros((1000, 1, 24, 24), np.float32)
    tiles[:, 0, 7, 4:12] = 1.0
    tiles[:, 0, 5:10, 11] = 1.0
    tiles[:, 0, 6:9, 10] = 1.0
    tiles = np.stack([np.roll(t, tuple(rng.integers(0, 24, 2)), axis=(1, 2)) for t in tiles])
    canvases = np.pad(tiles, ((0, 0), (0, 0), (3, 3), (3, 3)), mode="wrap")
    assert not check_g3(canvases, margin=3, eps=1).violated
    check = check_g3(canvases, margin=3, eps=1, mirror=True)
    assert check.violated and check.mirror


def test_overfit_test_runs_the_mirror_check() -> None:
    model, canvases, y, margin = _problem(5, 40, 1)
    result = overfit_test(
        model, canvases, y, MirrorTranslationAEG(eps=1, margin=margin), delta=0.05
    )
    assert result.g3 is not None and result.g3.mirror
