"""Populations of a user's own trained models, scored like a PGDL task.

The PGDL question -- which of these models will generalize worst? -- asked of
a practitioner's own runs instead of a competition task
(docs/pgdl.md#your-own-models-import-and-rank). :func:`import_population` (``fitaudit pgdl import``) reads:

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

import csv
import dataclasses
import json
import math
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.checkpoint import atomic_path, atomic_write_text
from fitaudit.data.io import load_npz, save_npz
from fitaudit.folder_lock import LOCK_NAME
from fitaudit.models.conversion.onnx_torch import onnx_module
from fitaudit.pgdl.accuracies import check_accuracies

POPULATION_FILE = "population.json"
MODEL_COLUMN = "model"
ACCURACY_COLUMNS = ("train_acc", "test_acc")
#: recomputed and tabled accuracies further apart than this are reported
ACCURACY_TOLERANCE = 0.005
_FORMAT_VERSION = 1


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

    @classmethod
    def from_models(cls, *args: Any, **kwargs: Any) -> Population:
        """:func:`import_population` (the same arguments)."""
        return import_population(*args, **kwargs)


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
    if not isinstance(manifest, dict) or manifest.get("version") != _FORMAT_VERSION or not isinstance(manifest.get("models"), dict):
        raise InputError(f"`--task`: {str(path)!r} is not a fitaudit population file (version {_FORMAT_VERSION}).")
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


# ----------------------------------------------------------------------------- reading a user's runs
@dataclasses.dataclass
class _Row:
    line: int
    name: str
    hparams: dict[str, Any]
    metrics: dict[str, float]


def _value(text: str) -> Any:
    """A CSV cell as int, float or the string it is."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def read_table(table: str | os.PathLike[str]) -> list[_Row]:
    """The table's rows, checked: a model named once per row, numeric accuracies, >= 2 values per hyperparameter."""
    path = Path(table)
    if not path.is_file():
        raise InputError(f"`--table`: file {str(path)!r} does not exist.")
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        fields = list(reader.fieldnames or [])
        records = list(reader)
    if MODEL_COLUMN not in fields:
        raise InputError(f"`--table` {path.name!r} must have a {MODEL_COLUMN!r} column (the model file or folder name); got columns {fields}.")
    names = [f for f in fields if f != MODEL_COLUMN and f not in ACCURACY_COLUMNS]
    if not names:
        raise InputError(f"`--table` {path.name!r} has no hyperparameter column (every column but model, train_acc, test_acc is one).")
    rows: list[_Row] = []
    seen: dict[str, int] = {}
    for line, record in enumerate(records, start=2):
        name = (record.get(MODEL_COLUMN) or "").strip()
        if not name:
            raise InputError(f"`--table` {path.name!r} row {line}: empty {MODEL_COLUMN!r}.")
        if name in seen:
            raise InputError(f"`--table` {path.name!r} names model {name!r} twice (rows {seen[name]} and {line}).")
        seen[name] = line
        metrics = {}
        for column in ACCURACY_COLUMNS:
            cell = (record.get(column) or "").strip()
            if column in fields and cell:
                try:
                    value = float(cell)
                except ValueError:
                    value = math.nan
                if not math.isfinite(value) or not 0 <= value <= 1:
                    raise InputError(f"`--table` {path.name!r} row {line} ({name}): {column} must be a number in [0, 1]; got {cell!r}.")
                metrics[column] = value
        hparams = {}
        for h in names:
            cell = (record.get(h) or "").strip()
            if not cell:
                raise InputError(f"`--table` {path.name!r} row {line} ({name}): hyperparameter {h!r} is empty.")
            hparams[h] = _value(cell)
        rows.append(_Row(line, name, hparams, metrics))
    if not rows:
        raise InputError(f"`--table` {path.name!r} has no rows.")
    for h in names:  # one type per numeric column: 0 and 0.0 are one value (the official scorer keys them as two)
        values = [r.hparams[h] for r in rows]
        if all(isinstance(v, (int, float)) for v in values):
            whole = all(float(v).is_integer() for v in values)
            for r in rows:
                r.hparams[h] = int(r.hparams[h]) if whole else float(r.hparams[h])
    for h in names:
        if len({repr(r.hparams[h]) for r in rows}) < 2:
            raise InputError(f"`--table` {path.name!r}: hyperparameter {h!r} takes a single value ({rows[0].hparams[h]!r}); "
                             "a hyperparameter must vary (drop the column).")
    return rows


