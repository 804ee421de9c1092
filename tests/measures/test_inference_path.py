"""Measures that only need a network's outputs run them through the one inference path (issue 24).

Naive reference: eager torch on the same inputs (``_torch.predict``), the path
weight perturbations still use.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

from host_outputs import output_function  # noqa: E402

from fitaudit.measures import _torch as T  # noqa: E402
from fitaudit.measures.dbi_mixup import labelwise_mixup_accuracy  # noqa: E402
from fitaudit.models.inference import LOGIT_ATOL, LOGIT_RTOL, using_backend  # noqa: E402


def _net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32, 4),
    )


def _data(n: int = 120) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    return rng.normal(size=(n, 3, 8, 8)).astype(np.float32), rng.integers(0, 4, n)


@pytest.mark.parametrize("backend", ["torch", "onnx"])
def test_outputs_agree_with_eager_torch_and_margin_gamma_keeps_the_mode(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("FITAUDIT_CACHE_DIR", str(tmp_path))
    net, (x, y) = _net(), _data()
    net.train()
    expected = T.predict(net, x).double().numpy()
    with using_backend(backend):
        T.margin_gamma(net, x, y)
        assert net.training  # the caller's mode is left as it was
        got = output_function(net)(x).astype(np.float64)
    scale = np.abs(expected).max()
    assert np.abs(got - expected).max() <= LOGIT_ATOL + LOGIT_RTOL * scale
    assert np.array_equal(got.argmax(1), expected.argmax(1))


@pytest.mark.slow
def test_margin_gamma_and_mixup_accuracy_are_the_same_through_onnx(tmp_path, monkeypatch):
    monkeypatch.setenv("FITAUDIT_CACHE_DIR", str(tmp_path))
    net, (x, y) = _net().eval(), _data()
    with using_backend("torch"):
        gamma_torch = T.margin_gamma(net, x, y)
        mixup_torch = labelwise_mixup_accuracy(net, x, y, np.random.default_rng(3), per_class=6, n_draws=3)
    with using_backend("onnx"):
        gamma_onnx = T.margin_gamma(net, x, y)
        mixup_onnx = labelwise_mixup_accuracy(net, x, y, np.random.default_rng(3), per_class=6, n_draws=3)
    assert gamma_onnx == pytest.approx(gamma_torch, rel=1e-4)
    assert mixup_onnx == mixup_torch
    # a hand count of the same draws, one class and draw at a time, by eager torch
    rng, hits = np.random.default_rng(3), {}
    for c in np.unique(y):
        members = np.flatnonzero(y == c)
        for _ in range(3):
            pick = rng.choice(members, size=min(6, len(members)), replace=False)
            a, b = np.triu_indices(len(pick), 1)
            predicted = T.predict(net, (x[pick[a]] + x[pick[b]]) / 2).argmax(1).numpy()
            hits.setdefault(int(c), []).append(np.mean(predicted == c))
    assert mixup_torch == pytest.approx(np.mean([np.mean(v) for v in hits.values()]), abs=1e-12)


@pytest.mark.slow
def test_augmentation_robustness_is_the_same_through_each_backend(tmp_path, monkeypatch):
    from fitaudit.measures import get_measure
    from fitaudit.measures.base import ModelRecord

    monkeypatch.setenv("FITAUDIT_CACHE_DIR", str(tmp_path))
    net = _net().eval()
    x, y = _data(96)
    x = (x - x.min()) / (x.max() - x.min())  # images in [0, 1], as the augmentations expect
    values = {}
    for backend in ("torch", "onnx"):
        with using_backend(backend):
            measure = get_measure("augmentation_robustness", batch_size=32, max_batches=3, random_state=0)
            values[backend] = measure.compute(ModelRecord(model=net, train_x=x, train_y=y))
    assert values["onnx"] == pytest.approx(values["torch"], rel=1e-4)
