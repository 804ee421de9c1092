"""What an audit is given: data sets, the model's name and accuracy, the default AEG.

The model's key (of its parts) is :func:`fitaudit.models.fingerprint.evaluation_fingerprint`:
its weights and, for a torch module, the backend and device it runs on.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from fitaudit._errors import InputError
from fitaudit._names import named
from fitaudit.data.dataset import Dataset, load_data


def native_name(model: Any) -> str:
    """How the report names the model: its path, or its repr when short, else its class."""
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    native = getattr(model, "model", model)
    text = repr(native)
    return text if len(text) <= 120 else type(native).__name__


def accuracy_of(model: Any, x: np.ndarray, y: np.ndarray, name: str) -> float:
    """Accuracy of ``model`` on ``(x, y)``; a model that does not take ``x`` is an InputError naming ``name``."""
    try:
        predictions = np.asarray(model.predict(x))
    except InputError as exc:
        raise InputError(f"the model does not accept `{name}`: {exc}") from exc
    if predictions.shape != y.shape:
        raise InputError(f"the model returned {predictions.shape[0]} predictions for the {len(y)} examples of `{name}`.")
    return float(np.mean(predictions == y))


def default_aeg(data: Dataset, margin: int | None, eps: int | None, random_state: Any, *, stride: int = 1,
                mirror: bool = False) -> tuple[Any, str | None]:
    """A translational AEG when ``data`` holds image canvases with a margin; else (None, why).

    ``stride`` and ``mirror`` choose :class:`~fitaudit.overfit.translation.TranslationAEG`'s lattice of shifts
    or :class:`~fitaudit.overfit.mirror.MirrorTranslationAEG`; a margin too narrow for the stride asked for
    is an error naming ``stride``.
    """
    margin = margin if margin is not None else data.margin
    if data.x.ndim != 4:
        return None, ("no AEG applies to these data: the built-in one (translations) needs images on "
                      "canvases with a spare margin; pass `aeg=` in Python for other data.")
    if not margin:
        return None, ("the data are images without a spare margin: the translational AEG needs canvases "
                      "(m, C, H + 2P, W + 2P) and `margin` P (an array `margin` in the .npz or --margin).")
    from fitaudit.overfit.mirror import MirrorTranslationAEG
    from fitaudit.overfit.translation import TranslationAEG

    if margin < 3 * stride:
        fix = f"use `stride` <= {margin // 3}" if margin >= 3 else "the canvases need a margin of at least 3"
        raise InputError(f"`stride` {stride} needs canvases with at least 3 * stride = {3 * stride} spare pixels per "
                         f"side (the AEG's weights look 3 eps steps of stride pixels away); the data's margin is "
                         f"{margin}: {fix}.")
    step = eps if eps is not None else max(1, min(2, margin // (3 * stride)))
    kind = MirrorTranslationAEG if mirror else TranslationAEG
    return kind(eps=step, margin=margin, variant="strongest", random_state=random_state, stride=stride), None


def model_outputs(adapter: Any, x: np.ndarray) -> int:
    """The model's number of outputs: its recorded class count, else the width of its logits on ``x[:1]``
    (a torch model without a last linear layer records none: its adapter learns it from these logits)."""
    try:
        recorded = getattr(adapter, "n_classes", None)
    except InputError:  # not known until the model has run once
        recorded = None
    if recorded:
        return int(recorded)
    return int(np.asarray(adapter.logits(x[:1])).shape[1])


def check_generator_classes(generator: Any, outputs: int, model: Any = None) -> None:
    """A generator's class names must name every output of the model (one per output, in label order).

    When ``model`` is a model file recording its class names, they must be those names, in that order.
    """
    names = getattr(generator, "class_names", None)
    if names is not None and len(names) != outputs:
        raise InputError(
            f"`generator` (--shapes-classes) names {len(names)} classes ({', '.join(map(str, names))}) but the "
            f"model has {outputs} outputs; give one name per output, in the model's label order."
        )
    if names is not None and isinstance(model, (str, os.PathLike)):
        from fitaudit.models.io import read_model_metadata

        read_model_metadata(model, name="model").check_classes(names, "`generator` (--shapes-classes)")


def check_task(task: Any, inputs: np.ndarray, outputs: int, *, trust_code: bool = False) -> Any:
    """The loaded PGDL ``task``, refused when its models take other inputs or classes than the audited model.

    The population ranks measures at predicting the gap of models *of the
    same task* as the audited one: inputs of the same size (``inputs``: what
    the model takes, one example per row; a flat vector and an image of as
    many values count as the same) and as many classes as it has outputs.
    ``trust_code``: the caller's ``--trust-code`` (:func:`fitaudit.pgdl.load_task`).
    """
    from fitaudit.pgdl.harness import as_task

    loaded = as_task(task, trust_code=trust_code)
    x, y = loaded.train_data()
    theirs, ours = tuple(np.asarray(x).shape[1:]), tuple(inputs.shape[1:])
    classes = int(np.max(y)) + 1 if len(y) else 0
    if int(np.prod(theirs)) != int(np.prod(ours)) or classes != outputs:
        raise InputError(
            f"`task` ({task}) is a population of models on inputs of shape {theirs} with {classes} classes, but the "
            f"audited model takes {ours} with {outputs} outputs: give a population of models of the same task."
        )
    return loaded


def sklearn_learner(adapter: Any) -> Any:
    """The scikit-learn estimator behind ``adapter``, or None."""
    return adapter.model if getattr(adapter, "kind", None) == "sklearn" else None


@dataclasses.dataclass
class AuditInputs:
    """Everything an audit was given, validated once by :func:`fitaudit.audit` before any check plans.

    Attributes
    ----------
    adapter : Classifier
        The audited model, loaded (:func:`fitaudit.models.as_classifier`).
    model_key : str
        Its fingerprint (weights and, for torch, how it runs).
    test, train : Dataset or None
        The scored and training arrays (``data``, ``train_data``).
    pictures : ImageInputs or None
        The image folders and their pipeline (``images``, ``train_images``).
    models : list
        Other runs of the same training, as given (files or objects).
    generator, task, learner, aeg : optional
        The examiner's generator, the PGDL task (loaded), the scikit-learn
        learner for PMV (a clone), the overfitting test's AEG on arrays.
    no_aeg : str or None
        Why no AEG applies to the arrays.
    inputs_of : callable
        The model's inputs from the scored arrays (the AEG's crop of canvases).
    settings : dict
        The checks' settings: ``delta``, ``examiner``, ``examine_steps``,
        ``pmv_threshold``, ``random_state``, ``n_jobs``.
    folder : Path
        The working folder of the parts' and the instruments' checkpoints:
        the caller's ``checkpoint_dir``, or a temporary folder.
    progress : bool
    load : dict
        How further model files are loaded (``trust_code``, ``trust_torchscript``).
    labels : LabelSet or None
        The model's label convention (:func:`fitaudit.models.labels.label_set`).
    names : mapping or None
        How the skipped parts' reasons name the arguments
        (:func:`fitaudit._names.named`): keyword -> what the caller calls it
        (the command line's options); ``None``: the keywords themselves.
    kept : bool
        Whether ``folder`` outlives the audit (the caller's ``checkpoint_dir``):
        only then are files that the result names (the examiner's full query
        logs) written there.
    wrap : callable or None
        How a model takes the arrays: the normalisation the model records
        (or ``pipeline`` gives) for ``.npz`` image arrays in [0, 1]
        (:meth:`fitaudit.data.pipeline_rule.PipelineChoice.classifier`); the
        adapter is wrapped already.
    normalisation : str or None
        Where the mean and std of ``.npz`` image arrays came from
        (:attr:`fitaudit.data.pipeline_rule.PipelineChoice.normalisation`;
        ``None``: not image arrays): ``"none"`` is named as the likely cause
        of an accuracy at chance.
    """

    adapter: Any
    model_key: str
    test: Dataset | None
    train: Dataset | None
    pictures: Any
    models: list[Any]
    generator: Any
    task: Any
    learner: Any
    aeg: Any
    no_aeg: str | None
    inputs_of: Any
    settings: dict[str, Any]
    folder: Any
    progress: bool
    load: dict[str, Any]
    labels: Any = None
    kept: bool = True
    wrap: Any = None
    normalisation: str | None = None
    names: Mapping[str, str] | None = None
    _loaded_runs: dict[int, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)
    _scored_logits: np.ndarray | None = dataclasses.field(default=None, init=False, repr=False, compare=False)

    def scored_logits(self) -> np.ndarray:
        """The model's class scores on the scored arrays or table (:attr:`inputs_of` of ``test.x``), computed once
        and shared by the parts that read them (the accuracy and the checks of the scored rows): a table of
        100,000 rows is scored once, not once per check (``benchmarks/bench_table_checks.py``)."""
        if self._scored_logits is None:
            assert self.test is not None
            try:
                self._scored_logits = np.asarray(self.adapter.logits(self.inputs_of(self.test.x)), dtype=np.float64)
            except InputError as exc:
                raise InputError(f"the model does not accept `data`: {exc}") from exc
        return self._scored_logits

    def scored_predictions(self) -> np.ndarray:
        """The model's predicted class indices on the scored rows: the argmax of :meth:`scored_logits`, as the
        adapter's own ``predict`` (:meth:`fitaudit.models.base.Classifier.predict`)."""
        return np.argmax(self.scored_logits(), axis=1).astype(np.int64)

    def scored_probabilities(self) -> np.ndarray:
        """The model's class probabilities on the scored rows: the softmax of :meth:`scored_logits`, as the
        adapter's own ``predict_proba``."""
        from fitaudit.models.base import softmax

        return softmax(self.scored_logits())

    def named(self, keyword: str) -> str:
        """The argument ``keyword`` as the caller calls it (:func:`fitaudit._names.named` with :attr:`names`)."""
        return named(keyword, self.names)

    def other_run(self, index: int) -> Any:
        """The other run ``models[index]``, loaded once (a check that asks again gets the same object), taking
        the data as the audited model does (normalised as it is); another training's classes are an error."""
        if index not in self._loaded_runs:
            loaded = load_other_run(self.adapter, self.models[index], self.load, index=index)
            self._loaded_runs[index] = loaded if self.wrap is None else self.wrap(loaded)
        return self._loaded_runs[index]

    def run_keys(self) -> list[str]:
        """Fingerprints of the audited model and of each other run, as given (nothing is loaded)."""
        from fitaudit.models.fingerprint import evaluation_fingerprint

        return [self.model_key, *(evaluation_fingerprint(m) for m in self.models)]

    def runs(self) -> list[Any]:
        """The audited model and the other runs, loaded (for the N-model test)."""
        return [self.adapter, *(self.other_run(i) for i in range(len(self.models)))]


def load_other_run(adapter: Any, other: Any, load: Mapping[str, Any] | None = None, *, index: int = 0) -> Any:
    """The other run ``other`` (``models[index]``), loaded as the audited model ``adapter`` is (``load``: how
    model files are loaded, :func:`fitaudit.models.as_classifier`'s keywords); another training's classes are
    an error. :meth:`AuditInputs.other_run` keeps what it loads, so the audit and ``fitaudit inspect`` load
    each run once."""
    from fitaudit.models import as_classifier

    loaded = as_classifier(other, name="models", **(load or {}))
    if int(loaded.n_classes) != int(adapter.n_classes):
        raise InputError(f"`models[{index}]` has {loaded.n_classes} classes but the audited model has "
                         f"{adapter.n_classes}; the runs must come from the same training.")
    return loaded


def wanted_any(chosen: tuple[str, ...] | None, instrument: str) -> bool:
    """Whether ``instrument`` runs (every instrument when none was chosen)."""
    return chosen is None or instrument in chosen


def validate_inputs(model: Any, data: Any, *, train_data: Any, learner: Any, models: Sequence[Any] | None,
                      generator: Any, task: Any, aeg: Any, margin: int | None, eps: int | None, stride: int,
                      mirror: bool, images: Any,
                      train_images: Any, pipeline: Any, skip_broken: bool, verify_content: bool | None,
                      label: str | None, features: Sequence[str] | None, classes: Any,
                      chosen: tuple[str, ...] | None,
                      folder: Path, kept: bool, progress: bool, load: dict[str, Any],
                      settings: dict[str, Any]) -> tuple[AuditInputs, dict[str, Any]]:
    """Everything :func:`fitaudit.audit` was given, loaded and checked once (before any check plans), and the
    report's subject (the model, the data, the accuracies)."""
    from fitaudit.auditing.images import (
        array_normalisation,
        image_accuracy,
        load_image_inputs,
        recorded_image_accuracy,
    )
    from fitaudit.models import as_classifier
    from fitaudit.models.fingerprint import evaluation_fingerprint
    from fitaudit.models.inference import inference_summary
    from fitaudit.models.labels import label_set
    from fitaudit.stats.binomial import binomial_interval

    if (data is None) == (images is None):
        raise InputError("`data` is required (or `images`, not both): the data the model is scored on "
                         "(.npz with x and y, (x, y), or an image folder).")
    if train_images is not None and images is None:
        raise InputError("`train_images` goes with `images`; with `data`, give the training data as `train_data`.")
    if images is not None and (label is not None or features is not None):
        raise InputError(f"`{'label' if label is not None else 'features'}` goes with a table as `data`; "
                         "image folders take their labels from their class folders.")
    for argument, given in (("skip_broken", bool(skip_broken)),
                            ("verify_content", verify_content is not None),
                            ("classes", classes is not None)):
        if given and images is None:  # as the command line refuses --resize/--crop/--skip-broken with --data
            raise InputError(f"`{argument}` goes with `images`; it does nothing with `data`.")
    native = as_classifier(model, name="model", **load)
    model_key = evaluation_fingerprint(model)  # the weights and, for torch, the backend and device they run on
    if models:  # one run counted twice would pass the agreement and the N-model test trivially
        from fitaudit.overfit.runs import check_distinct_runs

        check_distinct_runs([model, *models], option="models")
    pictures = None if images is None else load_image_inputs(
        model, images, train_images, pipeline, eps=eps, stride=stride, mirror=mirror, skip_broken=skip_broken, progress=progress,
        verify_content=verify_content, classes=classes)
    labels = label_set(native, model)  # one label convention (models.labels)
    table: dict[str, Any] = {"labels": labels, "label": label, "features": features}
    test = load_data(data, "data", **table) if data is not None else None
    train = load_data(train_data, "train_data", **table) if train_data is not None else None
    choice = pictures.choice if pictures is not None else array_normalisation(model, test.x, pipeline) if test \
        else None
    if train is not None and choice is not None:
        array_normalisation(model, train.x, pipeline)  # the same rule: pixel values in [0, 1]
    wrap = choice.classifier if choice is not None and choice.arrays and choice.normalises else None
    adapter = native if wrap is None else wrap(native)  # image arrays in [0, 1], normalised as the model records
    if wrap is not None:  # the parts' keys see the normalisation
        model_key = f"{model_key} normalised {cast(Any, choice).to_dict()['used']}"
    no_aeg = None
    if aeg is None and test is not None:
        aeg, no_aeg = default_aeg(test, margin, eps, settings["random_state"], stride=stride, mirror=mirror)
    subject = {"model": native_name(model), "model_kind": getattr(adapter, "kind", type(adapter).__name__),
               "n_classes": None,  # after the accuracy: a model that records none learns it from its logits
               "data": test.describe() if test is not None else pictures.describe("test") if pictures else None,
               "train_data": train.describe() if train else pictures.describe("train") if pictures else None}
    inputs_of = aeg.model_inputs if aeg is not None else (lambda x: x)
    if test is not None:
        subject["accuracy"] = accuracy_of(adapter, inputs_of(test.x), test.y, "data")
        probe = inputs_of(test.x[:1])  # a generator's classes and a population's task must be the audited model's
        outputs = model_outputs(adapter, probe)
        if generator is not None and wanted_any(chosen, "examine"):
            check_generator_classes(generator, outputs, model)
        if task is not None and wanted_any(chosen, "pgdl"):
            task = check_task(task, probe, outputs, trust_code=load["trust_code"])
    if task is not None and wanted_any(chosen, "pgdl"):  # loaded once, here (checked above on arrays)
        from fitaudit.pgdl.harness import as_task

        task = as_task(task, trust_code=load["trust_code"])
    if train is not None:
        subject["train_accuracy"] = accuracy_of(adapter, inputs_of(train.x), train.y, "train_data")
    recorded_accuracy = None
    if pictures is not None:  # decoded batch by batch through the pipeline
        subject["accuracy"] = image_accuracy(adapter, pictures.test, pictures.pipeline, name="images")
        recorded_accuracy = recorded_image_accuracy(adapter, pictures.test, pictures.choice)
        if pictures.train is not None:
            subject["train_accuracy"] = image_accuracy(adapter, pictures.train, pictures.pipeline,
                                                       name="train_images")
        subject["broken_images"] = pictures.broken
    subject["n_classes"] = adapter.n_classes
    scored_n = len(test.y) if test is not None else len(pictures.test) if pictures is not None else 0
    if scored_n:  # the exact interval of the header's accuracy (stats.binomial)
        interval = binomial_interval(round(cast(float, subject["accuracy"]) * scored_n), scored_n)
        subject["accuracy_interval"] = [interval.low, interval.high]
    if choice is not None and choice.pipeline is not None:  # which pipeline, and the accuracy under the model's
        if choice.differs and test is not None:
            recorded_accuracy = accuracy_of(choice.classifier(native, choice.recorded), inputs_of(test.x), test.y,
                                            "data")
        subject["pipeline"] = choice.to_dict(subject.get("accuracy"), recorded_accuracy)
    subject["inference"] = inference_summary(native)  # how a torch model ran (fitaudit.models.inference)
    learner = learner if learner is not None else sklearn_learner(native)
    if learner is not None and wanted_any(chosen, "pmv"):
        from sklearn.base import clone

        learner = clone(learner)  # PMV retrains copies; a fitted model's state is not part of the learner
    return AuditInputs(adapter=adapter, model_key=model_key, test=test, train=train, pictures=pictures,
                       models=list(models or []), generator=generator, task=task, learner=learner, aeg=aeg,
                       no_aeg=no_aeg, inputs_of=inputs_of, settings=settings, folder=folder, progress=progress,
                       load=load, labels=labels, kept=kept, wrap=wrap,
                       normalisation=choice.normalisation if choice is not None and choice.arrays
                       and choice.pipeline is not None else None), subject
