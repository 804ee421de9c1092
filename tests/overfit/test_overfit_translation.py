"""overfit_test and n_model_test with the translational AEG: canvases in, crops scored."""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.models import as_classifier
from fitaudit.overfit import (
    AdversarialExampleGenerator,
    LinearGradientAEG,
    TranslationAEG,
    centre_crop,
    n_model_test,
    overfit_test,
    pairwise_test,
)
from fitaudit.stats import bernstein_pvalue

torch = pytest.importorskip("torch")

SIDE, EPS = 8, 1
MARGIN = 3 * EPS


def pooled_cnn(seed: int) -> object:
    """A CNN with global pooling: it accepts canvases as readily as crops (the trap to avoid)."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 6, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveMaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(24, 3),
    ).eval()


def blob_canvases(m: int, seed: int) -> np.ndarray:
    """Canvases (m, 3, SIDE + 2P, SIDE + 2P) in [0, 1] with a bright square at a random place."""
    rng = np.random.default_rng(seed)
    side = SIDE + 2 * MARGIN
    canvases = np.full((m, 3, side, side), 0.2, dtype=np.float32)
    corners = rng.integers(0, side - 4, size=(m, 2))
    colours = rng.random((m, 3)).astype(np.float32)
    for canvas, (r, c), colour in zip(canvases, corners, colours):
        canvas[:, r : r + 4, c : c + 4] = colour[:, None, None]
    return canvases


@pytest.fixture(scope="module")
def problem() -> tuple[object, np.ndarray, np.ndarray]:
    net = pooled_cnn(0)
    canvases = blob_canvases(80, 1)
    model = as_classifier(net)
    y = model.predict(centre_crop(canvases, MARGIN))
    y[::4] = (y[::4] + 1) % 3  # a quarter wrong
    return net, canvases, y


def test_overfit_test_scores_the_centre_crops(problem: tuple[object, np.ndarray, np.ndarray]) -> None:
    net, canvases, y = problem
    aeg = TranslationAEG(eps=EPS, margin=MARGIN, variant="strongest")
    result = overfit_test(net, canvases, y, aeg)
    model = as_classifier(net)
    loss_crops = (model.predict(centre_crop(canvases, MARGIN)) != y).astype(float)
    loss_canvases = (model.predict(canvases) != y).astype(float)
    assert not np.array_equal(loss_crops, loss_canvases)  # else the test below proves nothing
    assert result.risk_plain == pytest.approx(loss_crops.mean())
    out = aeg.generate(model, canvases, y, loss=loss_crops)
    reference = pairwise_test(loss_crops, out.weighted_adv_loss, U=1.5)
    assert result.pvalue == pytest.approx(reference.pvalue)
    assert result.statistic == pytest.approx(reference.statistic)
    assert result.U == 1.5 and result.m == 80 and result.n_success == int(out.success.sum())
    assert 0 < result.evaluations <= 80 * (4 * EPS + 1) ** 2
    assert any("(G3)" in note for note in result.warnings)


def test_n_model_test_on_canvases(problem: tuple[object, np.ndarray, np.ndarray]) -> None:
    _, canvases, y = problem
    nets = [pooled_cnn(seed) for seed in (0, 1)]
    aeg = TranslationAEG(eps=EPS, margin=MARGIN, variant="random2", random_state=3)
    result = n_model_test(nets, canvases, y, aeg)
    terms = []
    for net in nets:
        single = overfit_test(net, canvases, y, aeg)
        model = as_classifier(net)
        loss = (model.predict(centre_crop(canvases, MARGIN)) != y).astype(float)
        terms.append(aeg.generate(model, canvases, y, loss=loss).weighted_adv_loss - loss)
        entry = result.per_model[len(terms) - 1]
        assert entry["pvalue"] == pytest.approx(single.pvalue)
        assert entry["ci_pvalue"] == pytest.approx(single.ci.pvalue)
        assert entry["evaluations"] == single.evaluations
        assert entry["risk_adversarial"] == pytest.approx(single.risk_adversarial)
    mean_terms = np.mean(terms, axis=0)
    assert result.statistic == pytest.approx(mean_terms.mean())
    assert result.pvalue == pytest.approx(bernstein_pvalue(mean_terms.mean(), mean_terms.var(), 80, 2.0))
    assert result.U == 2.0 and any("(G3)" in note for note in result.warnings)


def test_a_callable_that_does_not_declare_its_classes(
    problem: tuple[object, np.ndarray, np.ndarray],
) -> None:
    """n_classes is read from one call on the crops; the canvases never reach the model."""
    net, canvases, y = problem
    seen: list[tuple[int, ...]] = []

    def scores(x: np.ndarray) -> np.ndarray:
        seen.append(x.shape[1:])
        with torch.no_grad():
            return net(torch.from_numpy(np.ascontiguousarray(x))).numpy()

    aeg = TranslationAEG(eps=EPS, margin=MARGIN)
    result = overfit_test(as_classifier(scores), canvases, y, aeg)
    assert result.pvalue == pytest.approx(overfit_test(net, canvases, y, aeg).pvalue)
    assert set(seen) == {(3, SIDE, SIDE)}


def test_bad_canvases_are_reported(problem: tuple[object, np.ndarray, np.ndarray]) -> None:
    net, canvases, y = problem
    aeg = TranslationAEG(eps=EPS, margin=MARGIN)
    with pytest.raises(InputError, match=r"`x` must have values in \[0, 1\]"):
        overfit_test(net, canvases * 255, y, aeg)
    with pytest.raises(InputError, match="too small for a margin of 3"):
        overfit_test(net, canvases[:, :, :6, :6], y, aeg)
    with pytest.raises(InputError, match="`y` must have 80 entries"):
        overfit_test(net, canvases, y[:-1], aeg)


def test_model_inputs_is_the_identity_by_default() -> None:
    from fitaudit.data import GaussianMargin

    aeg = LinearGradientAEG(1.0, GaussianMargin(5))
    x = np.ones((3, 5))
    assert isinstance(aeg, AdversarialExampleGenerator) and aeg.model_inputs(x) is x
