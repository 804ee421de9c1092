"""Saving and safe loading of model files.

Formats (nothing here ever unpickles):

* ``.onnx`` -- run by onnxruntime;
* a torch model as a folder with ``weights.safetensors`` and ``config.json``
  (``{"architecture": NAME, "kwargs": {...}}`` naming a built-in
  architecture, see :mod:`fitaudit.models.architectures`; optional
  ``"n_classes"``, ``"input_shape"`` (shape of one example, checked on
  every call) and free-form ``"metadata"``), given as
  the folder, the ``config.json`` or the ``weights.safetensors`` path;
* ``.skops`` -- a scikit-learn model, loaded with only scikit-learn, numpy
  and scipy types trusted;
* TorchScript (``.pt``, ``.pth``, ``.ts``, ``.torchscript``) only with
  ``trust_torchscript=True``. Other ``.pt``/``.pth``/``.pkl``/``.joblib``
  files are refused: they are pickles, which run code when loaded.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, cast

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.checkpoint import atomic_path, atomic_write_text
from fitaudit.models.architectures import build_architecture
from fitaudit.models.base import Classifier

WEIGHTS_FILE = "weights.safetensors"
CONFIG_FILE = "config.json"

#: top-level modules whose types a .skops file may contain (not ``builtins``:
#: that would trust ``eval`` and ``exec`` stored as, e.g., a FunctionTransformer's function)
TRUSTED_SKOPS_MODULES = ("sklearn", "numpy", "scipy")

_PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".sav", ".dill")
_TORCHSCRIPT_SUFFIXES = (".pt", ".pth", ".ts", ".torchscript")

_SAFE_FORMATS = (
    "use ONNX (.onnx), safetensors weights with a config.json (fitaudit.models.save_torch_model), "
    "or skops (.skops) for scikit-learn"
)


def save_torch_model(module: Any, config: dict[str, Any], directory: str | os.PathLike[str]) -> Path:
    """Save a torch module as ``weights.safetensors`` + ``config.json``.

    Parameters
    ----------
    module : torch.nn.Module
        A module built by the registered architecture ``config["architecture"]``.
    config : dict
        ``{"architecture": NAME, "kwargs": {...}}`` plus optional JSON
        entries (``"n_classes"``, ``"input_shape"``, ``"metadata"``).
    directory : path
        Created if needed.

    Returns
    -------
    Path
        The directory.
    """
    safetensors_torch = import_optional("safetensors.torch", "saving a torch model")
    try:
        text = json.dumps(config, indent=2, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InputError(f"`config` must be JSON-serialisable: {exc}.") from exc
    rebuilt = build_architecture(config)
    expected = set(rebuilt.state_dict())
    if set(module.state_dict()) != expected:
        raise InputError(
            f"`module` does not match architecture {config['architecture']!r} with the given kwargs "
            "(its parameter names differ); the saved model could not be loaded back."
        )
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    # weights first, config last, each replaced atomically: a reader never sees half a file
    with atomic_path(folder / WEIGHTS_FILE) as tmp:
        safetensors_torch.save_model(module, str(tmp))
    atomic_write_text(folder / CONFIG_FILE, text + "\n")
    return folder


def _torch_files(path: Path, name: str) -> tuple[Path, Path]:
    """(config.json, weights.safetensors) for a folder, config or weights path."""
    folder = path if path.is_dir() else path.parent
    config = path if path.suffix == ".json" else folder / CONFIG_FILE
    weights = path if path.suffix == ".safetensors" else folder / WEIGHTS_FILE
    for needed in (config, weights):
        if not needed.is_file():
            raise InputError(
                f"`{name}`: a torch model needs {CONFIG_FILE} and {WEIGHTS_FILE} side by side; "
                f"{str(needed)!r} does not exist."
            )
    return config, weights


def read_torch_config(path: str | os.PathLike[str], *, name: str = "path") -> dict[str, Any]:
    """Read and check the ``config.json`` of a saved torch model."""
    config_path, _ = _torch_files(Path(path), name)
    try:
        config = json.loads(config_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"`{name}`: {str(config_path)!r} is not valid JSON ({exc}).") from exc
    if not isinstance(config, dict) or "architecture" not in config:
        raise InputError(
            f"`{name}`: {str(config_path)!r} must be a JSON object with an 'architecture' key."
        )
    return config


def load_torch_module(path: str | os.PathLike[str], *, name: str = "path") -> Any:
    """Rebuild a saved torch module from its config and safetensors weights.

    Parameters
    ----------
    path : path
        The model folder, its ``config.json`` or its ``weights.safetensors``.
    name : str
        Argument name used in error messages.

    Returns
    -------
    torch.nn.Module
        In eval mode, on the CPU.
    """
    safetensors_torch = import_optional("safetensors.torch", "loading a torch model")
    config = read_torch_config(path, name=name)
    _, weights = _torch_files(Path(path), name)
    module = build_architecture(config)
    try:
        missing, unexpected = safetensors_torch.load_model(module, str(weights), strict=False)
    except Exception as exc:  # safetensors raises its own error types for corrupt files
        raise InputError(f"`{name}`: could not read weights from {str(weights)!r} ({exc}).") from exc
    if missing or unexpected:
        raise InputError(
            f"`{name}`: the weights do not fit architecture {config['architecture']!r}: "
            f"missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}."
        )
    return module.eval()


def load_skops(path: str | os.PathLike[str], *, name: str = "path") -> Any:
    """Load a scikit-learn model from a ``.skops`` file, trusting only known types.

    Every type the file needs beyond skops' defaults must come from
    :data:`TRUSTED_SKOPS_MODULES`; anything else (a custom class, a function
    from another library) is refused, naming the types.
    """
    skops_io = import_optional("skops.io", "loading a .skops model")
    try:
        untrusted = skops_io.get_untrusted_types(file=os.fspath(path))
    except Exception as exc:  # not a zip, or not a skops archive
        raise InputError(f"`{name}`: {os.fspath(path)!r} is not a valid .skops file ({exc}).") from exc
    refused = [t for t in untrusted if t.split(".")[0] not in TRUSTED_SKOPS_MODULES]
    if refused:
        raise InputError(
            f"`{name}`: {os.fspath(path)!r} contains types fitaudit does not trust: "
            f"{', '.join(refused)}; only scikit-learn, numpy and scipy types are loaded."
        )
    return skops_io.load(os.fspath(path), trusted=list(untrusted))


def load_model(
    path: str | os.PathLike[str],
    *,
    trust_torchscript: bool = False,
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
        ``weights.safetensors``; ``.skops`` file; TorchScript file (only with
        ``trust_torchscript``).
    trust_torchscript : bool
        Allow :func:`torch.jit.load`, which runs code stored in the file.
        Only for files you trust.
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
    from fitaudit.models.dispatch import as_classifier as _as_classifier

    def as_classifier(native: Any, **kwargs: Any) -> Classifier:
        """A native model (never a protocol object here) wrapped in its adapter."""
        return cast(Classifier, _as_classifier(native, **kwargs))

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
    if target.is_dir() or suffix in (".json", ".safetensors"):
        config = read_torch_config(target, name=name)
        if n_classes is None and isinstance(config.get("n_classes"), int):
            options["n_classes"] = config["n_classes"]
        adapter = as_classifier(load_torch_module(target, name=name), **options)
        shape = config.get("input_shape")
        if isinstance(shape, list) and all(isinstance(d, int) or d is None for d in shape):
            adapter.input_shape = tuple(shape)
        return adapter
    if suffix == ".skops":
        return as_classifier(load_skops(target, name=name), **options)
    if suffix in _TORCHSCRIPT_SUFFIXES and trust_torchscript:
        torch = import_optional("torch", "loading a TorchScript model")
        try:
            module = torch.jit.load(str(target), map_location="cpu")
        except Exception as exc:  # torch raises RuntimeError with a long message
            raise InputError(
                f"`{name}`: {str(target)!r} is not a TorchScript archive (a torch.save pickle?); "
                f"{_SAFE_FORMATS}."
            ) from exc
        return as_classifier(module, **options)
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
