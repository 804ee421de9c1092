"""Saving and safe loading of model files.

Formats (nothing here ever unpickles):

* ``.onnx`` -- run by onnxruntime;
* a torch model as a folder with ``weights.safetensors`` and ``config.json``
  (``{"architecture": NAME, "kwargs": {...}}`` naming a built-in
  architecture, see :mod:`fitaudit.models.architectures`; optional
  ``"n_classes"``, ``"input_shape"`` (shape of one example, checked on
  every call) and free-form ``"metadata"``), given as
  the folder, the ``config.json`` or the ``weights.safetensors`` path; the
  architecture may be the user's own class, ``"architecture": {"file":
  "net.py", "class": "Net"}`` (saved by :func:`save_torch_model`), built only with ``trust_code=True`` since that runs the file;
* a Hugging Face image classifier, the folder ``save_pretrained`` writes
  (``config.json`` with a ``"model_type"``, ``model.safetensors``,
  ``preprocessor_config.json``): :mod:`fitaudit.models.hf` (``hf`` extra);
* a Keras 3 ``.keras`` file, run by keras's torch backend:
  :mod:`fitaudit.models.keras_file` (``keras`` extra);
* ``.skops`` -- a scikit-learn model, loaded with an explicit allowlist of
  types and functions (:mod:`fitaudit.models.skops_trust`);
* XGBoost ``.json``/``.ubj`` and LightGBM ``.txt`` model files (their own
  formats, read by their own libraries: trees and numbers, no pickle;
  :mod:`fitaudit.models.boosting_adapter`);
* TorchScript (``.pt``, ``.pth``, ``.ts``, ``.torchscript``) only with
  ``trust_torchscript=True``. Other ``.pt``/``.pth``/``.pkl``/``.joblib``
  files are refused: they are pickles, which run code when loaded.

What a model file says about its data (:func:`read_model_metadata`):
``"classes"`` (class names in output order), ``"pipeline"`` (the evaluation
transform, :class:`fitaudit.data.images.EvalPipeline` settings) and
``"data_fingerprint"`` (its training set), top-level keys of ``config.json``
or ONNX metadata properties (JSON text); :func:`export_onnx` writes them.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.checkpoint import atomic_path, atomic_write_text
from fitaudit.data.archives import check_archive
from fitaudit.models import hf, keras_file, skops_trust
from fitaudit.models.architectures import build_architecture
from fitaudit.models.base import Classifier
from fitaudit.models.layout import (
    CHANNELS_LAST,
    NO_CHANNEL_AXIS,
    InputSpec,
    first_layer_shape,
    input_spec,
)
from fitaudit.models.native import wrap_native

WEIGHTS_FILE = "weights.safetensors"
CONFIG_FILE = "config.json"

_PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".sav", ".dill")
_TORCHSCRIPT_SUFFIXES = (".pt", ".pth", ".ts", ".torchscript")

_SAFE_FORMATS = (
    "use ONNX (.onnx), safetensors weights with a config.json (fitaudit.models.save_torch_model), "
    "skops (.skops) for scikit-learn, XGBoost's .json/.ubj or LightGBM's .txt model files"
)


def save_torch_model(module: Any, config: dict[str, Any], directory: str | os.PathLike[str]) -> Path:
    """Save a torch module as ``weights.safetensors`` + ``config.json``.

    Parameters
    ----------
    module : torch.nn.Module
        A module built by the architecture ``config["architecture"]``: a
        registered one, or your own class.
    config : dict
        ``{"architecture": NAME, "kwargs": {...}}``, or for your own class
        ``{"architecture": {"file": "net.py", "class": "Net"}, "kwargs":
        {...}}``, plus optional JSON entries: ``"classes"`` (names in output
        order), ``"pipeline"`` (``{"resize", "crop", "mean", "std"}``),
        ``"input_shape"``, ``"n_classes"``, ``"metadata"``.
    directory : path
        Created if needed. Your own class's file is copied there from the
        file that defines it when the folder does not hold it yet (loading
        it back runs that file: ``trust_code=True``, ``--trust-code``).

    Returns
    -------
    Path
        The directory.

    Examples
    --------
    A CNN of your own, saved with its classes and pipeline, then loaded as
    every command loads it (``docs/bring-your-model.md``)::

        save_torch_model(net, {"architecture": {"file": "net.py", "class": "SmallCNN"},
                               "kwargs": {"n_classes": 3}, "classes": ["cat", "dog", "fox"],
                               "pipeline": {"resize": 36, "crop": 32, "mean": [0.5] * 3, "std": [0.25] * 3}},
                         "my-model")
        model = load_model("my-model", trust_code=True)
    """
    safetensors_torch = import_optional("safetensors.torch", "saving a torch model")
    try:
        text = json.dumps(config, indent=2, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InputError(f"`config` must be JSON-serialisable: {exc}.") from exc
    folder = Path(directory)
    architecture = config.get("architecture") if isinstance(config, dict) else None
    if isinstance(architecture, dict):  # the user's own class: rebuilt from that class, its file kept beside
        rebuilt = _own_class(module, config, folder)
    else:
        rebuilt = build_architecture(config)
    expected = set(rebuilt.state_dict())
    if set(module.state_dict()) != expected:
        raise InputError(
            f"`module` does not match architecture {config['architecture']!r} with the given kwargs "
            "(its parameter names differ); the saved model could not be loaded back."
        )
    folder.mkdir(parents=True, exist_ok=True)
    # weights first, config last, each replaced atomically: a reader never sees half a file
    with atomic_path(folder / WEIGHTS_FILE) as tmp:
        safetensors_torch.save_model(module, str(tmp))
    atomic_write_text(folder / CONFIG_FILE, text + "\n")
    return folder


def _own_class(module: Any, config: dict[str, Any], folder: Path) -> Any:
    """``module``'s own class rebuilt with the config's kwargs, its source file put in ``folder`` under the
    name the config gives (copied from the file defining the class when ``folder`` has none)."""
    import inspect
    import shutil

    spec = config["architecture"]
    file, class_name = spec.get("file"), spec.get("class")
    inside = isinstance(file, str) and not Path(file).is_absolute() and ".." not in Path(file).parts
    if not inside or not isinstance(class_name, str):
        raise InputError("`config['architecture']` must be a built-in name or {'file': 'net.py', 'class': 'Net'} "
                         f"with a file inside the model folder; got {spec!r}.")
    if type(module).__name__ != class_name:
        raise InputError(f"`config['architecture']['class']` is {class_name!r}, but `module` is a "
                         f"{type(module).__name__}.")
    target = folder / file
    if not target.is_file():
        source = inspect.getsourcefile(type(module))
        if source is None or not Path(source).is_file():
            raise InputError(f"`module`: the file defining {class_name} cannot be found; copy it to {str(target)!r}.")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return type(module)(**config.get("kwargs", {}))


def _torch_files(path: Path, name: str) -> tuple[Path, Path]:
    """(config.json, weights.safetensors) for a folder, config or weights path."""
    folder = path if path.is_dir() else path.parent
    config = path if path.suffix == ".json" else folder / CONFIG_FILE
    weights = path if path.suffix == ".safetensors" else folder / WEIGHTS_FILE
    if path.is_dir():  # a folder is a torch model; an ONNX file inside it is named by its own path
        _one_model_in(path, has_torch=config.is_file() and weights.is_file(), name=name)
    if config.is_file() and not weights.is_file():
        _read_json_object(config, name)  # a config.json that cannot be read is named as such, not as missing weights
    for needed in (config, weights):
        if not needed.is_file():
            raise InputError(
                f"`{name}`: a torch model needs {CONFIG_FILE} and {WEIGHTS_FILE} side by side; "
                f"{str(needed)!r} does not exist."
            )
    return config, weights


def _one_model_in(folder: Path, *, has_torch: bool, name: str) -> None:
    """A folder given as the model must hold one model: refuse a torch model beside ONNX files, or ONNX files alone.

    Which one was meant cannot be told from the folder, and the two may
    record different classes and pipelines.
    """
    onnx_files = sorted(p.name for p in folder.glob("*.onnx"))
    if not onnx_files:
        return
    listing = ", ".join(onnx_files[:3]) + (f" and {len(onnx_files) - 3} more" if len(onnx_files) > 3 else "")
    if has_torch:
        raise InputError(
            f"`{name}`: {str(folder)!r} holds a torch model ({CONFIG_FILE} + {WEIGHTS_FILE}) and ONNX files "
            f"({listing}); name the one you mean: {str(folder / CONFIG_FILE)!r} or {str(folder / onnx_files[0])!r}."
        )
    raise InputError(
        f"`{name}`: {str(folder)!r} is not a torch model folder (no {CONFIG_FILE} + {WEIGHTS_FILE}) but holds ONNX "
        f"files ({listing}); name the file: {str(folder / onnx_files[0])!r}."
    )


def _read_json_object(config_path: Path, name: str) -> dict[str, Any]:
    """A model's ``config.json`` as a dict; one line naming the file when it is not a readable JSON object."""
    try:
        config = json.loads(config_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: nested too deep
        reason = "nested too deep" if isinstance(exc, RecursionError) else f"{type(exc).__name__}: {str(exc)[:200]}"
        raise InputError(f"`{name}`: {str(config_path)!r} is not valid JSON ({reason}).") from exc
    if not isinstance(config, dict):
        raise InputError(f"`{name}`: {str(config_path)!r} must be a JSON object with an 'architecture' key.")
    return config


def read_torch_config(path: str | os.PathLike[str], *, name: str = "path") -> dict[str, Any]:
    """Read and check the ``config.json`` of a saved torch model."""
    config_path, _ = _torch_files(Path(path), name)
    config = _read_json_object(config_path, name)
    if "architecture" not in config:
        raise InputError(
            f"`{name}`: {str(config_path)!r} must be a JSON object with an 'architecture' key."
        )
    return config


def _first_lines(exc: BaseException) -> str:
    """An error's message on one line: its first two lines and how many more there were.

    torch's ``load_state_dict`` lists one size mismatch per tensor on its own line.
    """
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    more = f" (and {len(lines) - 2} more lines)" if len(lines) > 2 else ""
    return " ".join(lines[:2]) + more


def runs_code(path: str | os.PathLike[str]) -> bool:
    """Whether loading the model file runs code it brings: a TorchScript file, or a config naming an architecture file.

    Such files load only with ``trust_torchscript`` / ``trust_code``; every other format loads as data.
    """
    target = Path(path)
    if target.suffix.lower() in _TORCHSCRIPT_SUFFIXES:
        return True
    if is_xgboost_file(target):
        return False
    if target.suffix.lower() == ".skops":
        return skops_needs_trust(target)
    if hf.is_hf_folder(target):
        return hf.needs_code(hf.read_config(target))
    if target.suffix.lower() == keras_file.SUFFIX and target.is_file():
        return bool(keras_file.foreign_objects(keras_file.read_config(target)))
    config = target / CONFIG_FILE if target.is_dir() else target if target.suffix == ".json" else None
    if config is None or not config.is_file():
        return False
    try:
        return isinstance(json.loads(config.read_text()).get("architecture"), dict)
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError, RecursionError):
        return False


