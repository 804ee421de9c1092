"""The shared torch helpers (fitaudit.models.torch_ops) against numpy and scipy references."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from scipy.special import log_softmax

torch = pytest.importorskip("torch")

from fitaudit.models import torch_ops  # noqa: E402
from fitaudit.models.torch_ops import accuracy, as_tensor, device_of, evaluate  # noqa: E402


def linear(seed: int = 0, d: int = 5, k: int = 3) -> torch.nn.Linear:
    torch.manual_seed(seed)
    return torch.nn.Linear(d, k)


def numpy_logits(net: torch.nn.Linear, x: np.ndarray) -> np.ndarray:
    w = net.weight.detach().double().numpy()
    b = net.bias.detach().double().numpy()
    return x.astype(np.float64) @ w.T + b


def test_device_of_is_where_the_first_parameter_or_buffer_is() -> None:
    assert device_of(linear()) == torch.device("cpu")
    assert device_of(torch.nn.ReLU()) == torch.device("cpu")  # no tensors at all
    assert device_of(lambda x: x) == torch.device("cpu")  # not a module (an ONNX wrapper)
    norm = torch.nn.BatchNorm1d(4, affine=False).to("meta")  # buffers only; meta stands for a GPU
    assert device_of(norm).type == "meta"
    assert device_of(linear().to("meta")).type == "meta"


def test_accuracy_and_loss_match_a_numpy_reference_for_every_batch_size() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(37, 5)).astype(np.float32)
    y = rng.integers(0, 3, size=37)
    net = linear()
    logits = numpy_logits(net, x)
    want_accuracy = np.mean(logits.argmax(1) == y)
    want_loss = -np.mean(log_softmax(logits, axis=1)[np.arange(37), y])
    assert 0 < want_accuracy < 1  # a test that can fail
    for batch_size in (1, 8, 37, 512):
        loss, acc = evaluate(net, x, y, batch_size=batch_size)
        assert acc == want_accuracy == accuracy(net, x, y, batch_size=batch_size)
        assert loss == pytest.approx(want_loss, rel=1e-5)
    loss, acc = evaluate(net, x, y, with_loss=False)
    assert np.isnan(loss) and acc == want_accuracy


def test_a_tensor_already_sent_gives_the_same_accuracy_as_the_array() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(20, 5)).astype(np.float32)
    y = rng.integers(0, 3, size=20)
    net = linear(2)
    assert accuracy(net, as_tensor(x, device_of(net)), y) == accuracy(net, x, y)
    read_only = x.copy()
    read_only.flags.writeable = False  # a worker's memory map
    assert accuracy(net, read_only, y) == accuracy(net, x, y)


def test_the_module_runs_in_eval_mode_and_stays_there() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=(64, 5)).astype(np.float32)
    y = rng.integers(0, 3, size=64)
    net = torch.nn.Sequential(torch.nn.Dropout(0.9), linear(3))
    net.train()
    first = accuracy(net, x, y)
    assert not net.training
    net.train()
    assert accuracy(net, x, y) == first == np.mean(numpy_logits(net[1], x).argmax(1) == y)  # no dropout drawn


def test_the_module_docstring_example_runs() -> None:
    failures, tried = doctest.testmod(torch_ops, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert tried > 0 and failures == 0
