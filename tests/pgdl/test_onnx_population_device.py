"""ONNX populations follow the requested device (issue 39): onnxruntime's providers by one rule.

A population's ONNX model runs in onnxruntime inside the measures
(:func:`fitaudit.models.conversion.onnx_torch.onnx_module`); scoring with ``--device
cuda`` must open its session with CUDAExecutionProvider, as
:func:`fitaudit.models.onnx_adapter.providers` says for every session, and a
machine whose onnxruntime lacks it gets that rule's one-line error before
any work. No GPU here: a fake onnxruntime lists CUDA and records the
providers asked for while its sessions run on the CPU, and torch's device
check is bypassed where the test says so.
"""

from __future__ import annotations

import csv
import types
from pathlib import Path

import numpy as np
import pytest

from fitaudit.options import RunOptions

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")

from fitaudit._errors import InputError  # noqa: E402
from fitaudit.cli import _common, main  # noqa: E402
from fitaudit.data.io import save_npz  # noqa: E402
from fitaudit.models import onnx_adapter, torch_adapter  # noqa: E402
from fitaudit.models.conversion.onnx_torch import onnx_module  # noqa: E402
from fitaudit.models.onnx_adapter import providers  # noqa: E402
from fitaudit.pgdl import load_task  # noqa: E402
from fitaudit.pgdl.harness import score_task  # noqa: E402
from fitaudit.pgdl.population import Population  # noqa: E402
from fitaudit.pgdl.population_import import import_population  # noqa: E402

NO_CUDA = ("`device` is 'cuda' but this onnxruntime has no CUDAExecutionProvider "
           "(install onnxruntime-gpu, or use device='cpu').")
MEASURES = ["inverse_margin", "augmentation_robustness", "spectral_log_norm"]