def load_torch_module(path: str | os.PathLike[str], *, name: str = "path", trust_code: bool = False) -> Any:
    """Rebuild a saved torch module from its config and safetensors weights.

    Parameters
    ----------
    path : path
        The model folder, its ``config.json`` or its ``weights.safetensors``.
    name : str
        Argument name used in error messages.
    trust_code : bool
        Allow a config naming the user's own architecture file (runs it).

    Returns
    -------
    torch.nn.Module
        In eval mode, on the CPU.
    """
    safetensors_torch = import_optional("safetensors.torch", "loading a torch model")
    config = read_torch_config(path, name=name)
    config_path, weights = _torch_files(Path(path), name)
    module = build_architecture(config, folder=config_path.parent, trust_code=trust_code, name=name)
    try:
        missing, unexpected = safetensors_torch.load_model(module, str(weights), strict=False)
    except Exception as exc:  # safetensors raises its own error types for corrupt files
        raise InputError(f"`{name}`: could not read weights from {str(weights)!r} ({_first_lines(exc)}).") from exc
    if missing or unexpected:
        raise InputError(
            f"`{name}`: the weights do not fit architecture {config['architecture']!r}: "
            f"missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}."
        )
    return module.eval()


def load_skops(
    path: str | os.PathLike[str],
    *,
    name: str = "path",
    trusted: Sequence[str] = (),
    trust_code: bool = False,
) -> Any:
    """Load a scikit-learn model from a ``.skops`` file, trusting only an explicit allowlist.

    Every type or function the file needs beyond skops' default set must be in
    :data:`fitaudit.models.skops_trust.TRUSTED_TYPES` or
    :data:`~fitaudit.models.skops_trust.TRUSTED_FUNCTIONS`, or named in
    ``trusted``; anything else is refused before the model is built, naming
    it. Trees and neighbour indices are then checked structurally
    (:func:`fitaudit.models.skops_trust.check_index_arrays`).

    Parameters
    ----------
    path : path
        The ``.skops`` file.
    name : str
        Argument name used in error messages (``"--model"`` on the CLI).
    trusted : sequence of str
        Further names (as :func:`skops.io.get_untrusted_types` writes them)
        the caller trusts on purpose.
    trust_code : bool
        Trust every name the file lists (``--trust-code``): only for files
        whose author you trust, since a function it names can run code.

    Examples
    --------
    >>> import numpy as np, skops.io, tempfile, os
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import FunctionTransformer
    >>> from sklearn.linear_model import LogisticRegression
    >>> path = os.path.join(tempfile.mkdtemp(), "m.skops")
    >>> x, y = np.abs(np.random.default_rng(0).normal(size=(20, 2))), np.arange(20) % 2
    >>> skops.io.dump(make_pipeline(FunctionTransformer(np.log1p), LogisticRegression()).fit(x, y), path)
    >>> type(load_skops(path)).__name__
    'Pipeline'
    """
    check_archive(path, name=name)
    skops_io = import_optional("skops.io", "loading a .skops model")
    file = os.fspath(path)
    try:
        untrusted = skops_io.get_untrusted_types(file=file)
    except Exception as exc:  # not a zip, or not a skops archive
        raise InputError(f"`{name}`: {file!r} is not a valid .skops file ({exc}).") from exc
    refused = [] if trust_code else skops_trust.refused_names(untrusted, trusted)
    if refused:
        raise skops_trust.refusal(file, name, refused)
    try:
        model = skops_io.load(file, trusted=list(untrusted))
    except Exception as exc:  # skops raises its own errors for schemas it cannot rebuild
        raise InputError(f"`{name}`: {file!r} could not be loaded as a .skops model ({_first_lines(exc)}).") from exc
    skops_trust.check_index_arrays(model, path=file, name=name)
    return model


