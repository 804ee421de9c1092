"""Translational AEGs: cached evaluation against the naive enumeration, tie rule, densities, errors."""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit._errors import InputError
from fitaudit.overfit.translation import (
    DENSITY_WARNING,
    VARIANTS,
    TranslationAEG,
    centre_crop,
    random_shifts,
)
from fitaudit.overfit.translation_grid import crop, shift_canvases, shift_grid
from reference_translation import naive_translation_aeg


class LinearModel:
    """Random linear scores on the flattened image (a tiny stand-in for a network)."""

    def __init__(self, weights: np.ndarray) -> None:
        self.weights = weights
        self.n_classes = weights.shape[1]

    def logits(self, x: np.ndarray) -> np.ndarray:
        return x.reshape(len(x), -1).astype(np.float64) @ self.weights


class LookupModel:
    """Scores that depend only on where the crop sits in a canvas with unique pixel values.

    Channel 0 of the canvas holds ``(r * width + c) / size``; the top-left pixel of a
    crop therefore tells its shift w relative to the centre crop. ``table`` maps a
    shift to its logits; every other shift gets ``default``.
    """

    def __init__(self, canvas_side: int, margin: int, table: dict, default=(5.0, 0.0)) -> None:
        self.side, self.margin = canvas_side, margin
        self.table, self.default = table, np.asarray(default, dtype=float)
        self.n_classes = len(default)

    def canvases(self, m: int = 1) -> np.ndarray:
        ids = np.arange(self.side * self.side, dtype=np.float64) / (self.side * self.side)
        return np.tile(ids.reshape(1, 1, self.side, self.side), (m, 1, 1, 1)).astype(np.float32)

    def logits(self, x: np.ndarray) -> np.ndarray:
        ids = np.rint(x[:, 0, 0, 0].astype(np.float64) * self.side * self.side).astype(int)
        shifts = [(i // self.side - self.margin, i % self.side - self.margin) for i in ids]
        return np.array([self.table.get(s, self.default) for s in shifts], dtype=float)


def random_problem(seed: int, *, m: int, eps: int, side: int = 5, channels: int = 2):
    """Random canvases, a random linear model, labels mostly equal to its predictions."""
    rng = np.random.default_rng(seed)
    margin = 3 * eps
    canvases = rng.random((m, channels, side + 2 * margin, side + 2 * margin)).astype(np.float32)
    model = LinearModel(rng.normal(size=(channels * side * side, 3)))
    y = model.logits(centre_crop(canvases, margin)).argmax(axis=1)
    flip = rng.random(m) < 0.2
    y[flip] = (y[flip] + 1) % 3
    return model, canvases, y, margin


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("eps", [1, 2])
def test_cached_matches_naive_enumeration(variant: str, eps: int) -> None:
    model, canvases, y, margin = random_problem(10 + eps, m=12 if eps == 2 else 30, eps=eps)
    aeg = TranslationAEG(eps=eps, margin=margin, variant=variant, batch_size=97, random_state=5)
    loss = (model.logits(centre_crop(canvases, margin)).argmax(axis=1) != y).astype(float)
    fast = aeg.generate(model, canvases, y, loss=loss)
    drawn = None if aeg.deterministic else random_shifts(variant, eps, len(y), 5)
    slow = naive_translation_aeg(
        model, canvases, y, eps=eps, margin=margin, variant=variant, drawn=drawn
    )
    np.testing.assert_array_equal(fast.shift, slow.shift)
    np.testing.assert_array_equal(fast.images, slow.images)
    np.testing.assert_array_equal(fast.x_adv, slow.x_adv)
    np.testing.assert_array_equal(fast.success, slow.success)
    np.testing.assert_array_equal(fast.adv_loss, slow.adv_loss)
    np.testing.assert_array_equal(fast.clean_loss, loss)
    np.testing.assert_allclose(fast.weight, slow.weight, rtol=1e-12)
    np.testing.assert_allclose(fast.preimage_mass, slow.preimage_mass, rtol=1e-12)
    # the problem must exercise the interesting cases, or the comparison proves little
    assert fast.success.any() and (fast.clean_loss == 1).any()
    assert (fast.preimage_mass > 0).any()
    side = 4 * eps + 1 if aeg.deterministic else 2 * eps + 1
    assert fast.evaluations <= len(y) * (side**2 + 1) <= len(y) * (6 * eps + 1) ** 2
    if aeg.deterministic:
        assert slow.evaluations >= 2 * fast.evaluations


def test_naive_costs_at_least_ten_times_more_at_eps_3() -> None:
    model, canvases, y, margin = random_problem(4, m=2, eps=3, side=4, channels=1)
    y = model.logits(centre_crop(canvases, margin)).argmax(axis=1)
    fast = TranslationAEG(eps=3, margin=margin)._generate(model, canvases, y)
    slow = naive_translation_aeg(model, canvases, y, eps=3, margin=margin, variant="strongest")
    np.testing.assert_allclose(fast.weight, slow.weight)
    assert slow.evaluations >= 10 * fast.evaluations


def test_x_adv_canvases_have_the_adversarial_image_as_centre_crop() -> None:
    model, canvases, y, margin = random_problem(1, m=20, eps=1)
    out = TranslationAEG(eps=1, margin=margin)._generate(model, canvases, y)
    np.testing.assert_array_equal(centre_crop(out.x_adv, margin), out.images)
    np.testing.assert_array_equal(out.images, crop(canvases, margin, out.shift))
    assert out.x_adv.shape == canvases.shape


def test_shift_sign_convention() -> None:
    canvas = np.arange(49, dtype=np.float32).reshape(1, 1, 7, 7) / 49
    moved = crop(canvas, 2, np.array([[1, -2]]))
    # tau_v(x) is the crop whose top-left corner is at (P + v_row, P + v_col)
    np.testing.assert_array_equal(moved[0, 0], canvas[0, 0, 3:6, 0:3])
    np.testing.assert_array_equal(centre_crop(shift_canvases(canvas, np.array([[1, -2]])), 2), moved)


def test_shift_grid_is_row_major_and_excludes_zero() -> None:
    grid = shift_grid(1, include_zero=False)
    assert grid.tolist() == [[-1, -1], [-1, 0], [-1, 1], [0, -1], [0, 1], [1, -1], [1, 0], [1, 1]]
    assert len(shift_grid(5, include_zero=False)) == 120


def tie_model(table: dict) -> tuple[LookupModel, np.ndarray]:
    model = LookupModel(canvas_side=3 + 6, margin=3, table=table)
    return model, model.canvases()


def test_strongest_breaks_ties_in_row_major_order() -> None:
    # equal l_exc = 2 at (1, -1) and (-1, 1): row-major picks (-1, 1), column-major would not
    model, canvases = tie_model({(1, -1): (0.0, 2.0), (-1, 1): (0.0, 2.0), (0, 1): (0.0, 1.0)})
    for variant in ("strongest",):
        out = TranslationAEG(eps=1, margin=3, variant=variant)._generate(model, canvases, [0])
        assert out.shift.tolist() == [[-1, 1]]
    slow = naive_translation_aeg(model, canvases, [0], eps=1, margin=3, variant="strongest")
    assert slow.shift.tolist() == [[-1, 1]]


def test_strongest_takes_the_largest_excess_logit() -> None:
    model, canvases = tie_model({(1, -1): (0.0, 2.0), (1, 1): (0.0, 3.5), (0, 1): (0.0, 1.0)})
    out = TranslationAEG(eps=1, margin=3, variant="strongest")._generate(model, canvases, [0])
    assert out.shift.tolist() == [[1, 1]]


@pytest.mark.parametrize(
    ("wrong", "expected"),
    [
        ([(1, 0), (0, 1), (-1, -1)], [0, 1]),
        ([(1, 0), (0, -1)], [0, -1]),
        ([(1, 1), (-1, 1), (1, -1)], [-1, 1]),
        ([(1, 1), (0, 1)], [0, 1]),
    ],
)
def test_nearest_takes_the_smallest_norm_then_row_major(wrong: list, expected: list) -> None:
    model, canvases = tie_model({s: (0.0, 9.0 - k) for k, s in enumerate(wrong)})
    out = TranslationAEG(eps=1, margin=3, variant="nearest")._generate(model, canvases, [0])
    assert out.shift.tolist() == [expected]
    slow = naive_translation_aeg(model, canvases, [0], eps=1, margin=3, variant="nearest")
    assert slow.shift.tolist() == [expected]


@pytest.mark.parametrize(
    ("variant", "weight"),
    [("strongest", 1 / 9), ("nearest", 1 / 9), ("random", 1 / 2), ("random2", 9 / 17)],
)
def test_hand_computed_density_with_one_misclassified_translation(
    variant: str, weight: float
) -> None:
    # only tau_(1,1)(x) is misclassified. Strongest/nearest: every neighbour z = tau_{(1,1)-u}(x)
    # is right and sees (1,1) as its only wrong candidate, so n = 8. Random: each of the
    # 8 neighbours picks it with probability 1/8 (random) or 1/9 (random2).
    model, canvases = tie_model({(1, 1): (0.0, 1.0)})
    canvases = np.repeat(canvases, 200, axis=0)
    aeg = TranslationAEG(eps=1, margin=3, variant=variant, random_state=0)
    out = aeg._generate(model, canvases, np.zeros(200, dtype=int))
    hit = np.all(out.shift == [1, 1], axis=1)
    assert hit.any()
    np.testing.assert_allclose(out.weight[hit], weight)
    np.testing.assert_array_equal(out.success, hit)


def test_misclassified_points_stay_and_strongest_nearest_succeed_together() -> None:
    model, canvases, y, margin = random_problem(7, m=60, eps=1)
    outs = {
        v: TranslationAEG(eps=1, margin=margin, variant=v, random_state=1)._generate(
            model, canvases, y
        )
        for v in VARIANTS
    }
    wrong = outs["strongest"].clean_loss == 1
    for out in outs.values():
        assert np.all(out.shift[wrong] == 0)
        assert np.all(out.adv_loss[wrong] == 1)
        assert np.all((out.weight > 0) & (out.weight <= 1))
    np.testing.assert_array_equal(outs["strongest"].success, outs["nearest"].success)
    assert np.all(np.abs(outs["random"].shift[~wrong]).max(axis=1) == 1)
    assert np.all(outs["strongest"].weight[outs["strongest"].success] <= 0.5)


def test_random_shifts_are_uniform_and_seeded() -> None:
    draws = random_shifts("random", 1, 9000, 3)
    np.testing.assert_array_equal(draws, random_shifts("random", 1, 9000, 3))
    values, counts = np.unique(draws, axis=0, return_counts=True)
    assert len(values) == 8 and not np.any(np.all(values == 0, axis=1))
    assert np.all(np.abs(counts - 9000 / 8) < 5 * np.sqrt(9000 / 8))
    values2 = np.unique(random_shifts("random2", 1, 9000, 3), axis=0)
    assert len(values2) == 9


def test_aeg_flags() -> None:
    assert TranslationAEG(eps=1, margin=3).deterministic
    assert not TranslationAEG(eps=1, margin=3, variant="random2").deterministic
    assert TranslationAEG(eps=2, margin=6).requires_density_preservation
    assert "(G3)" in DENSITY_WARNING and "MNIST" in DENSITY_WARNING


def test_bad_eps_and_margin() -> None:
    with pytest.raises(InputError, match="`eps` must be a positive integer; got 0"):
        TranslationAEG(eps=0, margin=3)
    with pytest.raises(InputError, match=r"`eps` must be an integer"):
        TranslationAEG(eps=1.5, margin=6)
    with pytest.raises(InputError, match=r"`margin` must be at least 3 \* eps = 6 .* got 5\. Use eps <= 1 or"):
        TranslationAEG(eps=2, margin=5)
    with pytest.raises(InputError, match=r"got 0\. The translational AEG needs canvases with at least 3 spare") as caught:
        TranslationAEG(eps=1, margin=0)
    assert "eps <= 0" not in str(caught.value)
    with pytest.raises(InputError, match="`variant` must be one of"):
        TranslationAEG(eps=1, margin=3, variant="farthest")


def test_bad_images_and_labels() -> None:
    model, canvases, y, margin = random_problem(0, m=4, eps=1)
    aeg = TranslationAEG(eps=1, margin=margin)
    with pytest.raises(InputError, match=r"`x` must have values in \[0, 1\]"):
        aeg.generate(model, canvases * 255, y, loss=np.zeros(4))
    with pytest.raises(InputError, match="`x` must have 4 dimension"):
        aeg.generate(model, canvases[:, 0], y, loss=np.zeros(4))
    with pytest.raises(InputError, match="too small for a margin of 3"):
        aeg.generate(model, canvases[:, :, :6, :6], y, loss=np.zeros(4))
    with pytest.raises(InputError, match="model has 3 classes"):
        aeg.generate(model, canvases, np.array([0, 1, 2, 3]), loss=np.zeros(4))
    with pytest.raises(InputError, match="`y` must have 4 entries"):
        aeg.generate(model, canvases, y[:3], loss=np.zeros(4))


def test_model_with_wrong_output_width_is_reported() -> None:
    model, canvases, y, margin = random_problem(0, m=4, eps=1)
    model.n_classes = 4  # claims 4 classes, returns 3 scores
    with pytest.raises(InputError, match="returned 3 scores per example but `n_classes` is 4"):
        TranslationAEG(eps=1, margin=margin)._generate(model, canvases, y)


def test_generate_refuses_a_loss_not_measured_on_the_centre_crops() -> None:
    model, canvases, y, margin = random_problem(3, m=30, eps=1)
    aeg = TranslationAEG(eps=1, margin=margin)
    loss = (model.logits(aeg.model_inputs(canvases)).argmax(axis=1) != y).astype(float)
    assert aeg.generate(model, canvases, y, loss=loss).clean_loss.tolist() == loss.tolist()
    right = np.flatnonzero(loss == 0)[:2]
    loss[right] = 1.0  # as if scored on something else; g moves at most these two
    with pytest.raises(InputError, match=r"(differs on 2 example\(s\))|(\(G2\))"):
        aeg.generate(model, canvases, y, loss=loss)


def test_accepts_a_torch_module_through_the_adapter() -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(2 * 5 * 5, 3))
    rng = np.random.default_rng(0)
    canvases = rng.random((6, 2, 11, 11)).astype(np.float32)
    y = rng.integers(0, 3, size=6)
    out = TranslationAEG(eps=1, margin=3)._generate(net, canvases, y)
    assert out.images.shape == (6, 2, 5, 5) and out.evaluations <= 6 * 25


def test_seed_is_checked_once_and_a_generator_gives_a_recorded_int():
    aeg = TranslationAEG(eps=1, margin=3, variant="random", random_state=np.random.default_rng(2))
    assert aeg.random_state == int(np.random.default_rng(2).integers(0, 2**31 - 1))
    same = TranslationAEG(eps=1, margin=3, variant="random", random_state=aeg.random_state)
    assert aeg.fingerprint() == same.fingerprint()
    assert isinstance(TranslationAEG(eps=1, margin=3, variant="random").random_state, int)
    with pytest.raises(InputError, match="`random_state` must be a non-negative integer seed; got -1"):
        TranslationAEG(eps=1, margin=3, variant="random", random_state=-1)