@pytest.fixture(scope="module")
def population(tmp_path_factory) -> Path:
    """Two small ONNX models (seeds 0, 1) of 3 x 8 x 8 images imported as a population."""
    root = tmp_path_factory.mktemp("onnx-population")
    rng = np.random.default_rng(0)
    x, y = rng.random((30, 3, 8, 8)).astype(np.float32), np.arange(30) % 3
    save_npz(root / "train.npz", x, y)
    (root / "models").mkdir()
    for seed in (0, 1):
        torch.manual_seed(seed)
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                  torch.nn.Linear(4 * 6 * 6, 3)).eval()
        torch.onnx.export(net, torch.zeros(1, 3, 8, 8), str(root / "models" / f"m{seed}.onnx"), input_names=["x"],
                          output_names=["logits"], dynamic_axes={"x": {0: "n"}, "logits": {0: "n"}}, dynamo=False)
    with open(root / "runs.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerows([["model", "seed", "train_acc", "test_acc"], ["m0.onnx", 0, 0.5, 0.4], ["m1.onnx", 1, 0.5, 0.4]])
    import_population(root / "models", root / "runs.csv", root / "train.npz", root / "population")
    return root / "population"


@pytest.fixture
def cuda_onnxruntime(monkeypatch) -> list[list[str]]:
    """onnxruntime as onnxruntime-gpu lists itself; the providers of every session opened, which runs on the CPU."""
    opened: list[list[str]] = []

    class RecordingSession(ort.InferenceSession):
        def __init__(self, source, options=None, providers=None, **kwargs):
            opened.append(list(providers or []))
            super().__init__(source, options, providers=["CPUExecutionProvider"], **kwargs)

    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    monkeypatch.setattr(ort, "InferenceSession", RecordingSession)
    return opened


@pytest.fixture
def any_cuda(monkeypatch) -> None:
    """torch's device check passed as on a machine with a GPU (nothing torch runs here is moved there)."""
    monkeypatch.setattr(torch_adapter, "resolve_device", lambda device, name="device": torch.device(device))
    monkeypatch.setattr(_common, "check_device", lambda device, option="--device": device)


def test_the_one_rule_of_providers() -> None:
    gpu = types.SimpleNamespace(get_available_providers=lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    cpu = types.SimpleNamespace(get_available_providers=lambda: ["CPUExecutionProvider"])
    for ort_module in (gpu, cpu):
        assert providers(ort_module, "cpu") == ["CPUExecutionProvider"]
    for device in ("cuda", "gpu"):
        assert providers(gpu, device) == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    for index in (0, 3):  # the GPU a device index names, not always the first
        assert providers(gpu, f"cuda:{index}") == [("CUDAExecutionProvider", {"device_id": index}), "CPUExecutionProvider"]
    with pytest.raises(InputError, match="got 'cuda:x'"):
        providers(gpu, "cuda:x")
    with pytest.raises(InputError) as caught:
        providers(cpu, "cuda")
    assert str(caught.value) == NO_CUDA
    with pytest.raises(InputError, match="`device` must be 'cpu' or 'cuda' for an ONNX model; got 'mps'"):
        providers(gpu, "mps")


def test_the_onnx_module_moves_as_a_torch_module(population: Path, cuda_onnxruntime: list[list[str]],
                                                 any_cuda: None) -> None:
    x = np.random.default_rng(1).random((5, 3, 8, 8)).astype(np.float32)
    module = onnx_module(population / "models" / "m0.onnx")
    on_cpu = module(torch.from_numpy(x))
    assert module.to(torch.float64) is module and module.to("cpu") is module  # nothing to reopen
    assert cuda_onnxruntime == [["CPUExecutionProvider"]]
    assert torch_adapter.move_model(module, torch.device("cuda")) is module
    assert cuda_onnxruntime[1:] == [["CUDAExecutionProvider", "CPUExecutionProvider"]]
    assert module.classifier.device == "cuda"
    torch.testing.assert_close(module(torch.from_numpy(x)), on_cpu, rtol=0, atol=0)
    module.to(device="cpu")
    assert cuda_onnxruntime[2:] == [["CPUExecutionProvider"]]


def test_an_onnx_population_scored_on_cuda_opens_its_sessions_there(
        population: Path, cuda_onnxruntime: list[list[str]], any_cuda: None) -> None:
    on_cpu = score_task(population, MEASURES, options=RunOptions(device="cpu", progress=False), budget_s=None)
    cuda_onnxruntime.clear()
    on_cuda = score_task(population, MEASURES, options=RunOptions(device="cuda", progress=False), budget_s=None)
    cuda = ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert cuda_onnxruntime.count(cuda) == 2  # each model's session, opened again where it runs (failed before)
    assert cuda_onnxruntime.count(["CPUExecutionProvider"]) == 2  # as loaded, before the move
    for mine, cpu in zip(on_cuda.scores, on_cpu.scores):
        assert not mine.errors and mine.values == cpu.values  # the fake runs on the CPU: the same numbers


def test_without_onnxruntime_gpu_cuda_is_one_line_before_any_work(population: Path, any_cuda: None, monkeypatch,
                                                                     capsys) -> None:
    def no_work(self, model_id, initial=False):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(Population, "model", no_work)
    with pytest.raises(InputError) as caught:
        score_task(load_task(population), MEASURES, options=RunOptions(device="cuda", progress=False), budget_s=None)
    assert str(caught.value) == NO_CUDA
    assert main(["pgdl", "score", "--task", str(population), "--measure", "inverse_margin", "--device", "cuda"]) != 0
    assert capsys.readouterr().err == f"fitaudit: error: {NO_CUDA.replace('`device`', '`--device`')}\n"


def test_the_torch_modules_onnx_backend_takes_its_providers_from_the_rule(tmp_path, monkeypatch) -> None:
    from fitaudit.models import as_classifier
    from fitaudit.models.inference import using_backend

    monkeypatch.setenv("FITAUDIT_CACHE_DIR", str(tmp_path))
    asked: list[str] = []

    def recording(ort_module, device):
        asked.append(device)
        return providers(ort_module, device)

    monkeypatch.setattr(onnx_adapter, "providers", recording)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 3)).eval()
    x = np.random.default_rng(2).random((4, 3, 2, 2)).astype(np.float32)
    with using_backend("onnx"):
        classifier = as_classifier(net)
        logits = classifier.logits(x)
    assert classifier.inference_info["backend"] == "onnxruntime" and asked == ["cpu"]
    np.testing.assert_allclose(logits, net(torch.from_numpy(x)).detach().numpy(), atol=1e-5)