def skops_needs_trust(path: str | os.PathLike[str]) -> bool:
    """Whether a ``.skops`` file names anything outside fitaudit's allowlist (it loads only with trust)."""
    check_archive(path, name="--model")
    skops_io = import_optional("skops.io", "loading a .skops model")
    try:
        return bool(skops_trust.refused_names(skops_io.get_untrusted_types(file=os.fspath(path))))
    except Exception:  # not a skops archive: load_skops says so
        return False


def _head(path: Path, size: int = 256) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(size)


def is_xgboost_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an XGBoost model file: ``.ubj``, or ``.json`` whose object starts with ``"learner"``."""
    target = Path(path)
    if not target.is_file():
        return False
    suffix = target.suffix.lower()
    if suffix == ".ubj":
        return True
    return suffix == ".json" and b'"learner"' in _head(target, 64)


def is_lightgbm_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a LightGBM model text file (``.txt`` starting with ``tree``)."""
    target = Path(path)
    return target.is_file() and target.suffix.lower() == ".txt" and _head(target, 8).startswith(b"tree")


def _declare_input(adapter: Classifier, shape: Sequence[int | None]) -> Classifier:
    """``adapter`` with the input shape its file declares and, for a channels-last or channel-less input,
    the layout channels-first images are put in (a flat input keeps the model's own flattening)."""
    adapter.input_shape = tuple(shape)
    layout = input_spec(adapter.input_shape).layout
    if layout in (CHANNELS_LAST, NO_CHANNEL_AXIS):
        adapter.image_layout = layout
    return adapter


