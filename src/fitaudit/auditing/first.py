"""The first questions of every audit (docs/first-questions.md): the first parts of the report.

===================  ==============================================  =============================
part                 question                                        needs
===================  ==============================================  =============================
``accuracy``         how precise is the measured accuracy? (exact    the scored data
                     interval, overall and per class)
``leakage``          did the scored data leak into training?         the training data too
                     (exact and near duplicates; accuracy without
                     them)
``leakage-penult``   the same in the penultimate features of a       a torch model, array data
                     torch model
``agreement``        does another run of the training agree?         another run (``models=``)
                     (1 - disagreement beside the measured accuracy)
===================  ==============================================  =============================

After the accuracy, an audit asks the checks of the scored rows (baseline,
calibration, weak slices, label problems:
:mod:`fitaudit.auditing.table_checks`, :mod:`fitaudit.auditing.slice_label_checks`),
and so does :func:`fitaudit.auditing.checks.first_questions`.
Each question is a pair: ``*_key`` (what the part depends on: the model,
the data, the settings) and ``run_*`` (the part computed), used by the
audit's checks (:mod:`fitaudit.auditing.checks`) and, outside an audit,
by :func:`fitaudit.auditing.checks.first_questions` (``fitaudit inspect``); the words are
:mod:`fitaudit.report.verdicts`'s.
Image folders are streamed through the evaluation pipeline
(:func:`fitaudit.leakage.folders.folder_features`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._names import named
from fitaudit.auditing.headlines import accuracy_numbers, leakage_numbers
from fitaudit.auditing.inputs import Dataset
from fitaudit.auditing.parts import part_from_result
from fitaudit.auditing.result import AuditPart
from fitaudit.auditing.runner import PartSpec, skipped

#: the instrument name of the first questions' parts (grouped first in the report)
INSTRUMENT = "first"

#: near pairs drawn in the report
PAIR_PICTURES = 12

TITLES = {
    "accuracy": "How precise is the measured accuracy?",
    "leakage": "Did the scored data leak into training?",
    "leakage-penult": "Did the scored data leak into training? (the model's penultimate features)",
    "agreement": "Does another run of the same training agree?",
}


def class_names(adapter: Any, n_classes: int, labels: Any = None) -> list[str] | None:
    """The model's class names in output order: its label convention's (``labels``, a
    :class:`~fitaudit.models.labels.LabelSet`: the names its file records), else the adapter's ``classes``;
    None when neither names ``n_classes`` classes."""
    named = getattr(labels, "names", None)
    classes = named if named is not None else getattr(adapter, "classes", None)
    if classes is not None and len(classes) == n_classes:
        return [str(c) for c in classes]
    return None


def predicted_classes(model: Any, x: np.ndarray, name: str) -> np.ndarray:
    """``model``'s predicted class indices (int64) on the rows ``x``; inputs it refuses are an
    :class:`~fitaudit._errors.InputError` naming the argument ``name`` they came from."""
    try:
        return np.asarray(model.predict(x), dtype=np.int64)
    except InputError as exc:
        raise InputError(f"the model does not accept `{name}`: {exc}") from exc


def folder_predictions(model: Any, dataset: Any, pipeline: Any) -> np.ndarray:
    """``model``'s predicted class indices (int64) on an image folder, decoded batch by batch through ``pipeline``."""
    return np.concatenate([np.asarray(model.predict(b.images), dtype=np.int64)
                           for b in dataset.batches(pipeline, kind="input", batch_size=256)])


def accuracy_key(adapter: Any, model_key: str, *, data: Dataset | None = None, pictures: Any = None) -> tuple[Any, ...]:
    """What the accuracy part depends on: the model, the scored data, the number of classes."""
    return (model_key, *data_key(data, pictures, "test"), int(adapter.n_classes))


def run_accuracy(adapter: Any, *, data: Dataset | None = None,
                 inputs_of: Callable[[np.ndarray], np.ndarray] = lambda x: x,
                 pictures: Any = None, labels: Any = None, predictions: np.ndarray | None = None) -> AuditPart:
    """The measured accuracy with its exact (Clopper-Pearson) interval, overall and per class (``predictions``:
    the model's on ``data`` when they were computed already, :meth:`AuditInputs.scored_predictions`).

    On arrays and tables, scored labels of one class stop here
    (:func:`fitaudit.models.labels.refuse_one_class`; ``labels``: the model's
    convention, whose names name the class): no model can be told from
    chance on them. An accuracy at or below chance does not stop the audit:
    this part reports it as measured, and the baseline part
    (:class:`fitaudit.auditing.table_checks.BaselineCheck`) fails it against
    the majority class with the likely causes (labels not in the model's
    order, the pipeline: :func:`fitaudit.models.labels.chance_hint`).
    """
    from fitaudit.models.labels import refuse_one_class
    from fitaudit.stats import accuracy

    n_classes = int(adapter.n_classes)
    if pictures is not None:
        y, names = pictures.test.labels, pictures.test.classes
        predictions = folder_predictions(adapter, pictures.test, pictures.pipeline)
    else:
        assert data is not None
        y, names = data.y, class_names(adapter, n_classes, labels)
        if predictions is None:
            predictions = predicted_classes(adapter, inputs_of(data.x), "data")
        refuse_one_class(y, predictions, n_classes, name="data", labels=labels)
    result = accuracy(y, predictions, n_classes=n_classes, class_names=names)
    return part_from_result("accuracy", INSTRUMENT, TITLES["accuracy"], result, numbers=accuracy_numbers(result))


