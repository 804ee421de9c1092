"""One audit: ask every question that applies to what the user has; return pure data.

:func:`run_audit` takes a model, the data it is scored on and whatever else
is at hand, validates them once
(:class:`~fitaudit.auditing.inputs.AuditInputs`), plans one *part* per
question of :data:`~fitaudit.auditing.checks.CHECKS` (each a
:class:`~fitaudit.auditing.check.Check`) and runs them:

==================  =====================================================  ==========================
part                what it needs                                          instrument
==================  =====================================================  ==========================
``accuracy``        the scored data (exact interval, overall, per class)  first questions
``baseline``        the scored data (majority class); the training data   first questions
                    for the reference learner (a scaled logistic
                    regression)
``calibration``     the scored data and the model's probabilities          first questions
``slices``          the scored rows as a table or an array of rows        first questions
``labels``          the scored data and the model's probabilities          first questions
``leakage``         the training data too (exact and near duplicates)     first questions
``agreement``       another run of the same training (``models=``)        first questions
``overfit-test``    the scored data and an AEG (images on canvases with a  overfitting test
                    spare ``margin``, or ``aeg=`` in Python)
``overfit-train``   the same on the training data (shown side by side)     overfitting test
``overfit-nmodel``  several trained runs (``models=``)                     N-model test
``examine``         a generator (``generator=``), images or image folders adversarial examiner
``pgdl``            a zoo or PGDL task (``task=``)                         generalization measures
``pmv``             a scikit-learn learner and the training data           perturbed model validation
==================  =====================================================  ==========================

A part that cannot run is kept in the result as *skipped*, with the reason;
it never stops the others. An accuracy at or below chance does not stop the
audit either: the baseline part reports it with the likely causes (labels
not in the model's order: :func:`fitaudit.models.labels.chance_hint`).

:func:`run_audit` writes no result file and no sentence: it returns an
:class:`AuditResult` of data and decisions. :func:`fitaudit.audit`, which
sits above this package and :mod:`fitaudit.report`, is the user's call: it
runs :func:`run_audit` and has the report layer word every part
(:func:`fitaudit.report.verdicts.word_audit`); :func:`fitaudit.report.save_audit`
writes ``audit.json`` and ``report.html`` as one unit (the command line
calls both).
Given a ``checkpoint_dir``, each part is a resumable unit of a
:class:`~fitaudit.checkpoint.CheckpointStore` in ``checkpoint_dir/parts``,
keyed by the fingerprint of the model's weights, the data and the
settings: an audit killed mid-way and started again with the same
``checkpoint_dir`` reuses every finished part and recomputes those whose
inputs changed. The instruments keep their own finer checkpoints there too
(PMV fits, N-model runs, leakage blocks, the examiner's full query logs).
Without one, that work lives in a temporary folder removed when the audit
returns, and nothing is kept.

The package is named ``auditing`` because ``fitaudit.audit`` is a
function: a subpackage ``fitaudit.audit`` would replace the function of
that name on the ``fitaudit`` package as soon as it is imported.

Modules: :mod:`~fitaudit.auditing.check` (the protocol of a question),
:mod:`~fitaudit.auditing.checks` (the list of questions),
:mod:`~fitaudit.auditing.inputs` (validated once),
:mod:`~fitaudit.auditing.runner` (plan, run, resume),
:mod:`~fitaudit.auditing.result` (the pure-data results),
:mod:`~fitaudit.auditing.decision` (the audit's overall verdict),
:mod:`~fitaudit.auditing.parts` (the part builders the checks use).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_float, check_int
from fitaudit.auditing.check import Check
from fitaudit.auditing.checks import CHECKS
from fitaudit.auditing.inputs import AuditInputs, Dataset, load_data, validate_inputs
from fitaudit.auditing.parts import EXAMINE_TOLERANCE, PGDL_MEASURES, PMV_THRESHOLD
from fitaudit.auditing.result import (
    INSTRUMENTS,
    STATUSES,
    AuditPart,
    AuditResult,
    PartVerdict,
    load_audit,
    read_controls,
)
from fitaudit.auditing.runner import PartSpec, environment, plan, run_parts
from fitaudit.checkpoint import CheckpointStore, check_folder
from fitaudit.folder_lock import writer_lock
from fitaudit.models.fingerprint import model_fingerprint
from fitaudit.models.inference import using_backend
from fitaudit.options import RunOptions, as_options
from fitaudit.parallel import check_n_jobs, compute_backend
from fitaudit.random import as_seed

__all__ = [
    "EXAMINE_TOLERANCE",
    "INSTRUMENTS",
    "PGDL_MEASURES",
    "PMV_THRESHOLD",
    "STATUSES",
    "AuditInputs",
    "AuditPart",
    "AuditResult",
    "Check",
    "Dataset",
    "PartSpec",
    "PartVerdict",
    "check_factors",
    "load_audit",
    "load_data",
    "model_fingerprint",
    "run_audit",
    "run_parts",
]


def run_audit(
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
    factors: Mapping[str, Any] | None = None,
    margin: int | None = None,
    eps: int | None = None,
    stride: int = 1,
    mirror: bool = False,
    delta: float = 0.05,
    pmv_threshold: float = PMV_THRESHOLD,
    instruments: Sequence[str] | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    options: RunOptions | None = None,
    title: str | None = None,
    images: Any = None,
    train_images: Any = None,
    pipeline: Any = None,
    skip_broken: bool = False,
    verify_content: bool | None = None,
    classes: str | Sequence[str] | None = None,
    trust_torchscript: bool = False,
    label: str | None = None,
    features: Sequence[str] | None = None,
    checks: Sequence[Check] | None = None,
    names: Mapping[str, str] | None = None,
) -> AuditResult:
    """Audit ``model``: validate the inputs once, plan every check, run them; return the result (pure data).

    A check that cannot run on the inputs is skipped with its reason; the
    others still run. Nothing but checkpoints is written: to save the
    report, call ``fitaudit.report.save_audit(result, folder)`` (it writes
    ``audit.json`` and ``report.html`` as one unit).

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
    factors : mapping, optional
        The examined factors narrowed, widened or fixed: ``{name: (low,
        high)}`` or ``{name: value}`` (``--factor NAME=LOW:HIGH``; recorded with lists for ranges). Of the
        image transforms (:func:`fitaudit.data.transforms.image_factor_space`)
        when images are examined, of the ``generator``'s factors otherwise.
        Checked before any part runs.
    margin, eps : int, optional
        Canvas margin P (default from the ``.npz``) and the largest shift in
        steps of ``stride`` (default ``max(1, min(2, margin // (3 stride)))``).
    stride : int
        Pixels per step of the translational AEG's shifts
        (:class:`~fitaudit.overfit.translation.TranslationAEG`; 1 is the
        paper's ``V_eps``): beyond a random-crop augmentation's range the
        test sees a model trained on random crops. Needs
        ``margin >= 3 eps stride`` (with ``images``, ``P``).
    mirror : bool
        The AEG also tries the mirror image of every shift
        (:class:`~fitaudit.overfit.mirror.MirrorTranslationAEG`); its (G3)
        check tests the flip too, and the verdict is inconclusive where the
        images are not mirror-symmetric.
    delta : float
        Level of the overfitting tests.
    pmv_threshold : float
        Smallest |k_S| counted as a good fit.
    instruments : list of str, optional
        Run only these (:data:`INSTRUMENTS`); asking for one that lacks its
        inputs is an error instead of a skip.
    checkpoint_dir : path, optional
        Folder of finished units a rerun resumes from: ``parts/`` (one unit
        per part) and the instruments' own checkpoints. Default: a
        temporary folder, removed when the audit returns (nothing is kept).
    options : RunOptions, optional
        How it runs (:class:`fitaudit.options.RunOptions`, as the PGDL
        harness takes it; default ``RunOptions()``): ``n_jobs``, the parallel
        workers for the heavy parts (joblib); ``dask_scheduler``, a Dask
        cluster they run on; ``random_state``, checked once here and turned
        into one integer seed (:func:`fitaudit.random.as_seed`) that every
        part uses and the result records (a Generator is advanced once);
        ``progress``, progress bars on stderr; ``trust_code``, whether a model
        folder naming its own architecture file may run it (as
        :func:`fitaudit.models.load_model`); ``device``, where the model runs
        and the examiner's image transforms are made (a torch device:
        ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``; ONNX: ``"cpu"`` or
        ``"cuda"``), for the audited model and the other runs; ``backend``,
        how torch models run (None: the process default).
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
    trust_torchscript : bool
        Allow a TorchScript model file, which runs code when loaded, as
        :func:`fitaudit.models.load_model` (the architecture file a config
        names is ``options.trust_code``).
    label : str, optional
        The label column of a table given as ``data``/``train_data``.
    features : list of str, optional
        A table's feature columns, in the order the model takes them
        (default: every column but ``label``).
    checks : list of Check, optional
        The questions to ask (default :data:`fitaudit.auditing.checks.CHECKS`);
        a new question is one more :class:`~fitaudit.auditing.check.Check`.
    names : mapping of str to str, optional
        What the caller calls the arguments, where a skipped part's reason
        names one (keyword -> name): ``fitaudit audit`` passes its options
        (:data:`fitaudit._names.CLI_OPTIONS`), so its report reads
        ``--train-data``; by default the reasons name the keywords
        (``train_data=``).

    Returns
    -------
    AuditResult
        Every part with its result and decision; its sentences are filled by
        the report layer (:func:`fitaudit.audit` returns it worded).
    """
    start = time.perf_counter()
    options = as_options(options)
    folder = None if checkpoint_dir is None else check_folder(checkpoint_dir, "checkpoint_dir")
    delta = check_float(delta, "delta", low=0.0, high=0.5, low_inclusive=False, high_inclusive=False)
    pmv_threshold = check_float(pmv_threshold, "pmv_threshold", low=0.0)
    n_jobs = check_n_jobs(options.n_jobs)  # 0 or -5 refused here, not after the first parts ran
    _check_part_settings(examiner, examine_steps, margin, eps)  # here too, also when their parts do not run
    stride = check_int(stride, "stride", minimum=1)
    if not isinstance(mirror, (bool, np.bool_)):
        raise InputError(f"`mirror` must be true or false; got {mirror!r}.")
    if aeg is not None and (stride != 1 or mirror):
        raise InputError("`stride` and `mirror` set the built-in translational AEG; with `aeg=` give them to it "
                         "(TranslationAEG(stride=...), MirrorTranslationAEG).")
    factors = check_factors(factors, generator)
    # one seed for every part, checked and drawn once here (a Generator is advanced once, not part by part)
    random_state = as_seed(options.random_state)
    chosen = _check_instruments(instruments)
    with _working_folder(folder) as work, using_backend(options.backend):
        inputs, subject = validate_inputs(
            model, data, train_data=train_data, learner=learner, models=models, generator=generator, task=task,
            aeg=aeg, margin=margin, eps=eps, stride=stride, mirror=bool(mirror), images=images, train_images=train_images, pipeline=pipeline,
            skip_broken=skip_broken, verify_content=verify_content, label=label, features=features,
            classes=classes, chosen=chosen, folder=work, kept=folder is not None, progress=options.progress, load={
                "trust_code": bool(options.trust_code), "trust_torchscript": bool(trust_torchscript),
                "device": options.device},
            settings={"delta": delta, "examiner": examiner, "examine_steps": examine_steps, "factors": factors,
                      "pmv_threshold": pmv_threshold, "random_state": random_state, "n_jobs": n_jobs})
        inputs = dataclasses.replace(inputs, names=names)
        specs = plan(CHECKS if checks is None else list(checks), inputs, chosen)
        with compute_backend(options.dask_scheduler):
            parts = run_parts(specs, CheckpointStore(work / "parts"), progress=options.progress,
                              kept=folder is not None)
    read_controls(parts)
    settings: dict[str, Any] = {
        "delta": delta, "pmv_threshold": pmv_threshold, "aeg": repr(inputs.aeg) if inputs.aeg is not None else None,
        "stride": stride, "mirror": bool(mirror),
        "examiner": examiner, "examine_steps": examine_steps, "factors": factors, "task": str(task) if task is not None else None,
        "instruments": list(chosen) if chosen else list(INSTRUMENTS), "n_jobs": n_jobs,
        "dask_scheduler": str(options.dask_scheduler) if options.dask_scheduler is not None else None,
        "checkpoint_dir": str(folder) if folder is not None else None}
    pictures = inputs.pictures
    if pictures is not None:  # how the folders were matched to stored parts (the reuse message says it)
        settings["image_keys"] = {name: data.key_rule() for name, data in
                                  (("images", pictures.test), ("train_images", pictures.train)) if data is not None}
    name = (Path(os.fspath(model)).name if isinstance(model, (str, os.PathLike))
            else type(getattr(inputs.adapter, "model", inputs.adapter)).__name__)
    return AuditResult(
        title=title or f"Audit of {name}",
        subject=subject, parts=parts, settings=settings, environment=environment(),
        random_state=random_state, seconds=time.perf_counter() - start,
        created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )


@contextlib.contextmanager
def _working_folder(folder: Path | None) -> Iterator[Path]:
    """``folder`` (the caller's checkpoints, held against a second writer), or a temporary folder removed on the way out."""
    if folder is not None:
        with writer_lock(folder, option="checkpoint_dir", command="fitaudit.audit"):
            yield folder
        return
    with tempfile.TemporaryDirectory(prefix="fitaudit-audit-") as scratch:
        yield Path(scratch)


def _check_instruments(instruments: Sequence[str] | None) -> tuple[str, ...] | None:
    if instruments is None:
        return None
    names = [instruments] if isinstance(instruments, str) else list(instruments)
    unknown = [n for n in names if n not in INSTRUMENTS]
    if unknown or not names:
        raise InputError(f"`instruments` must name some of {', '.join(INSTRUMENTS)}; got {names!r}.")
    return tuple(names)


def check_factors(factors: Mapping[str, Any] | None, generator: Any = None, *,
                  option: str = "factors") -> dict[str, Any] | None:
    """``factors`` checked against the examined space (one-line errors naming ``option``), as a plain dict.

    The ``generator``'s factors when there is one (:func:`fitaudit.examine.examination.restrict_space`),
    else the image transforms' (:func:`fitaudit.data.transforms.image_factor_space`).
    """
    if factors is None:
        return None
    if not isinstance(factors, Mapping) or not factors:
        raise InputError(f"`{option}` must be a non-empty mapping factor name -> (low, high) or value; got {factors!r}.")
    if generator is None:
        from fitaudit.data.transforms import image_factor_space

        image_factor_space(factors, option=option)
    else:
        from fitaudit.examine.examination import restrict_space

        names = list(generator.factor_space.names)
        unknown = sorted(set(factors) - set(names))
        if unknown:
            raise InputError(f"`{option}` names unknown factor(s) {', '.join(map(str, unknown))}; "
                             f"the generator's factors are {', '.join(names)}.")
        restrict_space(generator.factor_space, factors)
    return {str(name): np.asarray(value, dtype=float).tolist() for name, value in factors.items()}


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