def load_model(
    path: str | os.PathLike[str],
    *,
    trust_torchscript: bool = False,
    trust_code: bool = False,
    n_classes: int | None = None,
    batch_size: int = 256,
    device: Any = "cpu",
    name: str = "path",
) -> Classifier:
    """Load a model file safely and wrap it in a :class:`Classifier`.

    Parameters
    ----------
    path : path
        ``.onnx`` file; torch model folder, ``config.json`` or
        ``weights.safetensors``; ``.skops`` file; XGBoost ``.json``/``.ubj``
        or LightGBM ``.txt`` file; TorchScript file (only with
        ``trust_torchscript``).
    trust_torchscript : bool
        Allow :func:`torch.jit.load`, which runs code stored in the file.
        Only for files you trust.
    trust_code : bool
        Allow a torch folder whose ``config.json`` names the user's own
        architecture file (imports it, running its code).
    n_classes, batch_size, device
        Passed to the adapter (see :func:`fitaudit.models.as_classifier`);
        ``n_classes`` defaults to the config's ``"n_classes"`` for torch.
    name : str
        Argument name used in error messages (``"--model"`` on the CLI).

    Returns
    -------
    Classifier
        The native model is its ``.model``.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"`{name}` must be a file or folder path; got {type(path).__name__}.")
    target = Path(path)
    if not target.exists():
        raise InputError(f"`{name}`: {str(target)!r} does not exist.")
    suffix = target.suffix.lower()
    options: dict[str, Any] = {"n_classes": n_classes, "batch_size": batch_size, "device": device}
    if suffix == ".onnx":
        from fitaudit.models.onnx_adapter import OnnxClassifier, open_session

        return OnnxClassifier(open_session(target, device=str(device), name=name), **options)
    if is_xgboost_file(target) or is_lightgbm_file(target):
        from fitaudit.models import boosting_adapter as boosting

        if is_xgboost_file(target):
            return boosting.XGBoostClassifier(boosting.load_booster(target, "xgboost", name=name),
                                              n_classes=n_classes, batch_size=batch_size)
        return boosting.LightGBMClassifier(boosting.load_booster(target, "lightgbm", name=name),
                                           n_classes=n_classes, batch_size=batch_size)
    if hf.is_hf_folder(target):
        config = hf.read_config(target, name=name)
        labels = config.get("id2label")
        if n_classes is None and isinstance(labels, dict) and len(labels) >= 2:
            options["n_classes"] = len(labels)
        adapter = wrap_native(hf.load_module(target, trust_code=trust_code, name=name), **options)
        adapter.input_shape = tuple(hf.input_shape(config))
        return adapter
    if suffix == keras_file.SUFFIX:
        shape = keras_file.input_shape(keras_file.read_config(target, name=name))
        module = keras_file.load_module(target, trust_code=trust_code, name=name)
        if n_classes is None:
            options["n_classes"] = keras_file.n_outputs(module)
        adapter = wrap_native(module, **options)
        adapter.format_name = "Keras"
        return adapter if shape is None else _declare_input(adapter, shape)
    if target.is_dir() or suffix in (".json", ".safetensors"):
        config = read_torch_config(target, name=name)
        if n_classes is None and isinstance(config.get("n_classes"), int):
            options["n_classes"] = config["n_classes"]
        adapter = wrap_native(load_torch_module(target, name=name, trust_code=trust_code), **options)
        shape = config.get("input_shape")
        if isinstance(shape, list) and all(isinstance(d, int) or d is None for d in shape):
            _declare_input(adapter, shape)
        return adapter
    if suffix == ".skops":
        return wrap_native(load_skops(target, name=name, trust_code=trust_code), **options)
    if suffix in _TORCHSCRIPT_SUFFIXES and trust_torchscript:
        torch = import_optional("torch", "loading a TorchScript model")
        try:
            module = torch.jit.load(str(target), map_location="cpu")
        except Exception as exc:  # torch raises RuntimeError with a long message
            raise InputError(
                f"`{name}`: {str(target)!r} is not a TorchScript archive (a torch.save pickle?); "
                f"{_SAFE_FORMATS}."
            ) from exc
        return wrap_native(module, **options)
    if suffix in _TORCHSCRIPT_SUFFIXES:
        raise InputError(
            f"`{name}`: {str(target)!r} may be a pickle, and fitaudit never unpickles model files; "
            f"{_SAFE_FORMATS}; a TorchScript file you trust loads with trust_torchscript=True "
            "(--trust-torchscript)."
        )
    if suffix in _PICKLE_SUFFIXES:
        raise InputError(
            f"`{name}`: {str(target)!r} is a pickle, and fitaudit never unpickles model files; "
            f"{_SAFE_FORMATS}."
        )
    raise InputError(
        f"`{name}`: cannot tell the format of {str(target)!r} from its name; {_SAFE_FORMATS}."
    )


#: the keys :func:`read_model_metadata` reads and :func:`export_onnx` writes
METADATA_KEYS = ("classes", "pipeline", "data_fingerprint")


@dataclasses.dataclass(frozen=True)
class ModelMetadata:
    """What a model file says about the data it expects (every field optional).

    Attributes
    ----------
    classes : list of str or None
        Class names in the order of the model's outputs.
    pipeline : dict or None
        The evaluation transform (``resize``, ``crop``, ``mean``, ``std``;
        :meth:`fitaudit.data.images.EvalPipeline.from_dict`).
    data_fingerprint : str or None
        A fingerprint of the training set (``fitaudit shapes train`` writes
        it), so runs of one procedure on the same data can be recognised.
    input_shape : tuple or None
        The shape of one example the model declares (``None`` entries free),
        read without running the model: an ONNX graph's input, a torch
        config's ``input_shape`` (else the first layer of a built-in
        architecture), a scikit-learn model's ``n_features_in_``.
    """

    classes: list[str] | None = None
    pipeline: dict[str, Any] | None = None
    data_fingerprint: str | None = None
    input_shape: tuple[int | None, ...] | None = None

    @property
    def spec(self) -> InputSpec:
        """Grey or RGB, and the layout, of the model's image input (:func:`fitaudit.models.layout.input_spec`)."""
        return input_spec(self.input_shape)

    def check_classes(self, names: Sequence[str], what: str) -> None:
        """Class names given for the model's outputs must be the recorded ones, in order.

        Another order would score every input against the wrong label. ``what``
        names the argument in the message, e.g. ``"`--classes`"``.
        """
        if self.classes and list(names) != list(self.classes):
            raise InputError(
                f"{what} {','.join(map(str, names))} contradicts the class names the model records, in its "
                f"label order: {','.join(self.classes)}."
            )


