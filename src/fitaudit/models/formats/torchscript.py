"""TorchScript archives (``.pt``, ``.pth``, ``.ts``, ``.torchscript``): loaded only when the caller trusts them.

:func:`torch.jit.load` runs code stored in the file, and the same suffixes
name ``torch.save`` pickles, which run code when unpickled; fitaudit never
unpickles. So such a file loads only with ``trust_torchscript=True``
(``--trust-torchscript``), and then only as a TorchScript archive: a
pickle is refused, naming the safe formats.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.models.base import Classifier
from fitaudit.models.formats.base import SAFE_FORMATS, ModelFormat


class TorchScriptFile(ModelFormat):
    """A TorchScript archive, run as a torch module; refused unless ``trust_torchscript``."""

    name = "torchscript"
    kind = "torch"
    runs_on = "torch"
    suffixes = (".pt", ".pth", ".ts", ".torchscript")

    def load(
        self, path: Path, *, n_classes: int | None, batch_size: int | None, device: Any, trust_code: bool,
        trust_torchscript: bool, name: str,
    ) -> Classifier:
        if not trust_torchscript:
            raise InputError(
                f"`{name}`: {str(path)!r} may be a pickle, and fitaudit never unpickles model files; "
                f"{SAFE_FORMATS}; a TorchScript file you trust loads with trust_torchscript=True "
                "(--trust-torchscript)."
            )
        torch = import_optional("torch", "loading a TorchScript model")
        try:
            module = torch.jit.load(str(path), map_location="cpu")
        except Exception as exc:  # torch raises RuntimeError with a long message
            raise InputError(
                f"`{name}`: {str(path)!r} is not a TorchScript archive (a torch.save pickle?); {SAFE_FORMATS}."
            ) from exc
        from fitaudit.models.native import wrap_native

        return wrap_native(module, n_classes=n_classes, batch_size=batch_size, device=device)

    def runs_code(self, path: Path) -> bool:
        """Always: a TorchScript archive holds code that :func:`torch.jit.load` runs."""
        return True


class PickleFile(ModelFormat):
    """A pickle (``.pkl``, ``.joblib``, ...): always refused, since unpickling runs code the file brings."""

    name = "pickle"
    kind = "pickle"
    runs_on = "native"
    suffixes = (".pkl", ".pickle", ".joblib", ".sav", ".dill")

    def load(
        self, path: Path, *, n_classes: int | None, batch_size: int | None, device: Any, trust_code: bool,
        trust_torchscript: bool, name: str,
    ) -> Classifier:
        raise InputError(f"`{name}`: {str(path)!r} is a pickle, and fitaudit never unpickles model files; {SAFE_FORMATS}.")

    def runs_code(self, path: Path) -> bool:
        """Always: unpickling runs whatever the file names (it is never done)."""
        return True