def _model_files(models: Path) -> dict[str, tuple[Path, str]]:
    if not models.is_dir():
        raise InputError(f"`--models`: {str(models)!r} is not a folder.")
    found: dict[str, tuple[Path, str]] = {}
    for entry in sorted(models.iterdir()):
        if entry.is_file() and entry.suffix == ".onnx":
            found[entry.name] = (entry, "onnx")
        elif entry.is_dir() and (entry / "config.json").is_file():
            found[entry.name] = (entry, "torch")
    return found


def _classifier(model: Any, path: Path, fmt: str, device: Any = "cpu") -> Any:
    """The one inference path of a population's model: an ONNX file in onnxruntime as it is, a torch
    module (eval mode) on the fastest backend that agrees with eager torch (:mod:`fitaudit.models.inference`),
    on ``device``."""
    from fitaudit.models import as_classifier, load_model

    return load_model(path, device=device) if fmt == "onnx" else as_classifier(model, device=device)


def _accuracy(classifier: Any, x: np.ndarray, y: np.ndarray) -> float:
    """Fraction of ``x`` whose predicted class is ``y``."""
    return float(np.mean(np.asarray(classifier.predict(x)) == y))


def _recorded_accuracy(classifier: Any, split: _Split) -> float | None:
    """Accuracy on the split's inputs under the recorded pipeline; ``None`` when the model does not take them."""
    if split.as_recorded is None:
        return None
    try:
        return _accuracy(classifier, split.as_recorded, split.y)
    except InputError:  # another crop than the model's input: its accuracy there is not known
        return None


def _is_image_source(path: str | os.PathLike[str]) -> bool:
    """An image folder or a CSV list of images (not an ``.npz`` file)."""
    return Path(path).is_dir() or Path(path).suffix.lower() == ".csv"


def _class_order(
    paths: list[Path], classes: str | Sequence[str] | None, data: list[str | os.PathLike[str]]
) -> list[str] | None:
    """The class folders' order: ``classes``, else the names the models record, else None (sorted folders).

    :func:`fitaudit.models.io.runs_class_order`; ``classes`` only goes with
    image folders or CSV lists (an ``.npz`` file's labels are the models'
    output indices already).
    """
    from fitaudit.models.io import runs_class_order

    if not any(_is_image_source(path) for path in data):
        if classes is not None:
            raise InputError("`--classes` goes with image folders or CSV lists (`--train-data`, `--test-data`); "
                             "the labels of an .npz file are the models' output indices already.")
        return None
    return runs_class_order(paths, classes, name="--classes")


@dataclasses.dataclass
class _Split:
    """One data split as the models take it: inputs ``x``, labels ``y``, the folder's class names, the
    pipeline choice (:class:`fitaudit.data.pipeline_rule.PipelineChoice`) and, when it is not the recorded
    one, the inputs under the recorded pipeline (``None`` when the models do not take those)."""

    x: np.ndarray
    y: np.ndarray
    classes: list[str] | None
    choice: Any
    as_recorded: np.ndarray | None = None