def _onnx_properties(path: Path, name: str) -> dict[str, Any]:
    """The ONNX file's metadata properties, each value parsed as JSON where it is JSON, and ``"input_shape"``.

    ``"input_shape"`` is the declared shape of one example of the graph's
    input (symbolic sizes as None), unless a property of that name exists; a
    graph with several inputs (one per table column) declares none.
    """
    onnx = import_optional("onnx", "reading an ONNX model's metadata")
    try:
        proto = onnx.load_model(str(path), load_external_data=False)
    except Exception as exc:  # onnx raises DecodeError and others for corrupt files
        raise InputError(f"`{name}`: {str(path)!r} could not be read as an ONNX model ({exc}).") from exc
    values: dict[str, Any] = {}
    for entry in proto.metadata_props:
        try:
            values[entry.key] = json.loads(entry.value)
        except (json.JSONDecodeError, RecursionError):
            values[entry.key] = entry.value
    weights = {init.name for init in proto.graph.initializer}
    inputs = [i for i in proto.graph.input if i.name not in weights]
    if len(inputs) == 1 and inputs[0].type.HasField("tensor_type") and inputs[0].type.tensor_type.HasField("shape"):
        dims = [d.dim_value if d.HasField("dim_value") else None for d in inputs[0].type.tensor_type.shape.dim]
        values.setdefault("input_shape", dims[1:])
    return values


