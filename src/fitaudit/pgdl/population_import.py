"""``fitaudit pgdl import``: a user's runs read, checked and written as a population folder.

:func:`import_population` reads the models, the table of their
hyperparameters and accuracies, and the data (the layout is in
:mod:`fitaudit.pgdl.population`), recomputes the accuracies, and writes the
folder that :class:`~fitaudit.pgdl.population.Population` opens.
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
from fitaudit.pgdl.population import (
    ACCURACY_COLUMNS,
    ACCURACY_TOLERANCE,
    FORMAT_VERSION,
    MODEL_COLUMN,
    POPULATION_FILE,
    Population,
    open_model,
)


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
    manifest = {"version": FORMAT_VERSION, "models": entries, "possible_values": possible,
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
