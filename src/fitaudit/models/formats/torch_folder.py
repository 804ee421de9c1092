"""fitaudit's torch model folder: ``weights.safetensors`` beside a ``config.json`` naming the architecture.

The config is ``{"architecture": NAME, "kwargs": {...}}`` naming a
built-in architecture (:mod:`fitaudit.models.architectures`), with optional
``"n_classes"``, ``"input_shape"`` (shape of one example, checked on every
call), ``"classes"``, ``"pipeline"``, ``"data_fingerprint"`` and free-form
``"metadata"``; the model is given as the folder, the ``config.json`` or the
``weights.safetensors`` path. The architecture may be the user's own class,
``{"file": "net.py", "class": "Net"}``, built only with ``trust_code=True``
since that runs the file. Weights are read from safetensors (tensors, no
pickle). :func:`save_torch_model` writes such a folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.checkpoint import atomic_path, atomic_write_text
from fitaudit.models.architectures import build_architecture
from fitaudit.models.base import Classifier
from fitaudit.models.formats.base import (
    ModelFormat,
    ModelMetadata,
    declare_input,
    first_lines,
    recorded_metadata,
)
from fitaudit.models.layout import first_layer_shape

WEIGHTS_FILE = "weights.safetensors"
CONFIG_FILE = "config.json"


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
        raise InputError(f"`{name}`: could not read weights from {str(weights)!r} ({first_lines(exc)}).") from exc
    if missing or unexpected:
        raise InputError(
            f"`{name}`: the weights do not fit architecture {config['architecture']!r}: "
            f"missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}."
        )
    return module.eval()


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


class TorchFolder(ModelFormat):
    """fitaudit's torch model folder (module docstring): a folder, or its ``config.json`` or ``weights.safetensors``.

    Tried after the formats that also live in folders or ``.json`` files
    (XGBoost, Hugging Face), it takes every other folder, so that a folder
    holding ONNX files or missing a file is refused naming what it lacks.
    """

    name = "torch"
    kind = "torch"
    runs_on = "torch"
    suffixes = (".json", ".safetensors")

    def recognises(self, path: Path) -> bool:
        return path.is_dir() or path.suffix.lower() in self.suffixes

    def load(
        self, path: Path, *, n_classes: int | None, batch_size: int | None, device: Any, trust_code: bool,
        trust_torchscript: bool, name: str,
    ) -> Classifier:
        from fitaudit.models.native import wrap_native

        config = read_torch_config(path, name=name)
        if n_classes is None and isinstance(config.get("n_classes"), int):
            n_classes = config["n_classes"]
        adapter = wrap_native(load_torch_module(path, name=name, trust_code=trust_code), n_classes=n_classes,
                              batch_size=batch_size, device=device)
        shape = config.get("input_shape")
        if isinstance(shape, list) and all(isinstance(d, int) or d is None for d in shape):
            declare_input(adapter, shape)
        return adapter

    def runs_code(self, path: Path) -> bool:
        """Whether the config names the user's own architecture file (``{"file": ..., "class": ...}``), whichever
        of the folder, its config or its weights is given."""
        config = path / CONFIG_FILE if path.is_dir() else path if path.suffix == ".json" else path.parent / CONFIG_FILE
        if not config.is_file():
            return False
        try:
            return isinstance(json.loads(config.read_text()).get("architecture"), dict)
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError, RecursionError):
            return False

    def metadata(self, path: Path, *, name: str) -> ModelMetadata:
        """The config's top-level ``classes``, ``pipeline``, ``data_fingerprint`` (older files from ``fitaudit
        shapes train``: under ``metadata``, the classes as ``class_names``) and ``input_shape``."""
        values = dict(read_torch_config(path, name=name))
        recorded = values.get("metadata")
        extra: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        values.setdefault("classes", extra.get("class_names"))
        values.setdefault("data_fingerprint", extra.get("data_fingerprint"))
        values.setdefault("pipeline", extra.get("pipeline"))
        values["input_shape"] = _torch_input_shape(values)
        return recorded_metadata(values, f"the config.json of {str(path)!r}", name)