def _torch_input_shape(config: dict[str, Any]) -> list[Any] | None:
    """A torch config's ``input_shape``, else the first layer's input of a built-in architecture (no user code runs).

    The architecture is built on torch's ``meta`` device: shapes only, no weights allocated or drawn from
    torch's global generator (which a training thread may hold, :data:`fitaudit.models.training.TORCH_RNG_LOCK`).
    """
    shape = config.get("input_shape")
    if shape is not None or not isinstance(config.get("architecture"), str):
        return shape if isinstance(shape, list) else None
    try:
        with import_optional("torch", "reading a torch model's input shape").device("meta"):
            declared = first_layer_shape(build_architecture(config))
    except Exception:  # noqa: BLE001 -- an architecture that cannot be built declares nothing here; loading says why
        return None
    return None if declared is None else list(declared)


def _declared_shape(values: dict[str, Any]) -> tuple[int | None, ...] | None:
    """``values["input_shape"]`` as a tuple of positive ints and Nones, or None when absent or malformed."""
    shape = values.get("input_shape")
    if not isinstance(shape, list) or not all(d is None or (isinstance(d, int) and d > 0) for d in shape):
        return None
    return tuple(shape)


def read_model_metadata(path: str | os.PathLike[str], *, name: str = "--model") -> ModelMetadata:
    """Read the class names, evaluation pipeline and training-data fingerprint a model file records.

    A torch folder's ``config.json`` holds them as top-level keys (older
    files from ``fitaudit shapes train``: ``metadata.class_names``,
    ``metadata.pipeline`` and ``metadata.data_fingerprint``); an ONNX file as metadata properties
    (JSON text); a Hugging Face folder in ``config.json`` (``id2label``)
    and ``preprocessor_config.json`` (:mod:`fitaudit.models.hf`). Every
    format but XGBoost's and skops' declares its input's shape where it can
    (:attr:`ModelMetadata.input_shape`; :func:`model_input_spec` reads a
    skops model's); other formats record nothing else.

    Raises
    ------
    InputError
        A recorded value of the wrong type (e.g. ``classes`` not a list of strings).
    """
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix == ".onnx":
        values = _onnx_properties(target, name)
        where = f"the metadata of {str(target)!r}"
    elif is_xgboost_file(target):  # its classes are the adapter's (boosting_adapter)
        return ModelMetadata()
    elif hf.is_hf_folder(target):
        config = hf.read_config(target, name=name)
        values = {"classes": hf.class_names(config, name=name), "pipeline": hf.recorded_pipeline(target, name=name),
                  "input_shape": hf.input_shape(config)}
        where = f"the Hugging Face files of {str(target)!r}"
    elif suffix == keras_file.SUFFIX:
        return ModelMetadata(input_shape=_declared_shape(
            {"input_shape": keras_file.input_shape(keras_file.read_config(target, name=name))}))
    elif target.is_dir() or suffix in (".json", ".safetensors"):
        values = dict(read_torch_config(target, name=name))
        recorded = values.get("metadata")
        extra: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        values.setdefault("classes", extra.get("class_names"))
        values.setdefault("data_fingerprint", extra.get("data_fingerprint"))
        values.setdefault("pipeline", extra.get("pipeline"))
        values["input_shape"] = _torch_input_shape(values)
        where = f"the config.json of {str(target)!r}"
    else:
        return ModelMetadata()
    classes, pipeline, data = (values.get(key) for key in METADATA_KEYS)
    if classes is not None and not (isinstance(classes, list) and all(isinstance(c, str) for c in classes)):
        raise InputError(f"`{name}`: 'classes' in {where} must be a list of class names; got {classes!r}.")
    if pipeline is not None and not isinstance(pipeline, dict):
        raise InputError(f"`{name}`: 'pipeline' in {where} must be a JSON object; got {pipeline!r}.")
    return ModelMetadata(
        classes=classes, pipeline=pipeline, data_fingerprint=data if isinstance(data, str) else None,
        input_shape=_declared_shape(values),
    )


