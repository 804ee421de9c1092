"""p-value curves of the translational AEGs: subsampling, checkpoints, plot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fitaudit._errors import InputError
from fitaudit.overfit.independence import pairwise_test
from fitaudit.overfit.translation import TranslationAEG, centre_crop
from fitaudit.overfit.translation_curves import example_terms, pvalue_curves, subsample_pvalues
from fitaudit.report.figures import save_figure
from fitaudit.report.overfit import pvalue_curves_figure

#: calls of Linear.logits, per weights id (outside the model, so its fingerprint does not change)
CALLS: dict[int, int] = {}


class Linear:
    def __init__(self, weights: np.ndarray) -> None:
        self.weights, self.n_classes = weights, weights.shape[1]

    def logits(self, x: np.ndarray) -> np.ndarray:
        CALLS[id(self.weights)] = CALLS.get(id(self.weights), 0) + 1
        return x.reshape(len(x), -1).astype(np.float64) @ self.weights

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.logits(x).argmax(axis=1)


def problem(seed: int, m: int) -> tuple[Linear, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    canvases = rng.random((m, 1, 10, 10)).astype(np.float32)
    model = Linear(rng.normal(size=(16, 2)))
    y = model.predict(centre_crop(canvases, 3))
    y[: m // 5] = 1 - y[: m // 5]
    return model, canvases, y


def test_subsample_of_everything_is_the_full_test() -> None:
    model, canvases, y = problem(0, 60)
    terms = example_terms(model, canvases, y, TranslationAEG(eps=1, margin=3))
    curves = subsample_pvalues(terms, [60], U=1.5, repetitions=3, delta=0.05, random_state=0)
    full = pairwise_test(terms["loss"], terms["weighted_adv_loss"], U=1.5, delta=0.05).pvalue
    assert curves["pairwise"] == [pytest.approx(full)]
    with pytest.raises(InputError, match="more than the 60 examples"):
        subsample_pvalues(terms, [61], U=1.5, repetitions=1, delta=0.05, random_state=0)


@pytest.mark.slow
def test_curves_resume_from_checkpoints_and_plot(tmp_path: Path) -> None:
    model, canvases, y = problem(1, 80)
    options = dict(
        eps=1, margin=3, variants=["strongest", "random"], sizes=[20, 80], repetitions=4,
        checkpoint_dir=tmp_path, random_state=3,
    )
    first = pvalue_curves(model, {"train": (canvases, y)}, **options)
    assert len(list(tmp_path.glob("*.npz"))) == 2
    CALLS.clear()
    again = pvalue_curves(Linear(model.weights.copy()), {"train": (canvases, y)}, **options)
    assert again["curves"] == first["curves"]
    assert sum(CALLS.values()) == 0  # the same weights: the checkpoints were used
    entry = first["curves"]["train"]["strongest"]
    assert len(entry["pairwise"]) == 2 and all(0 <= p <= 1 for p in entry["ci"])
    assert entry["risk_plain"] == pytest.approx(np.mean(y != model.predict(centre_crop(canvases, 3))))
    png = Path(save_figure(pvalue_curves_figure(first, title="toy"), tmp_path / "curves.png"))
    assert png.stat().st_size > 1000


@pytest.mark.parametrize("change", ["weights", "canvases", "labels", "eps", "variant", "seed"])
def test_terms_of_another_model_data_or_aeg_are_never_reused(tmp_path: Path, change: str) -> None:
    model, canvases, y = problem(2, 40)
    aeg = dict(eps=1, margin=3, variant="random", random_state=5)
    example_terms(model, canvases, y, TranslationAEG(**aeg), checkpoint_dir=tmp_path)
    if change == "weights":
        model = Linear(model.weights + 1e-3)
    elif change == "canvases":
        canvases = canvases.copy()
        canvases[0, 0, 0, 0] = 1 - canvases[0, 0, 0, 0]
    elif change == "labels":
        y = 1 - y
    else:
        aeg |= {"eps": {"eps": 2, "margin": 6}, "variant": {"variant": "random2"}, "seed": {"random_state": 6}}[change]
        canvases = np.pad(canvases, ((0, 0), (0, 0), (3, 3), (3, 3))) if change == "eps" else canvases
    CALLS.clear()
    fresh = example_terms(model, canvases, y, TranslationAEG(**aeg))
    stored = example_terms(model, canvases, y, TranslationAEG(**aeg), checkpoint_dir=tmp_path)
    assert CALLS[id(model.weights)] > 0 and len(list(tmp_path.glob("*.npz"))) == 2
    for key in fresh:
        np.testing.assert_array_equal(stored[key], fresh[key])
