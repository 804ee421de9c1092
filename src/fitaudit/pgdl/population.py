"""Populations of a user's own trained models, scored like a PGDL task.

The PGDL question -- which of these models will generalize worst? -- asked of
a practitioner's own runs instead of a competition task
(docs/pgdl.md#your-own-models-import-and-rank).
:func:`fitaudit.pgdl.population_import.import_population` (``fitaudit pgdl import``) reads:

* ``models``: a folder of models, each an ONNX file (``<name>.onnx``, run by
  onnxruntime) or a torch folder (``<name>/`` with ``config.json`` and
  ``weights.safetensors``, :func:`fitaudit.models.load_torch_module`; a
  user's own architecture only with ``trust_code`` given by the caller
  when the population is opened, never read from a file; an optional
  ``weights_init.safetensors`` is the network at initialisation);
* ``table``: a CSV with one row per model: ``model`` (the file or folder
  name), ``train_acc`` and ``test_acc`` (optional when the data are
  given), every other column a hyperparameter;
* ``train_data`` (required: the measures read it) and ``test_data``
  (``.npz`` with ``x`` channels first and ``y``, image arrays as pixel
  values in [0, 1], or image folders; both through the one pipeline rule,
  :mod:`fitaudit.data.pipeline_rule`): accuracies are recomputed on them
  and any disagreement with the table (more than 0.5 percentage points) is
  reported; the recomputed values are used.

It writes a population folder (``population.json``, ``models/``,
``train.npz``, ``test.npz``) that :func:`fitaudit.pgdl.load_task` and
therefore ``fitaudit pgdl score`` / ``leaderboard`` / ``rank`` open like a
task. Which measures apply to which format: ``Measure.formats``; a torch-only
measure asked of an ONNX model fails with a message naming the measure and
the formats it takes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.data.io import load_npz
from fitaudit.models.conversion.onnx_torch import onnx_module
from fitaudit.pgdl.accuracies import check_accuracies

POPULATION_FILE = "population.json"
MODEL_COLUMN = "model"
ACCURACY_COLUMNS = ("train_acc", "test_acc")
#: recomputed and tabled accuracies further apart than this are reported
ACCURACY_TOLERANCE = 0.005
#: the version of population.json this release writes and reads
FORMAT_VERSION = 1


# ----------------------------------------------------------------------------- the population
class Population:
    """A user's models with their hyperparameters and accuracies, opened like a PGDL task.

    Attributes
    ----------
    directory : Path
    configs : dict
        ``model_configs.json``'s structure: id -> ``{"hparams": {name:
        {"current_value", "possible_values"}}, "metrics": {...}}``.
    model_ids : list of str
    formats : dict
        Model id -> ``"onnx"`` or ``"torch"``.
    disagreements : list of str
        Where the table's accuracies and the recomputed ones differ.
    trust_code : bool
        Whether a torch folder naming its own architecture file may run it:
        the caller's decision (``--trust-code``), never the manifest's.
    """

    def __init__(self, directory: Path, manifest: dict[str, Any], *, trust_code: bool = False) -> None:
        self.directory = directory
        self.manifest = manifest
        self.trust_code = bool(trust_code)
        entries = manifest["models"]
        self.model_ids = list(entries)
        self.formats = {i: entries[i]["format"] for i in self.model_ids}
        self.disagreements: list[str] = list(manifest.get("disagreements", []))
        possible = manifest["possible_values"]
        self.configs = {
            i: {"hparams": {k: {"current_value": v, "possible_values": possible[k]} for k, v in entries[i]["hparams"].items()},
                "metrics": dict(entries[i]["metrics"])}
            for i in self.model_ids
        }
        self._data: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def __repr__(self) -> str:
        return f"Population({str(self.directory)!r}, {len(self.model_ids)} models)"

    def __len__(self) -> int:
        return len(self.model_ids)

    def model_dir(self, model_id: str) -> Path:
        """The model's file (ONNX) or folder (torch)."""
        return self.directory / self.manifest["models"][model_id]["path"]

    def has_initial(self, model_id: str) -> bool:
        """Whether the model has weights at initialisation (torch folders with ``weights_init.safetensors``)."""
        return self.formats[model_id] == "torch" and (self.model_dir(model_id) / "weights_init.safetensors").is_file()

    def model(self, model_id: str, initial: bool = False) -> Any:
        """The network as a torch module in eval mode (an ONNX model wrapped,
        :func:`fitaudit.models.conversion.onnx_torch.onnx_module`)."""
        return open_model(self.model_dir(model_id), self.formats[model_id], trust_code=self.trust_code,
                          initial=initial, name=f"model {model_id!r}")

    def _load(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        if split not in self._data:
            self._data[split] = load_npz(self.directory / f"{split}.npz", name=f"{split} data of {str(self.directory)!r}")
        x, y = self._data[split]
        return x.copy(), y.copy()

    def train_data(self) -> tuple[np.ndarray, np.ndarray]:
        """Training inputs (channels first) and labels."""
        return self._load("train")

    def test_data(self) -> tuple[np.ndarray, np.ndarray]:
        """Test inputs and labels (when the import was given them)."""
        return self._load("test")

    def hparams(self, model_id: str) -> dict[str, Any]:
        """Hyperparameter name -> value of the model."""
        return dict(self.manifest["models"][model_id]["hparams"])

    def metrics(self, model_id: str) -> dict[str, float]:
        """``train_acc`` and ``test_acc``."""
        return dict(self.manifest["models"][model_id]["metrics"])

    def gap(self, model_id: str) -> float:
        """train_acc - test_acc."""
        m = self.metrics(model_id)
        return float(m["train_acc"]) - float(m["test_acc"])


def open_model(path: Path, fmt: str, *, trust_code: bool = False, initial: bool = False, name: str = "model") -> Any:
    """An ONNX file (wrapped, :func:`fitaudit.models.conversion.onnx_torch.onnx_module`) or a torch folder as a
    torch module in eval mode."""
    if fmt == "onnx":
        if initial:
            raise InputError(f"{name} is an ONNX file: it has no weights at initialisation.")
        return onnx_module(path)
    from fitaudit.models import load_torch_module

    module = load_torch_module(path, name=name, trust_code=trust_code)
    if initial:
        safetensors_torch = import_optional("safetensors.torch", "loading a torch model")
        safetensors_torch.load_model(module, str(path / "weights_init.safetensors"))
    return module.eval()


def is_population(directory: str | os.PathLike[str]) -> bool:
    """Whether ``directory`` holds a population written by :func:`import_population`."""
    return (Path(directory) / POPULATION_FILE).is_file()


def load_population(directory: str | os.PathLike[str], *, trust_code: bool = False) -> Population:
    """Open a population folder written by :func:`import_population`.

    ``trust_code`` (``--trust-code``) lets a torch folder that names its own
    architecture file run it; a ``"trust_code"`` the manifest may hold is
    ignored (a file never grants itself trust). Every model path must stay
    inside the folder.
    """
    folder = Path(directory)
    path = folder / POPULATION_FILE
    try:
        manifest = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(f"`--task`: {str(path)!r} is not a readable population file ({type(exc).__name__}).") from exc
    if not isinstance(manifest, dict) or manifest.get("version") != FORMAT_VERSION or not isinstance(manifest.get("models"), dict):
        raise InputError(f"`--task`: {str(path)!r} is not a fitaudit population file (version {FORMAT_VERSION}).")
    _check_manifest(folder, manifest)
    if not trust_code:  # refused before any work, as `--model` is refused (fitaudit.models.architectures)
        from fitaudit.models.io import runs_code

        for model_id, entry in manifest["models"].items():
            if entry["format"] == "torch" and runs_code(folder / entry["path"]):
                raise InputError(
                    f"`--task`: model {model_id!r} of {str(folder)!r} names its own architecture file in config.json; "
                    "building it runs that file's code, which fitaudit never does unasked. If you trust the file, "
                    "pass --trust-code (trust_code=True)."
                )
    return Population(folder, manifest, trust_code=trust_code)


def _check_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    """Refuse a manifest whose models are malformed or whose paths leave ``folder`` (``..``, absolute, symlinks out)."""
    where = f"`--task`: {str(folder / POPULATION_FILE)!r}"
    possible = manifest.get("possible_values")
    if not isinstance(possible, dict) or not all(isinstance(v, list) for v in possible.values()):
        raise InputError(f"{where}: 'possible_values' must map each hyperparameter to a list of values.")
    root = folder.resolve()
    for model_id, entry in manifest["models"].items():
        if not isinstance(entry, dict) or entry.get("format") not in ("onnx", "torch") or not isinstance(entry.get("path"), str) \
                or not isinstance(entry.get("hparams"), dict) or not isinstance(entry.get("metrics"), dict):
            raise InputError(f"{where}: model {model_id!r} must have a 'format' (onnx or torch), a 'path', "
                             "'hparams' and 'metrics'.")
        relative = Path(entry["path"])
        target = (folder / relative).resolve()
        if relative.is_absolute() or not target.is_relative_to(root):
            raise InputError(f"{where}: model {model_id!r} has path {entry['path']!r}, which leaves the population "
                             "folder; a population's models live inside it.")
        check_accuracies(entry["metrics"], f"{where}: model {model_id!r}")
        if any(h not in possible for h in entry["hparams"]):
            raise InputError(f"{where}: model {model_id!r} has a hyperparameter missing from 'possible_values'.")
