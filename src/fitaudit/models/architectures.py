"""Registry of built-in torch architectures, loadable from a JSON config.

A saved torch model is ``weights.safetensors`` plus a JSON config
``{"architecture": NAME, "kwargs": {...}}``; :func:`build_architecture`
rebuilds the module from the config alone, so no code is ever unpickled.
A module that defines networks ends with a plain dict ``ARCHITECTURES``
(name -> builder); :func:`architectures` gathers this package's own
(:mod:`~fitaudit.models.torch_nets`, :mod:`~fitaudit.models.shapes_nets`, by
explicit import) and those of every module declared under the entry-point
group :data:`ENTRY_POINT_GROUP` in a distribution's metadata: fitaudit's
PGDL zoo networks (:mod:`fitaudit.pgdl.nets`) are declared there in
``pyproject.toml``, so ``models/`` names no instrument and another package
can add its own architectures the same way.

A user's own architecture is named in the config as
``{"architecture": {"file": "net.py", "class": "Net"}, "kwargs": {...}}`` (a Python file inside the model
folder: a path leaving it, such as ``../net.py``, is refused, so that the
model's fingerprint, which hashes the folder, covers the code); importing it
runs the user's code, so :func:`build_architecture` does so only with
``trust_code=True`` (``--trust-code`` on the command line).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError

#: entry-point group of further modules with an ``ARCHITECTURES`` dict (name -> builder)
ENTRY_POINT_GROUP = "fitaudit.architectures"


@functools.cache
def architectures() -> dict[str, Callable[..., Any]]:
    """Every built-in architecture by name: ``builder(**kwargs) -> torch.nn.Module`` (imports torch).

    This package's networks by explicit import, then the ``ARCHITECTURES``
    of each module declared under :data:`ENTRY_POINT_GROUP`.
    """
    from fitaudit.models import shapes_nets, torch_nets

    table = {**torch_nets.ARCHITECTURES, **shapes_nets.ARCHITECTURES}
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        table.update(entry.load().ARCHITECTURES)
    return table


def list_architectures() -> list[str]:
    """Names of every built-in architecture."""
    return sorted(architectures())


def _user_class(spec: dict[str, Any], *, folder: Path, trust_code: bool, name: str) -> Any:
    """The class a config names as ``{"file": "net.py", "class": "Net"}``, imported only when trusted."""
    file, class_name = spec.get("file"), spec.get("class")
    if not isinstance(file, str) or not isinstance(class_name, str):
        raise InputError(
            f"`{name}`: config.json 'architecture' must be a built-in name or "
            f'{{"file": "net.py", "class": "Net"}}; got {spec!r}.'
        )
    path = (folder / file).resolve()
    if Path(file).is_absolute() or not path.is_relative_to(folder.resolve()):
        raise InputError(
            f"`{name}`: config.json names the architecture file {file!r}, which is outside the model folder "
            f"{str(folder)!r}; put the file inside the folder (next to config.json)."
        )
    if not trust_code:
        raise InputError(
            f"`{name}`: config.json names the Python file {str(path)!r} (class {class_name!r}) as the "
            "model's architecture; building it runs that file's code, which fitaudit never does "
            "unasked. If you trust the file, pass --trust-code (trust_code=True); otherwise export "
            "the model to ONNX."
        )
    if not path.is_file():
        raise InputError(f"`{name}`: the architecture file {str(path)!r} named in config.json does not exist.")
    module_name = "fitaudit_user_architecture_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
    spec_ = importlib.util.spec_from_file_location(module_name, path)
    if spec_ is None or spec_.loader is None:
        raise InputError(f"`{name}`: {str(path)!r} cannot be imported as a Python module.")
    module = importlib.util.module_from_spec(spec_)
    try:
        spec_.loader.exec_module(module)
    except Exception as exc:  # the user's code may raise anything
        raise InputError(f"`{name}`: running {str(path)!r} failed ({type(exc).__name__}: {exc}).") from exc
    found = getattr(module, class_name, None)
    if not isinstance(found, type):
        defined = sorted(k for k, v in vars(module).items() if isinstance(v, type) and v.__module__ == module_name)
        raise InputError(
            f"`{name}`: {str(path)!r} does not define a class {class_name!r} (config.json "
            f"'architecture.class'); it defines: {', '.join(defined) or 'no classes'}."
        )
    return found


def build_architecture(
    config: Any, *, folder: str | os.PathLike[str] | None = None, trust_code: bool = False, name: str = "config"
) -> Any:
    """Build the torch module that ``config`` describes.

    Parameters
    ----------
    config : dict
        ``{"architecture": name, "kwargs": {...}}`` naming a registered
        architecture, or ``{"architecture": {"file": "net.py", "class":
        "Net"}, "kwargs": {...}}`` naming a user's own class in a Python file
        (relative to ``folder``); kwargs must be JSON values accepted by the
        builder or the class.
    folder : path, optional
        Where a user's architecture file is looked up (the model folder).
    trust_code : bool
        Allow importing a user's architecture file, which runs its code.
    name : str
        Argument named in error messages (``"--model"`` on the command line).
    """
    if not isinstance(config, dict) or "architecture" not in config:
        raise InputError(
            "`config` must be a JSON object with an 'architecture' key and optional 'kwargs'; "
            f"got {type(config).__name__}."
        )
    arch = config["architecture"]
    kwargs = config.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise InputError(f"`config['kwargs']` must be a JSON object; got {type(kwargs).__name__}.")
    if isinstance(arch, dict):
        builder = _user_class(arch, folder=Path(folder or "."), trust_code=trust_code, name=name)
        label = f"{arch['class']} from {arch['file']}"
    else:
        builders = architectures()
        if not isinstance(arch, str) or arch not in builders:
            known = ", ".join(sorted(builders)) or "none registered"
            raise InputError(
                f"`config['architecture']` must be a built-in architecture ({known}) or "
                f'{{"file": ..., "class": ...}}; got {arch!r}.'
            )
        builder, label = builders[arch], repr(arch)
    _check_size(builder, kwargs, label, name)
    try:
        return builder(**kwargs)
    except TypeError as exc:
        raise InputError(f"`config['kwargs']` do not fit architecture {label}: {exc}.") from exc


def _check_size(builder: Callable[..., Any], kwargs: dict[str, Any], label: str, name: str) -> None:
    """Refuse a config whose network would not fit in memory, from a build on torch's ``meta`` device
    (shapes only, nothing allocated); a builder that cannot build there is built as it is."""
    from fitaudit._validation import check_memory

    try:
        import torch
    except ImportError:  # the build below names the missing extra
        return
    try:
        with torch.device("meta"):
            module = builder(**kwargs)
        count = sum(int(p.numel()) for p in module.parameters()) + sum(int(b.numel()) for b in module.buffers())
    except Exception:  # the real build below reports what is wrong with the kwargs
        return
    check_memory(4 * count, f"`{name}`: the network config.json asks for ({label}, {count:,} float32 parameters)",
                 fix="check its 'kwargs'")
