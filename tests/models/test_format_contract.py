"""One contract for every model format of the registry (:data:`fitaudit.models.formats.FORMATS`).

Every format is put through the same tests, the way optuna runs every
sampler through one suite: a small model made here in the format's own way
is recognised (under every name it may be given by), loads, predicts what
its own library predicts (so the accuracy ``inspect`` reports is the
library's), keeps its fingerprint across a copy and two loads and changes
it when a weight changes, is inspected with its kind, classes and class
count, and accepts exactly the backends its format declares. A format that
runs code when loaded is refused without trust, and its code never runs.
A format added to the table without a case here fails
:func:`test_every_format_has_a_case`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fitaudit.models.formats as formats_module
from fitaudit import InputError
from fitaudit.data.io import save_npz
from fitaudit.models import as_classifier, export_onnx, load_model, save_torch_model
from fitaudit.models.fingerprint import model_fingerprint
from fitaudit.models.formats import FORMATS, find_format
from fitaudit.models.inference.settings import BACKENDS
from fitaudit.models.inspection import inspect_model
from fitaudit.models.io import read_model_metadata, runs_code

os.environ.setdefault("KERAS_BACKEND", "torch")

NAMES = ["a", "b", "c"]
ROWS = 60


def image_data() -> tuple[np.ndarray, np.ndarray]:
    """60 RGB images of 8 x 8 in [0, 1], labelled by their brightest channel."""
    x = np.random.default_rng(7).random((ROWS, 3, 8, 8), dtype=np.float32)
    return x, np.argmax(x.mean(axis=(2, 3)), axis=1)


def table_data() -> tuple[np.ndarray, np.ndarray]:
    """60 rows of 6 features, labelled by the largest of the first three."""
    x = np.random.default_rng(8).normal(size=(ROWS, 6)).astype(np.float32)
    return x, np.argmax(x[:, :3], axis=1)


@dataclasses.dataclass
class Made:
    """A model saved at ``path`` and what its own library predicts for ``x`` (output indices)."""

    path: Path
    native: Callable[[np.ndarray], np.ndarray] | None = None


def _channel_means(seed: int, *, channels_last: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Weights (192, 3) and bias of a linear model of 3 x 8 x 8 images that scores each channel's mean, plus
    noise drawn from ``seed`` (the labels' rule, so it predicts well above chance; another seed, other weights)."""
    channel = np.arange(192) % 3 if channels_last else np.arange(192) // 64
    rng = np.random.default_rng(seed)
    weights = (channel[:, None] == np.arange(3)) / 64.0 + rng.normal(0.0, 0.002, (192, 3))
    return weights.astype(np.float32), rng.normal(0.0, 0.01, 3).astype(np.float32)


def _linear(seed: int) -> Any:
    """fitaudit's built-in ``linear`` architecture on 3 x 8 x 8 images, with :func:`_channel_means`'s weights."""
    torch = pytest.importorskip("torch")
    from fitaudit.models.architectures import build_architecture

    module = build_architecture({"architecture": "linear", "kwargs": {"in_features": 192, "n_classes": 3}}).eval()
    weights, bias = _channel_means(seed)
    module[1].load_state_dict({"weight": torch.from_numpy(weights.T.copy()), "bias": torch.from_numpy(bias)})
    return module


def _torch_predict(module: Any) -> Callable[[np.ndarray], np.ndarray]:
    torch = pytest.importorskip("torch")

    def predict(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return module(torch.from_numpy(x)).argmax(dim=1).numpy()

    return predict


def make_onnx(folder: Path, seed: int) -> Made:
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    path = export_onnx(_linear(seed), folder / "net.onnx", input_shape=(3, 8, 8), metadata={"classes": NAMES})
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return Made(path, lambda x: np.argmax(session.run(None, {session.get_inputs()[0].name: x})[0], axis=1))


def make_torch(folder: Path, seed: int) -> Made:
    pytest.importorskip("safetensors")
    module = _linear(seed)
    config = {"architecture": "linear", "kwargs": {"in_features": 192, "n_classes": 3}, "classes": NAMES}
    return Made(save_torch_model(module, config, folder / "net"), _torch_predict(module))


def make_torchscript(folder: Path, seed: int) -> Made:
    torch = pytest.importorskip("torch")
    module = _linear(seed)
    traced = torch.jit.trace(module, torch.zeros(1, 3, 8, 8))
    traced.save(str(folder / "net.pt"))
    return Made(folder / "net.pt", _torch_predict(traced))


def make_hf(folder: Path, seed: int) -> Made:
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    config = transformers.ViTConfig(image_size=8, patch_size=4, hidden_size=16, num_hidden_layers=1,
                                    num_attention_heads=2, intermediate_size=32, num_labels=3,
                                    id2label=dict(enumerate(NAMES)), label2id={n: i for i, n in enumerate(NAMES)})
    torch.manual_seed(seed)
    model = transformers.ViTForImageClassification(config)
    x, y = (torch.from_numpy(a) for a in image_data())
    optimiser = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(60):  # trained until it predicts well above chance (inspect stops a model at chance)
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(model(pixel_values=x).logits, y).backward()
        optimiser.step()
    model.eval().save_pretrained(folder / "vit")

    def predict(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return model(pixel_values=torch.from_numpy(x)).logits.argmax(dim=1).numpy()

    return Made(folder / "vit", predict)


def make_keras(folder: Path, seed: int) -> Made:
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "torch":
        pytest.skip("keras was imported on another backend")
    model = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Flatten(), keras.layers.Dense(3, activation="softmax")])
    model.layers[-1].set_weights(list(_channel_means(seed, channels_last=True)))
    model.save(folder / "net.keras")
    return Made(folder / "net.keras",
                lambda x: np.argmax(model.predict(np.transpose(x, (0, 2, 3, 1)), verbose=0), axis=1))