def _load_split(
    path: str | os.PathLike[str], runs: tuple[list[tuple[str, Any]], Any], pipeline: Any, *, name: str,
    classes: list[str] | None = None,
) -> _Split:
    """An ``.npz`` file or an image folder through the one pipeline rule (:mod:`fitaudit.data.pipeline_rule`).

    The pipeline is ``pipeline``'s settings over the one the models record
    (``runs``: :func:`fitaudit.models.io.runs_pipelines` of their paths,
    read once for both splits); ``.npz`` image arrays, pixel values in
    [0, 1], get its normalisation only (their size is theirs).
    """
    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.data.pipeline_rule import choose_normalisation, choose_pipeline, given_settings

    recorded, spec = runs
    settings = given_settings(pipeline)
    if not _is_image_source(path):
        x, y = load_npz(path, name=name)
        choice = choose_normalisation(recorded, x, mean=settings.get("mean"), std=settings.get("std"), name=name)
        inputs = cast(Any, choice.pipeline).normalise(x) if choice.normalises else x  # normalises: a pipeline
        return _Split(inputs, y, None, choice, cast(Any, choice.recorded).normalise(x) if choice.differs else None)
    target = Path(path)
    from fitaudit.data.images import check_images, open_images

    choice = choose_pipeline(recorded, input_size=spec.size if spec else None,
                             channels=spec.channels if spec else None, **settings)
    if isinstance(pipeline, EvalPipeline):  # a whole EvalPipeline is used as given (its resampling too)
        choice = dataclasses.replace(choice, pipeline=pipeline)
    if choice.pipeline is None:
        raise InputError(f"`{name}` {str(target)!r} is an image folder: give the evaluation pipeline "
                         "(--resize and --crop, optional --mean and --std) the models were evaluated with; "
                         "the models record none.")
    dataset, _ = check_images(open_images(target, classes=classes, name=name), name=name, skip_option=None)
    x, y = dataset.arrays(choice.pipeline, name=name)
    as_recorded = dataset.arrays(cast(Any, choice.recorded), name=name)[0] if choice.differs else None  # differs: one
    return _Split(x, y, dataset.classes, choice, as_recorded)


def import_population(
    models: str | os.PathLike[str],
    table: str | os.PathLike[str],
    train_data: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    test_data: str | os.PathLike[str] | None = None,
    trust_code: bool = False,
    pipeline: Any = None,
    classes: str | Sequence[str] | None = None,
    device: Any = "cpu",
) -> Population:
    """Import a user's trained models as a population (see the module docstring) and write it to ``out``.

    ``train_data`` and ``test_data`` are ``.npz`` files or image folders
    (``root/<class>/<image>`` or a CSV of path,label, read by
    :mod:`fitaudit.data.images`) scored through one pipeline, by the one
    pipeline rule (:mod:`fitaudit.data.pipeline_rule`;
    docs/bring-your-model.md#one-pipeline-rule): ``pipeline``'s settings
    (an :class:`~fitaudit.data.pipeline.EvalPipeline`, or a dict of some of
    ``resize``, ``crop``, ``mean``, ``std``) over the one the models
    record; ``.npz`` image arrays (pixel values in [0, 1]) get its
    normalisation only. The population stores the model inputs it makes
    (normalised centre crops), and in ``population.json`` the pipeline
    used (``"pipeline"``) and, when that is not the recorded one, the
    models' accuracies under the recorded one (``"recorded_metrics"``;
    ``None`` where the models do not take its images). Their
    class names map to the models' outputs in the order ``classes`` gives
    (names separated by commas, or a list), else the one the models record
    (they must agree, and agree with ``classes``), else sorted
    (:func:`fitaudit.models.io.runs_class_order`). The accuracies are
    recomputed with the models on ``device`` (a torch device; ONNX: ``"cpu"``
    or ``"cuda"``).

    Raises
    ------
    InputError
        Naming the file, row or field: a model missing from the table or the
        folder, a model named twice, a hyperparameter with one value, an
        accuracy that is not a number in [0, 1], models with different input
        shapes or numbers of classes, an ONNX file onnxruntime cannot run.
    """
    rows = read_table(table)
    files = _model_files(Path(models))
    listed = {r.name for r in rows}
    missing = [r for r in rows if r.name not in files]
    if missing:
        raise InputError(f"`--table` row {missing[0].line} names model {missing[0].name!r}, which is not an ONNX file or a "
                         f"torch folder in `--models` {str(models)!r}.")
    unlisted = sorted(set(files) - listed)
    if unlisted:
        raise InputError(f"`--models`: {unlisted[0]!r} is not in `--table` (every model needs a row).")
    _check_distinct_models(rows, files)
    data = [path for path in (train_data, test_data) if path is not None]
    paths = [files[r.name][0] for r in rows]
    order = _class_order(paths, classes, data)
    if not any(_is_image_source(path) for path in data):
        _refuse_sizes(pipeline)
    from fitaudit.models.io import runs_pipelines

    runs = runs_pipelines(paths, name="--models")  # each model's metadata read once (an ONNX file is parsed)
    train = _load_split(train_data, runs, pipeline, name="--train-data", classes=order)
    test = None if test_data is None else \
        _load_split(test_data, runs, pipeline, name="--test-data", classes=order or train.classes)
    folder = Path(out)
    if (folder / POPULATION_FILE).exists() or (folder.exists() and any(e.name != LOCK_NAME for e in folder.iterdir())):
        raise InputError(f"`--out` {str(folder)!r} is not empty; write a population into a new folder.")
    existed = folder.exists()
    (folder / "models").mkdir(parents=True, exist_ok=True)
    try:
        return _write_population(folder, rows, files, train, test, trust_code, device)
    except BaseException:  # nothing half-written is left to block a corrected rerun
        shutil.rmtree(folder / "models", ignore_errors=True)
        if not existed:
            shutil.rmtree(folder, ignore_errors=True)
        raise