def model_input_spec(
    path: str | os.PathLike[str], metadata: ModelMetadata | None = None, *, name: str = "--model"
) -> InputSpec:
    """What a model file declares about its image input (:func:`fitaudit.models.layout.input_spec`).

    ``metadata`` (:func:`read_model_metadata` of ``path``) is read when not
    given; a ``.skops`` file, which records nothing beside the model, is
    loaded for its ``n_features_in_`` (flat images).
    """
    if Path(path).suffix.lower() == ".skops":
        features = getattr(load_skops(path, name=name), "n_features_in_", None)
        return input_spec((int(features),) if isinstance(features, int) else None)
    return (metadata if metadata is not None else read_model_metadata(path, name=name)).spec


def export_onnx(
    module: Any,
    path: str | os.PathLike[str],
    *,
    input_shape: tuple[int, ...],
    metadata: dict[str, Any] | None = None,
) -> Path:
    """Export a torch module to ONNX (batch dimension dynamic) with metadata properties.

    Uses torch's dynamo exporter (needs ``onnxscript``, in the ``onnx``
    extra) and falls back to the TorchScript exporter where that fails.

    Parameters
    ----------
    module : torch.nn.Module
        Put in eval mode before export.
    path : path
        The ``.onnx`` file, written atomically.
    input_shape : tuple of int
        Shape of one example, e.g. ``(3, 224, 224)``.
    metadata : dict, optional
        JSON values stored as metadata properties, e.g. ``classes``,
        ``pipeline``, ``data_fingerprint`` (:func:`read_model_metadata`).
    """
    torch = import_optional("torch", "exporting to ONNX")
    onnx = import_optional("onnx", "exporting to ONNX")
    module = module.eval()
    weights = next(iter(module.parameters()), None)  # the example where the weights are (a GPU-trained network)
    example = (torch.zeros((2, *input_shape), device=None if weights is None else weights.device),)
    target = Path(path)
    with atomic_path(target) as tmp:
        try:
            torch.onnx.export(
                module, example, str(tmp), dynamo=True, input_names=["x"], output_names=["logits"],
                dynamic_shapes=({0: torch.export.Dim("batch")},), external_data=False, verbose=False,
            )
        except Exception:  # the dynamo exporter cannot trace this module: the TorchScript exporter
            torch.onnx.export(
                module, example, str(tmp), dynamo=False, input_names=["x"], output_names=["logits"],
                dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
            )
        proto = onnx.load_model(str(tmp))
        for key, value in (metadata or {}).items():
            entry = proto.metadata_props.add()
            entry.key, entry.value = str(key), json.dumps(value)
        onnx.save_model(proto, str(tmp))
    return target


