"""The Fantastic margin gamma computed on the model's device (issue 39).

Jiang et al.'s margin-normalised measures divide by gamma, the |10th
percentile| of the output margins on the training set. The margins are now
taken where the model runs and only the per-example margins come back.
These tests run that path with the model on the CPU (the same code a GPU
runs) against a reference written here in the former host formulation
(logits through the numpy inference path, margins in numpy float64), and
torch's ``meta`` device stands for a device other than the CPU.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from host_outputs import output_function  # noqa: E402

from fitaudit import InputError  # noqa: E402
from fitaudit.measures import ModelRecord, get_measure  # noqa: E402
from fitaudit.measures import _torch as T  # noqa: E402
from fitaudit.models.torch_adapter import TorchClassifier  # noqa: E402


def host_margin_gamma(model, x, y):
    """The former code: every logit brought to the host, margins row by row in float64, the k-th smallest."""
    logits = output_function(model)(x).astype(np.float64)
    values = []
    for row, label in zip(logits, y):
        others = np.delete(row, label)
        values.append(row[label] - others.max())
    k = max(1, len(values) // 10)
    return abs(float(np.sort(values)[k - 1]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch_size", [512, 7])
def test_margin_gamma_equals_the_host_formulation(record: ModelRecord, dtype, batch_size) -> None:
    model = T.eval_copy(record.model).to(dtype)
    x, y = np.asarray(record.train_x, dtype=np.float32), np.asarray(record.train_y)
    expected = host_margin_gamma(T.eval_copy(model), x, y)
    # float32 logits of batches of 7 are summed in another order than those of one batch of 90
    rel = 1e-6 if dtype == torch.float32 and batch_size < len(x) else 1e-12
    assert T.margin_gamma(model, x, y, batch_size=batch_size) == pytest.approx(expected, rel=rel, abs=0)


def test_margin_gamma_never_brings_the_logits_to_the_host(record: ModelRecord, monkeypatch) -> None:
    """The numpy inference path (TorchClassifier.logits) is never taken: the previous code took it."""
    expected = {name: get_measure(name)(record) for name in ("inverse_margin", "log_spec_sum_over_margin")}
    x, y = np.asarray(record.train_x, dtype=np.float32), np.asarray(record.train_y)
    gamma = host_margin_gamma(T.eval_copy(record.model), x, y)

    def no_host_logits(self, x):
        raise AssertionError("the logits were brought to the host")

    monkeypatch.setattr(TorchClassifier, "logits", no_host_logits)
    for name, value in expected.items():
        assert get_measure(name)(record) == value
    assert T.margin_gamma(T.eval_copy(record.model), x, y, batch_size=32) == pytest.approx(gamma, rel=1e-12)


def test_the_margins_stay_on_the_device() -> None:
    """A CPU tensor mixed into another device's logits is an error: ``meta`` stands for a GPU."""
    margins = T.margins(torch.zeros(5, 3, device="meta"), np.array([0, 1, 2, 0, 1]))
    assert margins.device.type == "meta" and margins.dtype == torch.float64 and margins.shape == (5,)


def test_margins_of_known_logits_and_a_label_the_model_cannot_output() -> None:
    logits = torch.tensor([[2.0, 0.5, -1.0], [0.0, 3.0, 3.5], [1.0, 1.0, 1.0]], dtype=torch.float32)
    np.testing.assert_array_equal(T.host(T.margins(logits, np.array([0, 1, 2]))), [1.5, -0.5, 0.0])
    with pytest.raises(InputError, match="label 3 but the model outputs 3 logits"):
        T.margins(logits, np.array([0, 1, 3]))


def test_margin_gamma_keeps_the_callers_mode(record: ModelRecord) -> None:
    model = copy.deepcopy(record.model).train()
    gamma = T.margin_gamma(model, np.asarray(record.train_x, dtype=np.float32), np.asarray(record.train_y))
    assert model.training and gamma > 0