def make_skops(folder: Path, seed: int) -> Made:
    skops_io = pytest.importorskip("skops.io")
    from sklearn.linear_model import LogisticRegression

    x, y = table_data()
    rows = np.random.default_rng(seed).permutation(ROWS)[:45]  # another seed: other rows, other coefficients
    model = LogisticRegression(max_iter=500).fit(x[rows], y[rows])
    skops_io.dump(model, folder / "lr.skops")
    return Made(folder / "lr.skops", model.predict)


def make_xgboost(folder: Path, seed: int) -> Made:
    xgboost = pytest.importorskip("xgboost")
    x, y = table_data()
    rows = np.random.default_rng(seed).permutation(ROWS)[:45]
    model = xgboost.XGBClassifier(n_estimators=8, max_depth=2).fit(x[rows], y[rows])
    booster = model.get_booster()
    booster.set_attr(classes=json.dumps([0, 1, 2]))
    booster.save_model(folder / "model.json")
    return Made(folder / "model.json", model.predict)


def make_lightgbm(folder: Path, seed: int) -> Made:
    lightgbm = pytest.importorskip("lightgbm")
    x, y = table_data()
    rows = np.random.default_rng(seed).permutation(ROWS)[:45]
    model = lightgbm.LGBMClassifier(n_estimators=8, num_leaves=4, min_child_samples=3, verbose=-1).fit(x[rows], y[rows])
    model.booster_.save_model(folder / "model.txt")
    return Made(folder / "model.txt", model.predict)


class _Planted:
    """Unpickling this calls ``Path.touch`` on the marker: proof that a pickle ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return Path.touch, (self.marker,)


def make_pickle(folder: Path, seed: int) -> Made:
    (folder / "model.pkl").write_bytes(pickle.dumps(_Planted(folder / "RAN")) + bytes([seed]))
    return Made(folder / "model.pkl")


@dataclasses.dataclass(frozen=True)
class Case:
    """How to make a model of one format, the data it takes and what ``inspect`` must say of it."""

    make: Callable[[Path, int], Made]
    data: Callable[[], tuple[np.ndarray, np.ndarray]]
    classes: list[Any] | None = None
    #: the class names the file records (:func:`fitaudit.models.io.read_model_metadata`)
    recorded: list[str] | None = None
    #: every other path that names the same model
    aliases: Callable[[Path], list[Path]] = lambda path: []
    #: load options the format needs
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: the message it is refused with, without ``options`` (None: it loads as data)
    refusal: str | None = None
    #: always refused: never loaded, whatever the options
    never: bool = False


CASES: dict[str, Case] = {
    "onnx": Case(make_onnx, image_data, NAMES, NAMES),
    "xgboost": Case(make_xgboost, table_data, [0, 1, 2]),
    "lightgbm": Case(make_lightgbm, table_data),
    "hf": Case(make_hf, image_data, NAMES, NAMES, aliases=lambda p: [p / "config.json", p / "model.safetensors"]),
    "keras": Case(make_keras, image_data),
    "torch": Case(make_torch, image_data, NAMES, NAMES, aliases=lambda p: [p / "config.json", p / "weights.safetensors"]),
    "skops": Case(make_skops, table_data, [0, 1, 2]),
    # a TorchScript archive records no class count: its caller gives it
    "torchscript": Case(make_torchscript, image_data, options={"trust_torchscript": True, "n_classes": 3},
                        refusal="may be a pickle, and fitaudit never unpickles model files; use ONNX"),
    "pickle": Case(make_pickle, table_data, refusal="is a pickle, and fitaudit never unpickles model files; use ONNX",
                   never=True),
}

LOADED = [name for name, case in CASES.items() if not case.never]
TRUSTED = [name for name, case in CASES.items() if case.refusal is not None]


def test_every_format_has_a_case():
    """A format in the table is tested here, and named in the registry's table of formats."""
    assert list(CASES) == list(FORMATS)
    for name, fmt in FORMATS.items():
        assert fmt.name == name and f"\n{name} " in (formats_module.__doc__ or "")


