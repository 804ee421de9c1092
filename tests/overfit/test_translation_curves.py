"""p-value curves of the translational AEGs: subsampling, checkpoints, plot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fitaudit._errors import InputError
from fitaudit.overfit.independence import pairwise_test
from fitaudit.overfit.translation import TranslationAEG, centre_crop
from fitaudit.overfit.translation_curves import (
    example_terms,
    plot_curves,
    pvalue_curves,
    subsample_pvalues,
)


class Linear:
    def __init__(self, weights: np.ndarray) -> None:
        self.weights, self.n_classes = weights, weights.shape[1]

    def logits(self, x: np.ndarray) -> np.ndarray:
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


def test_curves_resume_from_checkpoints_and_plot(tmp_path: Path) -> None:
    model, canvases, y = problem(1, 80)
    options = dict(
        eps=1, margin=3, variants=["strongest", "random"], sizes=[20, 80], repetitions=4,
        checkpoint_dir=tmp_path, random_state=3,
    )
    first = pvalue_curves(model, {"train": (canvases, y)}, **options)
    assert sorted(p.name for p in tmp_path.glob("*.npz")) == [
        "train-random-eps1.npz", "train-strongest-eps1.npz"
    ]

    class Broken(Linear):
        def logits(self, x: np.ndarray) -> np.ndarray:
            raise AssertionError("the checkpoint should have been used")

    again = pvalue_curves(Broken(model.weights), {"train": (canvases, y)}, **options)
    assert again["curves"] == first["curves"]
    entry = first["curves"]["train"]["strongest"]
    assert len(entry["pairwise"]) == 2 and all(0 <= p <= 1 for p in entry["ci"])
    assert entry["error_rate"] == pytest.approx(np.mean(y != model.predict(centre_crop(canvases, 3))))
    png = plot_curves(first, tmp_path / "curves.png", title="toy")
    assert png.stat().st_size > 1000