def _refuse_sizes(pipeline: Any) -> None:
    """``resize``/``crop`` given with ``.npz`` data only: they would do nothing (the arrays have their size)."""
    from fitaudit.data.pipeline import EvalPipeline

    if isinstance(pipeline, EvalPipeline) or (isinstance(pipeline, dict) and (
            pipeline.get("resize") is not None or pipeline.get("crop") is not None)):
        raise InputError("`--resize`/`--crop` go with image folders; `--train-data`/`--test-data` are .npz arrays, "
                         "which have their size (--mean/--std normalise them).")


def _check_distinct_models(rows: list[_Row], files: dict[str, tuple[Path, str]]) -> None:
    """Refuse two models with the same weights (an ONNX file's bytes; a torch folder's files and their names)."""
    from fitaudit.models.fingerprint import run_digest

    seen: dict[str, str] = {}
    for row in rows:
        key = run_digest(files[row.name][0])  # a file's bytes; a folder's files (JSON read as JSON) and relative names
        if key in seen:
            raise InputError(
                f"`--models`: {row.name!r} has the same weights as {seen[key]!r}; a population's models are "
                "different training runs (one run under two rows would be ranked twice, with two settings)."
            )
        seen[key] = row.name


def _model_copies(source: Path, fmt: str, models: Path) -> tuple[Path, list[tuple[Path, Path]]]:
    """Where a model goes in the population and ``(file, destination)`` of every file it needs.

    A torch folder is copied whole; an ONNX file alone, or, with external
    data files (:func:`fitaudit.models.onnx_files.onnx_external_files`),
    into a folder of its own with them at their relative locations (two
    models' ``weights.bin`` never meet).
    """
    if fmt == "torch":
        target = models / source.name
        return target, [(p, target / p.relative_to(source)) for p in sorted(source.rglob("*")) if p.is_file()]
    from fitaudit.models.onnx_files import onnx_external_files

    external = onnx_external_files(source, name="--models")
    if not external:
        return models / source.name, [(source, models / source.name)]
    home = models / source.stem
    base = source.parent.resolve()
    return home / source.name, [(source, home / source.name), *((p, home / p.relative_to(base)) for p in external)]


def _copy_file(source: Path, destination: Path) -> None:
    """Copy ``source`` to ``destination`` through a temporary file renamed into place (a file of any size)."""
    with atomic_path(destination) as tmp:
        shutil.copyfile(source, tmp)