def data_key(data: Dataset | None, pictures: Any, which: str) -> tuple[Any, ...]:
    """What a part's answer depends on in the data: the arrays or table ``data`` (:meth:`Dataset.key`), or the
    image folder ``which`` (``"test"`` or ``"train"``) of ``pictures`` with its pipeline."""
    if pictures is not None:
        folder = pictures.test if which == "test" else pictures.train
        return (folder.fingerprint(), pictures.pipeline.to_dict())
    assert data is not None
    return data.key()


def pair_pictures(scored: Any, train: Any, result: Any, limit: int = PAIR_PICTURES) -> list[dict[str, Any]]:
    """The nearest near pairs as pictures: scored image beside its training twin, uint8 (C, H, 2W + 2)."""
    pictures = []
    for position in result.pair_order()[:limit]:
        i, j = int(result.near_scored[position]), int(result.near_train[position])
        distance = float(result.near_distance[position])
        left, right = np.asarray(scored[i], dtype=np.float64), np.asarray(train[j], dtype=np.float64)
        if left.ndim != 3 or left.shape != right.shape:
            continue
        gap = np.ones((left.shape[0], left.shape[1], 2))
        side = np.concatenate([left, gap, right], axis=2)
        low, high = float(side.min()), float(side.max())
        if low < 0 or high > 1:  # normalised inputs: shown rescaled to [0, 1]
            side = (side - low) / (high - low if high > low else 1.0)
        picture = {"scored": i, "train": j, "distance": distance,
                   "pixels": np.clip(np.round(side * 255), 0, 255).astype(np.uint8)}
        files = result.pair_files(int(position))
        if files is not None:
            picture["scored_file"], picture["train_file"] = files
        pictures.append(picture)
    return pictures


def _folder_pixels(dataset: Any, pipeline: Any, rows: Sequence[int]) -> dict[int, np.ndarray]:
    """The crops of the given rows of an image folder (decoded again, for the pair pictures)."""
    rows = sorted(set(int(r) for r in rows))
    if not rows:
        return {}
    p, c = pipeline.margin, pipeline.crop
    crops = np.concatenate([b.images[:, :, p : p + c, p : p + c]
                            for b in dataset.subset(rows).batches(pipeline, kind="canvas", batch_size=64)])
    return dict(zip(rows, crops))


def no_training_data(names: Mapping[str, str] | None = None) -> str:
    """Why the leakage search cannot run without training data, naming the arguments as the caller does
    (``names``: :func:`fitaudit._names.named`)."""
    return (f"the leakage search needs the training data ({named('train_data', names)}, or "
            f"{named('train_images', names)} with {named('images', names)}).")


def leakage_key(model_key: str, *, data: Dataset | None, train: Dataset | None, pictures: Any,
                random_state: Any) -> tuple[Any, ...]:
    """What the leakage parts depend on: the model, the scored and the training data, the seed."""
    return (model_key, *data_key(data, pictures, "test"), *data_key(train, pictures, "train"), random_state)


def has_training_data(train: Dataset | None, pictures: Any) -> bool:
    """Whether the leakage search has training data to search (arrays, or the training image folder)."""
    return (pictures is not None and pictures.train is not None) or (pictures is None and train is not None)


