"""Penultimate features with the normalisation on the model's device (fitaudit.leakage.features).

Barz & Denzler (J. Imaging 2020) searched a classifier's feature space for
near-duplicates. A :class:`~fitaudit.models.pipeline_classifier.PipelineClassifier` takes
[0, 1] images; its ``(x - mean) / std`` is applied where the model runs, to
each batch after its one trip there. These tests run that path with
``device="cpu"`` (the same code a GPU runs) against a naive reference: the
images normalised in numpy, the network's layers called one by one.
"""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit.data.pipeline import EvalPipeline
from fitaudit.leakage import penultimate_features
from fitaudit.models.pipeline_classifier import PipelineClassifier

torch = pytest.importorskip("torch")

from fitaudit.models.torch_adapter import TorchClassifier  # noqa: E402  (needs torch)

PIPELINE = EvalPipeline(resize=8, crop=8, mean=(0.4, 0.5, 0.6), std=(0.3, 0.2, 0.25))


def small_net(dtype=None):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    return net.to(dtype) if dtype is not None else net


def naive_features(net, x):
    """Normalised in numpy as the pipeline's formula reads, the layers before the last linear one, unit rows."""
    mean = np.asarray(PIPELINE.mean, dtype=np.float32)[:, None, None]
    std = np.asarray(PIPELINE.std, dtype=np.float32)[:, None, None]
    dtype = next(net.parameters()).dtype
    with torch.no_grad():
        hidden = net[:3](torch.from_numpy((x.astype(np.float32) - mean) / std).to(dtype)).double().numpy()
    norms = np.linalg.norm(hidden, axis=1, keepdims=True)
    return hidden / np.where(norms > 0, norms, 1.0)  # a row the ReLU zeroed stays zero


@pytest.mark.parametrize("dtype", [None, torch.float64])
def test_features_of_a_pipeline_classifier_match_the_host_normalisation(dtype) -> None:
    x = np.random.default_rng(0).random((10, 3, 8, 8)).astype(np.float32)
    adapter = TorchClassifier(small_net(dtype), device="cpu")
    features = penultimate_features(PipelineClassifier(adapter, PIPELINE), x, batch_size=4)
    assert features.shape == (10, 6) and features.dtype == np.float32
    np.testing.assert_allclose(features, naive_features(adapter.model, x), rtol=1e-5, atol=1e-6)  # float32 sums in another order
    # the former path (the whole array normalised on the host first) gives the same numbers, bit for bit
    np.testing.assert_array_equal(features, penultimate_features(adapter, PIPELINE.normalise(x), batch_size=4))


def test_each_batch_goes_to_the_device_once_as_given_and_is_normalised_there(monkeypatch) -> None:
    x = np.random.default_rng(1).random((10, 3, 8, 8)).astype(np.float32)
    adapter = TorchClassifier(small_net(), device="cpu")
    handed: list[np.ndarray] = []
    to_device = adapter.to_device

    def counting_to_device(array):
        handed.append(np.array(array))
        return to_device(array)

    def no_host_normalisation(self, images):
        raise AssertionError("the images were normalised on the host")

    monkeypatch.setattr(adapter, "to_device", counting_to_device)
    monkeypatch.setattr(EvalPipeline, "normalise", no_host_normalisation)
    features = penultimate_features(PipelineClassifier(adapter, PIPELINE), x, batch_size=4)
    assert [len(batch) for batch in handed] == [4, 4, 2]  # one trip per batch, nothing else
    np.testing.assert_array_equal(np.concatenate(handed), x)  # the [0, 1] images as given, not normalised copies
    assert sum(batch.nbytes for batch in handed) == x.nbytes
    np.testing.assert_allclose(features, naive_features(adapter.model, x), rtol=1e-5, atol=1e-6)  # float32 sums in another order