def class_order(
    model: Any = None, classes: str | Sequence[str] | None = None, *, name: str = "classes"
) -> list[str] | None:
    """The class names in the model's output order: one rule for every command and the API.

    ``classes`` (a list, or names separated by commas as ``--classes`` takes
    them) wins; when the model file records class names too, they must be
    the same in the same order (another order would score every image
    against the wrong label). Without ``classes``, the names the model file
    records (``model`` a path; an in-memory model records none); None when
    neither gives them (folders are then read in sorted order, the
    torchvision ``ImageFolder`` convention, and a model at chance on them
    is stopped by :func:`fitaudit.models.labels.stop_at_chance`).

    Parameters
    ----------
    model : path or model, optional
    classes : str or sequence of str, optional
    name : str
        The argument or option, for errors (``--classes`` on the command line).
    """
    recorded = read_model_metadata(model, name="--model") if isinstance(model, (str, os.PathLike)) else None
    if classes is None:
        return recorded.classes if recorded is not None and recorded.classes else None
    given = [c.strip() for c in classes.split(",")] if isinstance(classes, str) else [str(c) for c in classes]
    given = [c for c in given if c]
    if not given:
        raise InputError(f"`{name}` must list class names (separated by commas on the command line); got none.")
    if len(set(given)) != len(given):
        raise InputError(f"`{name}` names a class twice: {','.join(given)}.")
    if recorded is not None:
        recorded.check_classes(given, f"`{name}`")
    return given


def runs_pipelines(
    paths: Sequence[str | os.PathLike[str]], *, name: str = "--model", models_name: str = "--models",
) -> tuple[list[tuple[str, Any]], InputSpec | None]:
    """Each model path with the pipeline it records, and the input (grey or RGB, size) they declare alike.

    The first is what :func:`fitaudit.data.pipeline_rule.choose_pipeline`
    reads as ``recorded``; the second gives its ``channels`` and ``input_size``.

    Raises
    ------
    InputError
        Runs declaring different channel counts (naming ``models_name``).
    """
    metadata = [(str(path), read_model_metadata(path, name=name)) for path in paths]
    specs = [(path, model_input_spec(path, meta)) for path, meta in metadata]
    declared = [(path, spec) for path, spec in specs if spec.channels is not None]
    if len({spec.channels for _, spec in declared}) > 1:
        listing = ", ".join(f"{path} ({spec.channels})" for path, spec in declared)
        raise InputError(f"`{models_name}`: the runs take images of different channel counts: {listing}.")
    return [(path, meta.pipeline) for path, meta in metadata], declared[0][1] if declared else None


def runs_class_order(
    paths: Sequence[str | os.PathLike[str]], classes: str | Sequence[str] | None = None, *, name: str = "classes",
    models_name: str = "--models",
) -> list[str] | None:
    """:func:`class_order` for several model files that must predict the same classes in the same order.

    The runs that record class names must record the same ones; ``classes``,
    when given, must be those (it is the order when none records any).

    Parameters
    ----------
    paths : sequence of paths
        The model files (N runs of one procedure, a population's models).
    classes : str or sequence of str, optional
    name, models_name : str
        The arguments or options naming ``classes`` and ``paths``, for errors.
    """
    recorded = [(path, read_model_metadata(path, name=models_name).classes) for path in paths]
    named = [(path, names) for path, names in recorded if names]
    for path, names in named[1:]:
        if names != named[0][1]:
            raise InputError(
                f"`{models_name}`: the models record different class names ({','.join(named[0][1])} in "
                f"{str(named[0][0])!r}, {','.join(names)} in {str(path)!r}); they must predict the same classes "
                "in the same order."
            )
    return class_order(named[0][0] if named else None, classes, name=name)
