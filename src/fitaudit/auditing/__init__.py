"""One audit: run every instrument that applies to what the user has, write one report.

:func:`audit` (also ``fitaudit.audit``) takes a model, the data it is scored
on and whatever else is at hand, and plans one *part* per question that can
be answered:

==================  =====================================================  ==========================
part                what it needs                                          instrument
==================  =====================================================  ==========================
``accuracy``        the scored data (exact interval, overall, per class)  first questions
``leakage``         the training data too (exact and near duplicates)     first questions
``agreement``       another run of the same training (``models=``)        first questions
``overfit-test``    the scored data and an AEG (images on canvases with a  overfitting test
                    spare ``margin``, or ``aeg=`` in Python)
``overfit-train``   the same on the training data (shown side by side)     overfitting test
``overfit-nmodel``  several trained runs (``models=``)                     N-model test
``examine``         a generator of inputs from factors (``generator=``)   adversarial examiner
``pgdl``            a zoo or PGDL task (``task=``)                         generalization measures
``pmv``             a scikit-learn learner and the training data           perturbed model validation
==================  =====================================================  ==========================

A part that cannot run is kept in the result as *skipped*, with the reason.
Each part is a resumable unit of a :class:`~fitaudit.checkpoint.CheckpointStore`
in ``out/parts``, keyed by the fingerprint of the model's weights, the data
and the settings: an audit killed mid-way and started again with the same
``out`` reuses every finished part and recomputes those whose inputs
changed. The instruments keep their own finer checkpoints there too
(PMV fits, N-model runs). ``audit.json`` and ``report.html`` are written
atomically at the end (:func:`fitaudit.report.save_audit`), so a
half-finished audit leaves neither.

The package is named ``auditing`` because ``fitaudit.audit`` is the
function :func:`audit`: a subpackage ``fitaudit.audit`` would replace the
function of that name on the ``fitaudit`` package as soon as it is imported.

Modules: :mod:`~fitaudit.auditing.result` (the pure-data results),
:mod:`~fitaudit.auditing.runner` (parts as resumable units, the compute
backend), :mod:`~fitaudit.auditing.parts` (one builder per question, and how
to add one), :mod:`~fitaudit.auditing.inputs` (data and model loading).
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from fitaudit._errors import InputError
from fitaudit._validation import check_float, check_int
from fitaudit.auditing.first import first_question_specs
from fitaudit.auditing.images import image_accuracy, load_image_inputs
from fitaudit.auditing.inputs import (
    Dataset,
    accuracy_of,
    check_generator_classes,
    check_task,
    default_aeg,
    load_data,
    model_outputs,
    native_name,
    sklearn_learner,
)
from fitaudit.auditing.parts import (
    EXAMINE_TOLERANCE,
    PGDL_MEASURES,
    PMV_THRESHOLD,
    examine_part,
    image_examine_part,
    is_image_data,
    nmodel_images_part,
    nmodel_part,
    overfit_images_part,
    overfit_part,
    pgdl_part,
    pmv_part,
)
from fitaudit.auditing.result import INSTRUMENTS, STATUSES, AuditPart, AuditResult, load_audit
from fitaudit.auditing.runner import PartSpec, compute_backend, environment, run_parts, skipped
from fitaudit.checkpoint import CheckpointStore, check_folder, fingerprint
from fitaudit.models.fingerprint import evaluation_fingerprint, model_fingerprint
from fitaudit.models.inference import inference_summary
from fitaudit.models.labels import label_set
from fitaudit.parallel import check_n_jobs
from fitaudit.random import as_seed
from fitaudit.stats.binomial import binomial_interval

__all__ = [
    "EXAMINE_TOLERANCE",
    "INSTRUMENTS",
    "PGDL_MEASURES",
    "PMV_THRESHOLD",
    "STATUSES",
    "AuditPart",
    "AuditResult",
    "Dataset",
    "PartSpec",
    "audit",
    "load_audit",
    "load_data",
    "model_fingerprint",
    "run_parts",
]


def audit(
    model: Any,
    data: Any = None,
    *,
    train_data: Any = None,
    learner: Any = None,
    models: Sequence[Any] | None = None,
    generator: Any = None,
    task: Any = None,
    aeg: Any = None,
    examiner: str = "bo",
    examine_steps: int = 30,
    margin: int | None = None,
    eps: int | None = None,
    delta: float = 0.05,
    pmv_threshold: float = PMV_THRESHOLD,
    instruments: Sequence[str] | None = None,
    out: str | os.PathLike[str] = "fitaudit-out/audit",
    n_jobs: int | None = None,
    dask_scheduler: Any = None,
    random_state: Any = 0,
    progress: bool = True,
    title: str | None = None,
    images: Any = None,
    train_images: Any = None,
    pipeline: Any = None,
    skip_broken: bool = False,
    verify_content: bool | None = None,
    classes: str | Sequence[str] | None = None,
    trust_code: bool = False,
    trust_torchscript: bool = False,
    label: str | None = None,
    features: Sequence[str] | None = None,
) -> AuditResult:
    """Audit ``model``: run every instrument that applies, write ``audit.json`` and ``report.html``.

    Parameters
    ----------
    model : path or model
        ONNX file, torch safetensors + config folder, ``.skops`` file, or a
        model object (see :func:`fitaudit.models.as_classifier`).
    data : path, table or (x, y)
        The data the model is scored on (its test set): ``.npz`` with ``x``
        and ``y`` (and ``margin`` for canvases); a CSV or parquet file or a
        table (pandas DataFrame, anything with ``__dataframe__``) with its
        ``label`` column; or ``(x, y)``, ``x`` an array or a table. Labels
        follow :mod:`fitaudit.models.labels`: the model's classes when it
        has them (a scikit-learn model's ``classes_``), else indices.
    train_data : path, table or (x, y), optional
        The data it was trained on: the overfitting test runs there too
        (set side by side with the test data) and PMV retrains on it.
    learner : scikit-learn estimator, optional
        The learning procedure, for PMV; default: the model itself when it
        is a scikit-learn model (cloned, never modified).
    models : list, optional
        Other trained runs of the same procedure (same data, other seeds):
        the N-model test over ``model`` and these.
    generator : Generator, optional
        Inputs from factors (:mod:`fitaudit.data.generators`): the
        adversarial examiner.
    task : path or task, optional
        A population of trained models in the PGDL competition's format (a
        task folder, e.g. from ``fitaudit pgdl zoo build``): the leaderboard
        of :data:`PGDL_MEASURES` by how well they predict the gap.
    aeg : AdversarialExampleGenerator, optional
        The overfitting test's AEG; default: translations for canvases with
        a margin, otherwise the test is skipped.
    examiner : str
        The examiner (``"bo"``, ``"rl"``, ``"random"``, ...; see
        :func:`fitaudit.examine.list_examiners`).
    examine_steps : int
        T, the examination steps per instance.
    margin, eps : int, optional
        Canvas margin P (default from the ``.npz``) and the translation
        step (default ``min(2, margin // 3)``).
    delta : float
        Level of the overfitting tests.
    pmv_threshold : float
        Smallest |k_S| counted as a good fit.
    instruments : list of str, optional
        Run only these (:data:`INSTRUMENTS`); asking for one that lacks its
        inputs is an error instead of a skip.
    out : path
        Output folder: ``audit.json``, ``report.html``, ``parts/`` (the
        checkpoints that make a rerun resume).
    n_jobs : int, optional
        Parallel workers for the heavy parts (joblib).
    dask_scheduler : str or dask.distributed.Client, optional
        Run the heavy parts on this Dask cluster.
    random_state : None, int or numpy Generator
        Checked once here and turned into one integer seed
        (:func:`fitaudit.random.as_seed`) that every part uses and the
        result records; a Generator is advanced once.
    progress : bool
        Progress bars on stderr.
    title : str, optional
    images, train_images : path, optional
        Image folders ``root/<class>/<image>`` or CSV files instead of
        ``data``/``train_data``: the overfitting test runs on both side by
        side through the evaluation ``pipeline``, streamed batch by batch
        (:mod:`fitaudit.auditing.images`); ``eps`` defaults to floor(P / 3).
    pipeline : EvalPipeline or dict, optional
        Resize, crop, mean, std for ``images``; default: the model file's.
    skip_broken : bool
        Leave out image files that cannot be read (listed in the subject) instead of stopping.
    verify_content : bool or None
        How stored parts are matched to the image folders: True by the files'
        content, False by their sizes and modification times, None (default)
        by content for folders up to
        :data:`fitaudit.data.images.CONTENT_KEY_LIMIT` bytes
        (:meth:`fitaudit.data.images.ImageDataset.key_rule`).
    classes : list of str or str, optional
        With ``images``: the class names in the model's output order (names
        separated by commas, as ``--classes``); default the names the model
        file records, else the folders' sorted names
        (:func:`fitaudit.models.io.class_order`).
    trust_code, trust_torchscript : bool
        Allow model files that run code when loaded (an architecture file a
        config names, a TorchScript file), as :func:`fitaudit.models.load_model`.
    label : str, optional
        The label column of a table given as ``data``/``train_data``.
    features : list of str, optional
        A table's feature columns, in the order the model takes them
        (default: every column but ``label``).

    Returns
    -------
    AuditResult
    """
    from fitaudit.auditing.saved import repair_page
    from fitaudit.report import save_audit

    start = time.perf_counter()
    folder = check_folder(out, "out")
    repair_page(folder)  # a page left beside another run's audit.json by a kill between the two writes
    delta = check_float(delta, "delta", low=0.0, high=0.5, low_inclusive=False, high_inclusive=False)
    pmv_threshold = check_float(pmv_threshold, "pmv_threshold", low=0.0)
    n_jobs = check_n_jobs(n_jobs)  # 0 or -5 refused here, not after the first parts ran
    _check_part_settings(examiner, examine_steps, margin, eps)  # here too, also when their parts do not run
    # one seed for every part, checked and drawn once here (a Generator is advanced once, not part by part)
    random_state = as_seed(random_state)
    chosen = _check_instruments(instruments)
    from fitaudit.models import as_classifier

    if (data is None) == (images is None):
        raise InputError("`data` is required (or `images`, not both): the data the model is scored on "
                         "(.npz with x and y, (x, y), or an image folder).")
    if train_images is not None and images is None:
        raise InputError("`train_images` goes with `images`; with `data`, give the training data as `train_data`.")
    if images is not None and (label is not None or features is not None):
        raise InputError(f"`{'label' if label is not None else 'features'}` goes with a table as `data`; "
                         "image folders take their labels from their class folders.")
    for argument, given in (("pipeline", pipeline is not None), ("skip_broken", bool(skip_broken)),
                            ("verify_content", verify_content is not None),
                            ("classes", classes is not None)):
        if given and images is None:  # as the command line refuses --resize/--crop/--skip-broken with --data
            raise InputError(f"`{argument}` goes with `images`; it does nothing with `data`.")
    load: dict[str, Any] = {"trust_code": bool(trust_code), "trust_torchscript": bool(trust_torchscript)}  # model files
    adapter = as_classifier(model, name="model", **load)
    model_key = evaluation_fingerprint(model)  # the weights and, for torch, the backend and device they run on
    if models:  # one run counted twice would pass the agreement and the N-model test trivially
        from fitaudit.overfit.runs import check_distinct_runs

        check_distinct_runs([model, *models], option="models")
    pictures = None if images is None else load_image_inputs(
        model, images, train_images, pipeline, eps=eps, skip_broken=skip_broken, progress=progress,
        verify_content=verify_content, classes=classes)
    labels = label_set(adapter, model)  # one label convention (models.labels)
    table: dict[str, Any] = {"labels": labels, "label": label, "features": features}
    test = load_data(data, "data", **table) if data is not None else None
    train = load_data(train_data, "train_data", **table) if train_data is not None else None
    if aeg is None and test is not None:
        aeg, no_aeg = default_aeg(test, margin, eps, random_state)
    else:
        no_aeg = None
    subject = {"model": native_name(model), "model_kind": getattr(adapter, "kind", type(adapter).__name__),
               "n_classes": adapter.n_classes,
               "data": test.describe() if test is not None else pictures.describe("test") if pictures else None,
               "train_data": train.describe() if train else pictures.describe("train") if pictures else None}
    inputs_of = aeg.model_inputs if aeg is not None else (lambda x: x)
    if test is not None:
        subject["accuracy"] = accuracy_of(adapter, inputs_of(test.x), test.y, "data")
    task_name = str(task) if task is not None else None
    if test is not None:  # a generator's classes and a population's task must be the audited model's
        probe = inputs_of(test.x[:1])
        outputs = model_outputs(adapter, probe)
        if generator is not None and wanted_any(chosen, "examine"):
            check_generator_classes(generator, outputs, model)
        if task is not None and wanted_any(chosen, "pgdl"):
            task = check_task(task, probe, outputs, trust_code=load["trust_code"])
    if train is not None:
        subject["train_accuracy"] = accuracy_of(adapter, inputs_of(train.x), train.y, "train_data")
    if pictures is not None:  # decoded batch by batch through the pipeline
        subject["accuracy"] = image_accuracy(adapter, pictures.test, pictures.pipeline, name="images")
        if pictures.train is not None:
            subject["train_accuracy"] = image_accuracy(adapter, pictures.train, pictures.pipeline,
                                                       name="train_images")
        subject["broken_images"] = pictures.broken
    scored_n = len(test.y) if test is not None else len(pictures.test) if pictures is not None else 0
    if scored_n:  # the exact interval of the header's accuracy (stats.binomial)
        interval = binomial_interval(round(cast(float, subject["accuracy"]) * scored_n), scored_n)
        subject["accuracy_interval"] = [interval.low, interval.high]
    subject["inference"] = inference_summary(adapter)  # how a torch model ran (fitaudit.models.inference)
    store = CheckpointStore(folder / "parts")
    # the first questions come first in every audit: precision, leakage, agreement (auditing.first)
    specs: list[PartSpec | AuditPart] = first_question_specs(
        adapter, model_key, test=test, train=train, pictures=pictures, models=models, inputs_of=inputs_of,
        random_state=random_state, progress=progress, checkpoint_dir=folder / "leakage-blocks", load=load,
        labels=labels)
    wanted = {name: (chosen is None or name in chosen) for name in INSTRUMENTS}

    def need(instrument: str, reason: str) -> None:
        if chosen is not None and instrument in chosen:
            raise InputError(f"`instruments` asks for {instrument}, but {reason}")

    if wanted["overfit"] and pictures is not None:
        specs += image_overfit_specs(adapter, model_key, pictures, models, delta=delta, folder=folder,
                                     progress=progress, load=load)
    elif wanted["overfit"] and test is not None:
        if aeg is None:
            need("overfit", no_aeg or "no AEG applies")
            specs.append(skipped("overfit-test", "overfit", "Overfitting test on the scored data", str(no_aeg)))
        else:
            specs.append(overfit_part("overfit-test", "Overfitting test on the scored data", adapter,
                                      model_key, test, aeg, role="test", delta=delta))
            if train is not None:
                specs.append(overfit_part("overfit-train", "Overfitting test on the training data", adapter,
                                          model_key, train, aeg, role="train", delta=delta))
            if models:  # the audited model and the other runs of its training procedure
                runs = [adapter, *(as_classifier(m, name="models", **load) for m in models)]
                keys = [model_key, *(evaluation_fingerprint(m) for m in models)]
                specs.append(nmodel_part(runs, keys, test, aeg, delta=delta))
    if wanted["examine"]:
        specs.append(_examine_spec(adapter, model_key, generator, need, examiner, examine_steps, random_state,
                                   n_jobs, folder, progress, test))
    if wanted["pgdl"]:
        specs.append(_pgdl_spec(task, need, random_state, n_jobs, folder, progress, trust_code=load["trust_code"]))
    if wanted["pmv"]:
        learner = learner if learner is not None else sklearn_learner(adapter)
        title_pmv = "Perturbed model validation of the learner"
        if learner is None or train is None:
            reason = ("PMV needs a scikit-learn learner to retrain (`learner=`, or a .skops model) "
                      "and the training data (`train_data`)")
            need("pmv", reason + ".")
            specs.append(skipped("pmv", "pmv", title_pmv, reason + "."))
        else:
            from sklearn.base import clone

            learner = clone(learner)  # PMV retrains copies; a fitted model's state is not part of the learner
            specs.append(pmv_part(learner, fingerprint(learner), train, threshold=pmv_threshold,
                                  random_state=random_state, n_jobs=n_jobs,
                                  checkpoint_dir=folder / "pmv-fits", progress=progress))
    settings: dict[str, Any] = {"delta": delta, "pmv_threshold": pmv_threshold, "aeg": repr(aeg) if aeg is not None else None,
                "examiner": examiner, "examine_steps": examine_steps, "task": task_name,
                "instruments": list(chosen) if chosen else list(INSTRUMENTS), "n_jobs": n_jobs,
                "dask_scheduler": str(dask_scheduler) if dask_scheduler is not None else None, "out": str(folder)}
    if pictures is not None:  # how the folders were matched to stored parts (the reuse message says it)
        settings["image_keys"] = {name: data.key_rule() for name, data in
                                  (("images", pictures.test), ("train_images", pictures.train)) if data is not None}
    with compute_backend(dask_scheduler):
        parts = run_parts(specs, store, progress=progress)
    name = (Path(os.fspath(model)).name if isinstance(model, (str, os.PathLike))
            else type(getattr(adapter, "model", adapter)).__name__)
    result = AuditResult(
        title=title or f"Audit of {name}",
        subject=subject, parts=parts, settings=settings, environment=environment(),
        random_state=random_state, seconds=time.perf_counter() - start,
        created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )
    save_audit(result, folder)
    return result


def wanted_any(chosen: tuple[str, ...] | None, instrument: str) -> bool:
    """Whether ``instrument`` runs (every instrument when none was chosen)."""
    return chosen is None or instrument in chosen


def _check_instruments(instruments: Sequence[str] | None) -> tuple[str, ...] | None:
    if instruments is None:
        return None
    names = [instruments] if isinstance(instruments, str) else list(instruments)
    unknown = [n for n in names if n not in INSTRUMENTS]
    if unknown or not names:
        raise InputError(f"`instruments` must name some of {', '.join(INSTRUMENTS)}; got {names!r}.")
    return tuple(names)


def _check_part_settings(examiner: str, examine_steps: int, margin: int | None, eps: int | None) -> None:
    """The examiner's and the AEG's settings, checked before any part runs."""
    from fitaudit.examine.registry import list_examiners

    if not isinstance(examiner, str) or examiner.strip().lower() not in list_examiners():
        raise InputError(f"`examiner` must be one of {', '.join(list_examiners())}; got {examiner!r}.")
    check_int(examine_steps, "examine_steps", minimum=1)
    if margin is not None:
        check_int(margin, "margin", minimum=0)
    if eps is not None:
        check_int(eps, "eps", minimum=1)


def _examine_spec(adapter: Any, model_key: str, generator: Any, need: Callable[[str, str], None], examiner: str,
                  steps: int, random_state: Any, n_jobs: Any, folder: Path, progress: bool,
                  test: Dataset | None) -> PartSpec | AuditPart:
    title = "Adversarial examination over the input factors"
    if generator is None and test is not None and is_image_data(test):  # the audited images themselves, under image transforms
        return image_examine_part(adapter, model_key, test, examiner=examiner, steps=steps,
                                  random_state=random_state, n_jobs=n_jobs, folder=folder, progress=progress)
    if generator is None:
        reason = ("the examiner needs a generator of inputs from factors (`generator=`, e.g. ShapesGenerator), "
                  "or image data in [0, 1] (n, 1 or 3, H, W) to examine under image transforms.")
        need("examine", reason)
        return skipped("examine", "examine", title, reason)
    return examine_part(adapter, model_key, generator, examiner=examiner, steps=steps, random_state=random_state,
                        n_jobs=n_jobs, folder=folder, progress=progress)


def _pgdl_spec(task: Any, need: Callable[[str, str], None], random_state: Any, n_jobs: Any,
               folder: Path, progress: bool, *, trust_code: bool) -> PartSpec | AuditPart:
    title = "Generalization measures on a population of models"
    if task is None:
        reason = "the generalization measures need a population of trained models (`task=`: a PGDL task folder)."
        need("pgdl", reason)
        return skipped("pgdl", "pgdl", title, reason)
    return pgdl_part(task, random_state=random_state, n_jobs=n_jobs, folder=folder, progress=progress,
                     trust_code=trust_code)


def image_overfit_specs(adapter: Any, model_key: str, pictures: Any, models: Sequence[Any] | None, *,
                        delta: float, folder: Path, progress: bool,
                        load: dict[str, Any] | None = None) -> list[PartSpec | AuditPart]:
    """The overfitting test on the scored image folder and, side by side, on the training folder."""
    specs: list[PartSpec | AuditPart] = []
    for part_id, role, data in (("overfit-test", "test", pictures.test), ("overfit-train", "train", pictures.train)):
        if data is not None:
            title = f"Overfitting test on the {'scored' if role == 'test' else 'training'} images"
            specs.append(overfit_images_part(part_id, title, adapter, model_key, data, pictures.pipeline, role=role,
                                             eps=pictures.eps, delta=delta, checkpoint_dir=folder / f"{part_id}-batches",
                                             progress=progress))
    if models:  # the audited model and the other runs of its training procedure, on the scored images
        from fitaudit.models import as_classifier

        runs = [adapter, *(as_classifier(m, name="models", **(load or {})) for m in models)]
        keys = [model_key, *(evaluation_fingerprint(m) for m in models)]
        specs.append(nmodel_images_part(runs, keys, pictures.test, pictures.pipeline, eps=pictures.eps, delta=delta,
                                        checkpoint_dir=folder / "overfit-nmodel-batches", progress=progress))
    return specs