def run_leakage(adapter: Any, model_key: str, *, data: Dataset | None = None, train: Dataset | None = None,
                inputs_of: Callable[[np.ndarray], np.ndarray] = lambda x: x, pictures: Any = None,
                random_state: Any = 0, progress: bool = False,
                checkpoint_dir: Path | None = None, labels: Any = None) -> AuditPart:
    """Exact and near duplicates of training examples among the scored ones (``labels``: the model's label
    convention, whose class names name the classes).

    With ``checkpoint_dir``, the image search keeps its finished blocks there
    (:class:`fitaudit.leakage.resume.Checkpoints`: features, calibration,
    search), so an audit interrupted inside a long search resumes it.
    """
    from fitaudit.leakage import image_leakage, tabular_leakage
    from fitaudit.leakage.folders import folder_features
    from fitaudit.leakage.resume import Checkpoints

    n_classes = int(adapter.n_classes)
    if pictures is not None:
        checkpoints = Checkpoints(checkpoint_dir)
        scored, y, predictions = folder_features(pictures.test, pictures.pipeline, model=adapter,
                                                 model_key=model_key, progress=progress, name="images",
                                                 checkpoint_dir=checkpoints)
        train_features, _, _ = folder_features(pictures.train, pictures.pipeline, progress=progress,
                                               name="train_images", checkpoint_dir=checkpoints)
        result = image_leakage(scored, train_features, y_true=y, y_pred=predictions, n_classes=n_classes,
                               class_names=pictures.test.classes, random_state=random_state,
                               scored_name="images", train_name="train_images", progress=progress,
                               checkpoint_dir=checkpoints)
        pairs = result.pairs()[:PAIR_PICTURES]
        left = _folder_pixels(pictures.test, pictures.pipeline, [i for i, _, _ in pairs])
        right = _folder_pixels(pictures.train, pictures.pipeline, [j for _, j, _ in pairs])
        images = pair_pictures(_Rows(left), _Rows(right), result)
    else:
        assert data is not None and train is not None
        x, x_train = inputs_of(data.x), inputs_of(train.x)
        if x.shape[1:] != x_train.shape[1:]:
            raise InputError(f"`train_data` has examples of shape {x_train.shape[1:]} but `data` of shape "
                             f"{x.shape[1:]}; training and scored data must have the same features.")
        options = {"y_true": data.y, "y_pred": predicted_classes(adapter, x, "data"), "n_classes": n_classes,
                   "class_names": class_names(adapter, n_classes, labels), "random_state": random_state,
                   "scored_name": "data", "train_name": "train_data"}
        if x.ndim == 4:
            result = image_leakage(x, x_train, progress=progress, checkpoint_dir=Checkpoints(checkpoint_dir), **options)
            images = pair_pictures(x, x_train, result)
        else:
            result = tabular_leakage(x, x_train, **options)
            images = []
    return part_from_result("leakage", INSTRUMENT, TITLES["leakage"], result, numbers=leakage_numbers(result),
                            images=images)


def penultimate_arises(adapter: Any, pictures: Any) -> bool:
    """Whether the search in a model's penultimate features is a question here (a torch model on arrays)."""
    return pictures is None and getattr(adapter, "kind", None) == "torch"


def no_penultimate_features(adapter: Any, data: Dataset | None) -> str | None:
    """Why the penultimate features cannot be read (e.g. convolutions ending in global pooling), else None."""
    from fitaudit.leakage.features import penultimate_layer

    try:
        penultimate_layer(adapter)
    except InputError as exc:
        searched = "images" if data is not None and data.x.ndim == 4 else "rows"
        return f"{exc} The `leakage` part searched the scored {searched} themselves."
    return None


def run_penultimate_leakage(adapter: Any, *, data: Dataset, train: Dataset,
                            inputs_of: Callable[[np.ndarray], np.ndarray] = lambda x: x,
                            random_state: Any = 0) -> AuditPart:
    """The leakage search in a torch model's penultimate features (twins the model cannot tell apart)."""
    from fitaudit.leakage import feature_leakage, penultimate_features

    x, x_train = inputs_of(data.x), inputs_of(train.x)
    result = feature_leakage(penultimate_features(adapter, x), penultimate_features(adapter, x_train),
                             y_true=data.y, y_pred=predicted_classes(adapter, x, "data"), n_classes=int(adapter.n_classes),
                             random_state=random_state, scored_name="data", train_name="train_data")
    images = pair_pictures(x, x_train, result) if x.ndim == 4 else []
    return part_from_result("leakage-penult", INSTRUMENT, TITLES["leakage-penult"], result,
                            numbers=leakage_numbers(result), images=images)


def leakage_parts(adapter: Any, model_key: str, *, data: Dataset | None = None, train: Dataset | None = None,
                  inputs_of: Callable[[np.ndarray], np.ndarray] = lambda x: x, pictures: Any = None,
                  random_state: Any = 0, progress: bool = False,
                  checkpoint_dir: Path | None = None, labels: Any = None,
                  names: Mapping[str, str] | None = None) -> list[PartSpec | AuditPart]:
    """The leakage parts outside an audit (``fitaudit inspect``): :func:`run_leakage` and, for a torch model
    on arrays, :func:`run_penultimate_leakage`, keyed by :func:`leakage_key` (``names``: what the caller calls
    the arguments a skipped part's reason names, :func:`fitaudit._names.named`)."""
    if not has_training_data(train, pictures):
        return [skipped("leakage", INSTRUMENT, TITLES["leakage"], no_training_data(names))]
    key = leakage_key(model_key, data=data, train=train, pictures=pictures, random_state=random_state)
    specs: list[PartSpec | AuditPart] = [PartSpec("leakage", INSTRUMENT, TITLES["leakage"], key, functools.partial(
        run_leakage, adapter, model_key, data=data, train=train, inputs_of=inputs_of, pictures=pictures,
        random_state=random_state, progress=progress, checkpoint_dir=checkpoint_dir, labels=labels))]
    if penultimate_arises(adapter, pictures):
        reason = no_penultimate_features(adapter, data)
        if reason is not None:
            return [*specs, skipped("leakage-penult", INSTRUMENT, TITLES["leakage-penult"], reason,
                                    code="no_penultimate_features")]
        assert data is not None and train is not None
        specs.append(PartSpec("leakage-penult", INSTRUMENT, TITLES["leakage-penult"], key, functools.partial(
            run_penultimate_leakage, adapter, data=data, train=train, inputs_of=inputs_of,
            random_state=random_state)))
    return specs


