"""The adapters give the native model's predictions, batched, on numpy input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

from fitaudit import InputError
from fitaudit.models import (
    CallableClassifier,
    Classifier,
    SklearnClassifier,
    as_classifier,
    is_classifier_adapter,
    softmax,
)
from fitaudit.models.architectures import build_architecture
from fitaudit.models.labels import label_set
from fitaudit.models.onnx_adapter import OnnxClassifier
from fitaudit.models.torch_adapter import TorchClassifier


@pytest.fixture(scope="module")
def blobs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    centers = np.array([[2.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0]])
    y = rng.integers(0, 3, size=90)
    return centers[y] + rng.normal(size=(90, 4)), y


def make_mlp(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return build_architecture(
        {"architecture": "mlp", "kwargs": {"in_features": 4, "hidden_sizes": [16, 8], "n_classes": 3}}
    )


def export_onnx(module: torch.nn.Module, path: str) -> None:
    """Export with the dynamo exporter, falling back to the TorchScript one."""
    example = (torch.zeros(2, 4),)
    try:
        torch.onnx.export(
            module, example, path, dynamo=True, input_names=["x"],
            dynamic_shapes=({0: torch.export.Dim("batch")},), external_data=False, verbose=False,
        )
    except Exception:  # exporter unavailable on this torch: use the legacy one
        torch.onnx.export(
            module, example, path, dynamo=False, input_names=["x"], output_names=["logits"],
            dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
        )


def test_torch_adapter_matches_module(blobs):
    x, _ = blobs
    module = make_mlp()
    native = module(torch.as_tensor(x, dtype=torch.float32)).detach().numpy()
    adapter = as_classifier(module, batch_size=7)
    assert isinstance(adapter, TorchClassifier)
    assert adapter.n_classes == 3
    logits = adapter.logits(x)
    assert logits.dtype == np.float64 and logits.shape == (90, 3)
    np.testing.assert_allclose(logits, native, atol=1e-5)
    np.testing.assert_array_equal(adapter.predict(x), native.argmax(axis=1))
    assert adapter.predict(x).dtype == np.int64
    np.testing.assert_allclose(
        adapter.predict_proba(x), torch.softmax(torch.as_tensor(native), 1).numpy(), atol=1e-6
    )
    assert not module.training


def test_torch_adapter_float64_module_and_inference_mode(blobs):
    x, _ = blobs
    module = make_mlp().double()
    adapter = as_classifier(module)
    assert adapter.input_dtype == np.float64
    native = module(torch.as_tensor(x)).detach().numpy()
    np.testing.assert_allclose(adapter.logits(x), native, rtol=1e-12)


def test_batching_gives_same_output(blobs):
    x, _ = blobs
    module = make_mlp()
    full = as_classifier(module, batch_size=1000).logits(x)
    for batch_size in (1, 8, 89):
        np.testing.assert_allclose(as_classifier(module, batch_size=batch_size).logits(x), full, atol=1e-6)


def test_batches_are_bounded_by_batch_size():
    seen: list[int] = []

    def scores(batch: np.ndarray) -> np.ndarray:
        seen.append(len(batch))
        return np.stack([batch[:, 0], -batch[:, 0]], axis=1)

    adapter = as_classifier(scores, batch_size=4)
    x = np.arange(10.0).reshape(10, 1)
    np.testing.assert_array_equal(adapter.logits(x)[:, 0], np.arange(10.0))
    assert seen == [4, 4, 2]


def test_torch_device_errors():
    module = make_mlp()
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="`device` is 'cuda' but torch sees no CUDA device"):
            as_classifier(module, device="cuda")
    with pytest.raises(InputError, match="`device` must name a torch device"):
        as_classifier(module, device="toaster")


def test_torch_n_classes_from_last_linear_and_mismatch(blobs):
    x, _ = blobs
    module = make_mlp()
    with pytest.raises(InputError, match="returned 3 scores per example but `n_classes` is 5"):
        as_classifier(module, n_classes=5).logits(x)


def test_torch_bad_input_shape_is_input_error():
    adapter = as_classifier(make_mlp())
    with pytest.raises(InputError, match=r"`x`: the torch model failed on a batch of shape \(3, 5\)"):
        adapter.logits(np.zeros((3, 5)))


def test_sklearn_predict_proba_matches(blobs):
    x, y = blobs
    estimator = LogisticRegression().fit(x, y)
    adapter = as_classifier(estimator, batch_size=16)
    assert isinstance(adapter, SklearnClassifier) and adapter.n_classes == 3
    np.testing.assert_allclose(adapter.predict_proba(x), estimator.predict_proba(x), rtol=1e-10)
    np.testing.assert_allclose(adapter.logits(x), np.log(estimator.predict_proba(x)), rtol=1e-10)
    np.testing.assert_array_equal(adapter.predict(x), estimator.predict(x))


class CountingLogistic(LogisticRegression):
    """A logistic regression that records the rows of each ``predict_proba`` call."""

    def predict_proba(self, X):
        self.calls = [*getattr(self, "calls", []), len(X)]
        return super().predict_proba(X)


@pytest.mark.parametrize(("budget", "rows"), [(8 * 4 * 37, 1000), (8 * 4 * 1000, 1000), (8 * 4 * 1000 - 1, 2000)])
def test_a_table_model_is_scored_in_memory_bounded_chunks_equal_to_one_call(budget, rows, monkeypatch):
    import fitaudit.models.base as base

    rng = np.random.default_rng(1)
    x = rng.normal(size=(rows, 4))
    estimator = CountingLogistic().fit(x, (x[:, 0] + rng.normal(size=rows) > 0).astype(int))
    whole = np.log(estimator.predict_proba(x))  # one call of all the rows
    monkeypatch.setattr(base, "TABLE_CALL_BYTES", budget)
    adapter = as_classifier(estimator)
    chunk = budget // (8 * 4)
    assert adapter.batch_size is None and adapter.rows_per_call(x) == chunk
    estimator.calls = []
    logits = adapter.logits(x)
    assert len(estimator.calls) == -(-rows // chunk) and max(estimator.calls) == min(chunk, rows)
    assert sum(estimator.calls) == rows
    np.testing.assert_array_equal(logits, whole)  # bit for bit


def test_a_table_of_100000_rows_by_30_is_one_call_and_a_named_batch_size_is_kept():
    adapter = as_classifier(LogisticRegression().fit(np.eye(3), [0, 1, 2]))
    assert adapter.rows_per_call(np.empty((100_000, 30))) >= 100_000  # 24 MB of float64
    assert adapter.rows_per_call(np.empty((10, 2**26))) == 1  # a row above the bound still goes, one a call
    x = np.random.default_rng(2).normal(size=(50, 3))
    estimator = CountingLogistic().fit(x, np.arange(50) % 3)
    estimator.calls = []
    as_classifier(estimator, batch_size=16).logits(x)
    assert estimator.calls == [16, 16, 16, 2]


def test_sklearn_zero_probability_gives_finite_logit():
    class Certain(LogisticRegression):
        def predict_proba(self, x):
            return np.tile([1.0, 0.0], (len(x), 1))

    estimator = Certain().fit([[0.0], [1.0]], [0, 1])
    logits = as_classifier(estimator).logits(np.zeros((3, 1)))
    assert np.all(np.isfinite(logits)) and np.all(logits[:, 1] < -700)


def test_sklearn_decision_function_binary_and_multiclass(blobs):
    x, y = blobs
    multi = LinearSVC().fit(x, y)
    adapter = as_classifier(multi)
    assert not adapter.uses_proba
    np.testing.assert_allclose(adapter.logits(x), multi.decision_function(x))
    np.testing.assert_array_equal(adapter.predict(x), multi.predict(x))

    binary = LinearSVC().fit(x, (y == 1).astype(int))
    adapter = as_classifier(binary, batch_size=10)
    d = binary.decision_function(x)
    np.testing.assert_allclose(adapter.logits(x), np.stack([-d / 2, d / 2], axis=1))
    np.testing.assert_allclose(adapter.predict_proba(x)[:, 1], 1 / (1 + np.exp(-d)), rtol=1e-12)
    np.testing.assert_array_equal(adapter.predict(x), binary.predict(x))


def test_sklearn_string_classes_are_encoded(blobs):
    x, y = blobs
    names = np.array(["cat", "dog", "emu"])
    estimator = LogisticRegression().fit(x, names[y])
    adapter = as_classifier(estimator)
    labels = label_set(adapter)
    assert labels.trained and labels.names == ["cat", "dog", "emu"]
    np.testing.assert_array_equal(adapter.classes[adapter.predict(x)], estimator.predict(x))
    np.testing.assert_array_equal(labels.encode(names[y]), y)
    with pytest.raises(InputError, match=r"`y` holds labels the model does not have: yak; labels are the classes"):
        labels.encode(np.array(["cat", "yak"]))
    with pytest.raises(InputError, match=r"labels the model does not have: 0, 1, 2"):  # indices in the user's order
        labels.encode(y)
    with pytest.raises(InputError, match="`n_classes` is 4 but the scikit-learn model knows 3 classes"):
        as_classifier(estimator, n_classes=4)


def test_sklearn_integer_classes_not_starting_at_zero(blobs):
    x, y = blobs
    estimator = LogisticRegression().fit(x, y + 1)
    adapter = as_classifier(estimator)
    np.testing.assert_array_equal(label_set(adapter).encode(y + 1), y)
    np.testing.assert_array_equal(label_set(adapter).encode((y + 1).astype(str)), y)  # a CSV's text
    with pytest.raises(InputError, match="labels the model does not have: 0; labels are the classes the model was "
                                         "trained on: 1, 2, 3"):
        label_set(adapter).encode(y)
    np.testing.assert_array_equal(adapter.predict(x) + 1, estimator.predict(x))


def test_unfitted_sklearn_is_refused():
    with pytest.raises(InputError, match="is not fitted"):
        as_classifier(LogisticRegression())


def test_callable_adapter_infers_n_classes():
    weights = np.array([[1.0, -1.0, 0.5], [0.0, 2.0, -1.0]])

    def scores(batch: np.ndarray) -> np.ndarray:
        return batch @ weights

    adapter = as_classifier(scores, batch_size=3)
    assert isinstance(adapter, CallableClassifier)
    with pytest.raises(InputError, match="`n_classes` of this callable model is not known yet"):
        _ = adapter.n_classes
    x = np.random.default_rng(1).normal(size=(11, 2))
    np.testing.assert_array_equal(adapter.predict(x), (x @ weights).argmax(axis=1))
    assert adapter.n_classes == 3
    np.testing.assert_allclose(adapter.predict_proba(x).sum(axis=1), 1.0)


def test_callable_bad_outputs():
    with pytest.raises(InputError, match=r"must return scores of shape \(n, n_classes\)"):
        as_classifier(lambda b: b[:, 0]).logits(np.zeros((4, 2)))
    with pytest.raises(InputError, match="returned NaN or \\+inf scores for 4 example"):
        as_classifier(lambda b: np.full((len(b), 2), np.nan)).logits(np.zeros((4, 2)))


def test_as_classifier_passthrough_and_errors():
    adapter = as_classifier(lambda b: np.zeros((len(b), 2)), n_classes=2)
    assert is_classifier_adapter(adapter) and isinstance(adapter, Classifier)
    assert as_classifier(adapter) is adapter
    assert not is_classifier_adapter(lambda b: b)
    with pytest.raises(InputError, match="`n_classes` is 3 but the given adapter has 2 classes"):
        as_classifier(adapter, n_classes=3)
    with pytest.raises(InputError, match="`model` must be a classifier .*, a torch nn.Module, an ONNX model .* got int"):
        as_classifier(42)
    with pytest.raises(InputError, match="`batch_size` must be a positive integer; got 0"):
        as_classifier(adapter.model, batch_size=0)
    with pytest.raises(InputError, match="`x` must hold numbers; got dtype <U1"):
        adapter.logits(np.array([["a"]]))


def test_empty_input_gives_empty_scores():
    adapter = as_classifier(lambda b: np.zeros((len(b), 2)), n_classes=2)
    assert adapter.logits(np.zeros((0, 3))).shape == (0, 2)
    assert adapter.predict(np.zeros((0, 3))).dtype == np.int64


def test_softmax_is_stable():
    scores = np.array([[1000.0, 1000.0], [0.0, -np.inf], [-1000.0, -1001.0]])
    proba = softmax(scores)
    np.testing.assert_allclose(proba, [[0.5, 0.5], [1.0, 0.0], [1 / (1 + np.exp(-1)), 1 / (1 + np.exp(1))]])


@pytest.mark.slow
def test_onnx_export_matches_torch(blobs, tmp_path):
    pytest.importorskip("onnxruntime")
    x, _ = blobs
    module = make_mlp(seed=3).eval()
    path = str(tmp_path / "mlp.onnx")
    export_onnx(module, path)
    native = module(torch.as_tensor(x, dtype=torch.float32)).detach().numpy()
    for source in (path, (tmp_path / "mlp.onnx").read_bytes()):
        adapter = as_classifier(source, batch_size=32)
        assert adapter.kind == "onnx" and adapter.n_classes == 3
        np.testing.assert_allclose(adapter.logits(x), native, atol=1e-5)
        np.testing.assert_array_equal(adapter.predict(x), native.argmax(axis=1))
    assert adapter.input_shape == (4,)
    with pytest.raises(InputError, match=r"`x` must have shape \(n, 4\) for this onnx model; got shape \(2, 5\)"):
        adapter.logits(np.zeros((2, 5)))
    session = OnnxClassifier(path).model
    assert as_classifier(session).model is session
    import onnxruntime

    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
        with pytest.raises(InputError, match="`device` is 'cuda' but this onnxruntime has no CUDA"):
            as_classifier(path, device="cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_torch_adapter_on_cuda_matches_cpu(blobs):
    x, _ = blobs
    module = make_mlp()
    on_cpu = as_classifier(module).logits(x)
    adapter = as_classifier(module, device="cuda:0", batch_size=16)
    assert next(module.parameters()).is_cuda
    np.testing.assert_allclose(adapter.logits(x), on_cpu, atol=1e-4)