def _write_population(
    folder: Path,
    rows: list[_Row],
    files: dict[str, tuple[Path, str]],
    train: _Split,
    test: _Split | None,
    trust_code: bool,
    device: Any = "cpu",
) -> Population:
    """Copy the models, recompute their accuracies (and under the recorded pipeline, when it is not the one
    used), write the data and ``population.json``."""
    x_train, y_train = train.x, train.y
    entries: dict[str, Any] = {}
    recorded_metrics: dict[str, dict[str, float | None]] = {}
    disagreements: list[str] = []
    n_classes: dict[int, str] = {}
    for row in rows:
        source, fmt = files[row.name]
        model_id = Path(row.name).stem if fmt == "onnx" else row.name
        if model_id in entries:
            raise InputError(f"`--models`: {row.name!r} and another model are both named {model_id!r}; rename one.")
        target, copies = _model_copies(source, fmt, folder / "models")
        for path, destination in copies:
            destination.parent.mkdir(parents=True, exist_ok=True)
            _copy_file(path, destination)
        entries[model_id] = {"format": fmt, "path": target.relative_to(folder).as_posix(), "hparams": row.hparams,
                             "metrics": {}}
        model = open_model(target, fmt, trust_code=trust_code, name=f"`--models` {row.name!r}")
        try:
            with _torch_no_grad():
                width = int(model(_tensor(x_train[:2])).shape[-1])
        except InputError:
            raise
        except Exception as exc:  # the model does not take these inputs
            raise InputError(f"`--models`: {row.name!r} does not run on `--train-data` inputs of shape "
                             f"{tuple(x_train.shape[1:])} ({type(exc).__name__}: {exc}).") from exc
        n_classes.setdefault(width, row.name)
        if len(n_classes) > 1:
            first = next(iter(n_classes.items()))
            raise InputError(f"`--models`: {row.name!r} has {width} outputs but {first[1]!r} has {first[0]}; "
                             "a population's models must predict the same classes.")
        metrics = dict(row.metrics)
        classifier = _classifier(model, target, fmt, device)
        recomputed = {"train_acc": _accuracy(classifier, x_train, y_train)}
        if test is not None:
            recomputed["test_acc"] = _accuracy(classifier, test.x, test.y)
        if train.choice.differs:
            recorded_metrics[model_id] = {key: _recorded_accuracy(classifier, split)
                                          for key, split in (("train_acc", train), ("test_acc", test)) if split}
        for key, value in recomputed.items():
            if key in metrics and abs(metrics[key] - value) > ACCURACY_TOLERANCE:
                disagreements.append(f"{row.name} (row {row.line}): table {key} {metrics[key]:.4f}, "
                                     f"recomputed {value:.4f} on the {'training' if key == 'train_acc' else 'test'} data")
            metrics[key] = value
        for key in ACCURACY_COLUMNS:
            if key not in metrics:
                raise InputError(f"`--table` row {row.line} ({row.name}): no {key} and no data to compute it "
                                 f"({'--test-data' if key == 'test_acc' else '--train-data'}).")
        entries[model_id]["metrics"] = metrics
    if width < 2 or int(y_train.max()) >= width:
        raise InputError(f"`--train-data` has labels up to {int(y_train.max())}; the models have {width} outputs.")
    possible = {h: sorted({r.hparams[h] for r in rows}, key=lambda v: (isinstance(v, str), v)) for h in rows[0].hparams}
    save_npz(folder / "train.npz", x_train, y_train)
    if test is not None:
        save_npz(folder / "test.npz", test.x, test.y)
    manifest = {"version": _FORMAT_VERSION, "models": entries, "possible_values": possible,
                "disagreements": disagreements,  # no trust in the file: whoever opens it decides (--trust-code)
                "pipeline": train.choice.to_dict() if train.choice.pipeline is not None else None,
                "recorded_metrics": recorded_metrics or None}
    atomic_write_text(folder / POPULATION_FILE, json.dumps(manifest, indent=1) + "\n")
    return Population(folder, manifest, trust_code=trust_code)


def _tensor(x: np.ndarray) -> Any:
    torch = import_optional("torch", "importing a population")
    return torch.from_numpy(np.array(x, dtype=np.float32))  # a copy: writable, contiguous


def _torch_no_grad() -> Any:
    return import_optional("torch", "importing a population").no_grad()