@dataclasses.dataclass
class Models:
    """The model of seed 0, a copy of it in another folder, the same file with other weights (seed 1)."""

    made: Made
    copy: Path
    other: Path
    x: np.ndarray
    y: np.ndarray
    data: Path


@pytest.fixture(scope="module")
def models(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Models:
    case = CASES[request.param]
    root = tmp_path_factory.mktemp(request.param)
    folders = [root / part for part in ("one", "copy", "other")]
    for folder in folders:
        folder.mkdir()
    made = case.make(folders[0], 0)
    copy = folders[1] / made.path.name
    (shutil.copytree if made.path.is_dir() else shutil.copy2)(made.path, copy)
    other = case.make(folders[2], 1).path
    x, y = case.data()
    save_npz(root / "data.npz", x, y)
    return Models(made, copy, other, x, y, root / "data.npz")


def _load(name: str, path: Path, **extra: Any) -> Any:
    return load_model(path, name="--model", **CASES[name].options, **extra)


@pytest.mark.parametrize("models", list(CASES), indirect=True)
def test_its_files_are_recognised_as_it(models, request):
    name = request.node.callspec.params["models"]
    for path in (models.made.path, models.copy, models.other, *CASES[name].aliases(models.made.path)):
        assert find_format(path) is FORMATS[name], path


@pytest.mark.parametrize("models", LOADED, indirect=True)
def test_it_predicts_what_its_own_library_predicts(models, request):
    name = request.node.callspec.params["models"]
    assert models.made.native is not None
    expected = models.made.native(models.x)
    assert len(set(expected.tolist())) >= 2, "a model predicting one class would show nothing"
    for path in (models.made.path, *CASES[name].aliases(models.made.path)):
        adapter = _load(name, path)
        assert adapter.n_classes == 3
        np.testing.assert_array_equal(adapter.predict(models.x), expected)


@pytest.mark.parametrize("models", list(CASES), indirect=True)
def test_its_fingerprint_follows_the_weights(models, request):
    """The same bytes elsewhere keep the fingerprint; other weights under the same name change it."""
    name = request.node.callspec.params["models"]
    assert model_fingerprint(models.made.path) == model_fingerprint(models.copy)
    assert model_fingerprint(models.made.path) != model_fingerprint(models.other)
    if CASES[name].never:
        return
    first, second, other = (_load(name, p).fingerprint() for p in (models.made.path, models.made.path, models.other))
    assert first == second != other


@pytest.mark.parametrize("models", LOADED, indirect=True)
def test_inspect_gives_its_kind_classes_and_the_library_s_accuracy(models, request):
    name = request.node.callspec.params["models"]
    case = CASES[name]
    result = inspect_model(models.made.path, models.data, adapter=_load(name, models.made.path))  # as the CLI does
    assert models.made.native is not None
    expected = float(np.mean(models.made.native(models.x) == models.y))
    assert (result.kind, result.n_classes, result.classes) == (FORMATS[name].kind, 3, case.classes)
    assert result.n_examples == ROWS and result.accuracy == expected
    assert result.runs_code is FORMATS[name].runs_code(models.made.path) is (case.refusal is not None)
    assert read_model_metadata(models.made.path).classes == case.recorded


@pytest.mark.parametrize("models", LOADED, indirect=True)
def test_it_runs_on_the_backends_its_format_declares(models, request):
    name = request.node.callspec.params["models"]
    declared = FORMATS[name].backends
    assert "auto" in declared and set(declared) <= set(BACKENDS)
    for backend in BACKENDS:
        if backend in declared:
            assert as_classifier(models.made.path, backend=backend, **CASES[name].options).n_classes == 3
        else:
            with pytest.raises(InputError, match=f"`backend` is {backend!r} but the model is"):
                as_classifier(models.made.path, backend=backend, **CASES[name].options)


@pytest.mark.parametrize("models", TRUSTED, indirect=True)
def test_a_format_that_runs_code_is_refused_without_trust(models, request):
    """Refused with its message by load_model and inspect; a pickle's code never runs, whatever is asked of it."""
    name = request.node.callspec.params["models"]
    case = CASES[name]
    assert runs_code(models.made.path) and FORMATS[name].runs_code(models.made.path)
    for attempt in (lambda: load_model(models.made.path, name="--model"),
                    lambda: inspect_model(models.made.path, models.data, model_name="--model")):
        with pytest.raises(InputError, match=f"^`--model`: '.*' {case.refusal}"):
            attempt()
    if case.never:
        with pytest.raises(InputError, match=case.refusal):
            load_model(models.made.path, trust_code=True, trust_torchscript=True)
        read_model_metadata(models.made.path)
        assert not (models.made.path.parent / "RAN").exists()
