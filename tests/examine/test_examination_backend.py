"""The examiner's numbers do not depend on which backend happened to be fastest (issue 30, item 7)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fitaudit.data.factors import Factor, FactorSpace  # noqa: E402
from fitaudit.data.generators import CallableGenerator  # noqa: E402
from fitaudit.examine import examine  # noqa: E402
from fitaudit.models import as_classifier  # noqa: E402
from fitaudit.models.inference import select, using_backend  # noqa: E402
from fitaudit.models.inference.settings import ADAPTIVE_BACKEND, adaptive_backend  # noqa: E402

SPACE = FactorSpace([Factor("a", -1.0, 1.0, 0.0, "u"), Factor("b", -1.0, 1.0, 0.0, "u")])
LABELS = np.array([0, 1, 2, 0, 1, 2])


def _render(instances: np.ndarray, factors: np.ndarray) -> np.ndarray:
    base = np.eye(3)[LABELS[np.asarray(instances)]] * 2.0
    return np.concatenate([base, factors, factors**2], axis=1).astype(np.float32)


def _net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(7, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).eval()


def _examine(model, **kwargs):
    gen = CallableGenerator(_render, factor_space=SPACE, labels=LABELS, name="toy")
    return examine(model, gen, examiner="bo", steps=6, random_state=3, n_reference=8, **kwargs)


@pytest.mark.slow
def test_torch_models_run_eager_by_default_and_nothing_is_timed(monkeypatch):
    """No timing probe runs (it would raise here); two runs give the same numbers; the result records the backend."""
    def no_timing(*args, **kwargs):
        raise AssertionError("the examiner's backend must not be chosen by timing")

    monkeypatch.setattr(select, "throughput", no_timing)
    monkeypatch.setattr(select, "choose_batch_size", no_timing)
    net = _net()
    first, second = _examine(net), _examine(net)
    assert first.backend == second.backend == ADAPTIVE_BACKEND == "eager"
    for name in ("final_loss", "min_true_class_probability", "extreme_factors"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name))
    np.testing.assert_array_equal(first.queries["loss"], second.queries["loss"])
    assert first.to_dict(include_queries=False)["backend"] == "eager"


@pytest.mark.slow
def test_a_named_backend_is_used_and_recorded_and_the_callers_adapter_is_left_alone():
    net = _net()
    adapter = as_classifier(net, backend="auto")
    assert _examine(adapter).backend == "eager" and adapter.requested_backend == "auto"
    assert _examine(net, backend="torch").backend == "torch"
    with using_backend("torch"):  # --backend torch on the command line
        assert _examine(net).backend == "torch"
    assert _examine(lambda x: x[:, :3]).backend is None  # not a torch model: runs as it is


def test_adaptive_backend_precedence(monkeypatch):
    assert adaptive_backend("onnx") == "onnx"
    assert adaptive_backend() == ADAPTIVE_BACKEND
    with using_backend("auto"):
        assert adaptive_backend() == "auto"
    assert adaptive_backend() == ADAPTIVE_BACKEND  # the block's choice does not outlive it