class _Rows:
    """Rows of a dict ``{index: array}`` looked up by index (the pair pictures of image folders)."""

    def __init__(self, rows: dict[int, np.ndarray]) -> None:
        self.rows = rows

    def __getitem__(self, index: int) -> np.ndarray:
        return self.rows[int(index)]


def no_other_run(names: Mapping[str, str] | None = None) -> str:
    """Why the agreement estimate cannot be made with one run, naming ``models`` as the caller does."""
    return f"the agreement estimate needs another run of the same training ({named('models', names)})."


def agreement_key(model_key: str, other_key: str, *, data: Dataset | None, pictures: Any) -> tuple[Any, ...]:
    """What the agreement part depends on: both runs and the scored data."""
    return (model_key, other_key, *data_key(data, pictures, "test"))


def run_agreement(adapter: Any, other: Any, *, runs_given: int, data: Dataset | None = None,
                  inputs_of: Callable[[np.ndarray], np.ndarray] = lambda x: x, pictures: Any = None) -> AuditPart:
    """The agreement estimate 1 - disagreement with the other run ``other`` (loaded), beside the measured accuracy."""
    from fitaudit.stats import accuracy, agreement

    n_classes = int(adapter.n_classes)
    if pictures is not None:
        y = pictures.test.labels
        ours = folder_predictions(adapter, pictures.test, pictures.pipeline)
        theirs = folder_predictions(other, pictures.test, pictures.pipeline)
    else:
        assert data is not None
        y = data.y
        ours = predicted_classes(adapter, inputs_of(data.x), "data")
        theirs = predicted_classes(other, inputs_of(data.x), "models[0]")
    measured = accuracy(y, ours, n_classes=n_classes)
    result = agreement(ours, theirs, n_classes=n_classes, other_n_classes=n_classes, measured=measured)
    numbers = {"agreement estimate": result.estimate, "measured accuracy": measured.accuracy, "gap": result.gap,
               "other runs given": runs_given}
    return part_from_result("agreement", INSTRUMENT, TITLES["agreement"], result, numbers=numbers,
                            settings={"other_run": 0})


def first_question_specs(adapter: Any, model_key: str, *, test: Dataset | None, train: Dataset | None,
                         pictures: Any, models: Sequence[Any] | None,
                         inputs_of: Callable[[np.ndarray], np.ndarray] = lambda x: x,
                         random_state: Any = 0, progress: bool = False,
                         checkpoint_dir: Path | None = None,
                         other_run: Callable[[int], Any], labels: Any = None,
                         names: Mapping[str, str] | None = None) -> list[PartSpec | AuditPart]:
    """The first parts of every audit after the accuracy and the checks of the scored rows
    (:func:`fitaudit.auditing.checks.first_questions` asks those first): leakage (its image search's blocks kept
    in ``checkpoint_dir``), agreement between runs (``other_run``: ``models[i]`` loaded, as
    :meth:`fitaudit.auditing.inputs.AuditInputs.other_run` loads and keeps it; ``labels``: the
    model's label convention, whose names name the classes; ``names``: what the caller calls the arguments a
    skipped part's reason names)."""
    from fitaudit.models.fingerprint import evaluation_fingerprint

    specs: list[PartSpec | AuditPart] = []
    specs += leakage_parts(adapter, model_key, data=test, train=train, inputs_of=inputs_of, pictures=pictures,
                           random_state=random_state, progress=progress, checkpoint_dir=checkpoint_dir,
                           labels=labels, names=names)
    if not models:
        specs.append(skipped("agreement", INSTRUMENT, TITLES["agreement"], no_other_run(names)))
    else:
        other = other_run(0)
        key = agreement_key(model_key, evaluation_fingerprint(models[0]), data=test, pictures=pictures)
        specs.append(PartSpec("agreement", INSTRUMENT, TITLES["agreement"], key, functools.partial(
            run_agreement, adapter, other, runs_given=len(models), data=test, inputs_of=inputs_of,
            pictures=pictures)))
    return specs
