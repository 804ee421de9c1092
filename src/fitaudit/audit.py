"""One audit: run every instrument that applies to what the user has, write one report.

:func:`audit` takes a model, the data it is scored on and whatever else is
at hand, and plans one *part* per question that can be answered:

==================  =====================================================  ==========================
part                what it needs                                          instrument
==================  =====================================================  ==========================
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
atomically at the end, so a half-finished audit leaves neither.

``fitaudit.audit`` is this module and is callable: ``fitaudit.audit(model,
data, ...)`` is :func:`audit` (``import fitaudit`` stays light; this module
is imported on first use).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import os
import platform
import sys
import time
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fitaudit._errors import InputError
from fitaudit._validation import check_float, check_int
from fitaudit.checkpoint import (
    CheckpointStore,
    atomic_write_text,
    check_folder,
    code_fingerprint,
    fingerprint,
)
from fitaudit.pmv.score import GOOD_FIT_SLOPE
from fitaudit.results import Result

#: the four instruments, in report order
INSTRUMENTS = ("overfit", "examine", "pgdl", "pmv")

#: statuses of a part: ``pass`` (no problem found), ``fail`` (a problem found),
#: ``info`` (a measurement, not a judgement), ``skipped`` (could not run)
STATUSES = ("pass", "fail", "info", "skipped")

#: bump when the stored form of a part changes, so old parts are never reused
_PART_FORMAT = "audit-part-1"

#: default smallest |k_S| counted as a good fit (fitaudit's convention, see :func:`pmv_part`)
PMV_THRESHOLD = GOOD_FIT_SLOPE


@dataclasses.dataclass(repr=False)
class AuditPart(Result):
    """One answered (or skipped) question of an audit.

    Attributes
    ----------
    id : str
        Stable name, e.g. ``"overfit-test"``; ``--fail-on`` accepts it.
    instrument : str
        One of :data:`INSTRUMENTS`.
    title : str
        What was asked, in words.
    status : str
        One of :data:`STATUSES`.
    verdict : str
        The answer in plain words with the numbers behind it (for a skipped
        part: why it was skipped).
    numbers : dict
        The headline numbers (name -> value), shown in the summary.
    result : Result or None
        The instrument's full result (the evidence).
    settings : dict
        Parameters of this part (levels, sizes, seeds).
    expected : dict or None
        Where the right answer is known in advance (the demo):
        ``{"text": ..., "met": bool}``.
    images : list of dict
        Pictures of the evidence (e.g. the examiner's worst cases):
        ``{"caption": ..., "uri": "data:image/png;base64,..."}``.
    seconds : float
        Wall time of the computation (of the run that computed it).
    resumed : bool
        Whether this run reused the part from the output folder.
    key : str or None
        Its checkpoint key.
    """

    id: str
    instrument: str
    title: str
    status: str
    verdict: str
    numbers: dict[str, Any] = dataclasses.field(default_factory=dict)
    result: Result | None = None
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)
    expected: dict[str, Any] | None = None
    images: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    resumed: bool = False
    key: str | None = None

    def _summary_fields(self) -> list[str]:
        return ["id", "status", "verdict"]


@dataclasses.dataclass(repr=False)
class AuditResult(Result):
    """Outcome of :func:`audit` (and of ``fitaudit demo``): every part and its context.

    Attributes
    ----------
    title : str
    subject : dict
        What was audited (model, data shapes and accuracies).
    parts : list of AuditPart
        In report order; skipped parts included.
    settings : dict
        The audit's parameters.
    environment : dict
        Versions of Python, fitaudit and the libraries, the platform.
    random_state : int or None
    seconds : float
        Wall time of this run (resumed parts count their own original time separately).
    created : str
        UTC time the result was made (ISO 8601).
    """

    title: str
    subject: dict[str, Any]
    parts: list[AuditPart]
    settings: dict[str, Any]
    environment: dict[str, Any]
    random_state: int | None
    seconds: float
    created: str

    def _summary_fields(self) -> list[str]:
        return ["title", "seconds"]

    def part(self, part_id: str) -> AuditPart:
        """The part named ``part_id`` (``KeyError`` if absent)."""
        for part in self.parts:
            if part.id == part_id:
                return part
        raise KeyError(part_id)

    def verdicts(self) -> dict[str, str]:
        """Status of every part, by id."""
        return {part.id: part.status for part in self.parts}

    def failing(self, names: Sequence[str]) -> list[str]:
        """Messages for each of ``names`` (instruments or part ids) that failed or did not run.

        Used by ``fitaudit audit --fail-on``: a chosen verdict fails when any
        of its parts has status ``fail``, and also when none of them ran
        (a check that could not be made is not a pass).
        """
        messages = []
        for name in names:
            chosen = [p for p in self.parts if name in (p.id, p.instrument)]
            if not chosen:
                known = sorted({p.id for p in self.parts} | set(INSTRUMENTS))
                raise InputError(f"`fail_on` names {name!r}, which is not an instrument or part; use {', '.join(known)}.")
            for part in chosen:
                if part.status == "fail":
                    messages.append(f"{part.id} failed: {part.verdict}")
            if all(p.status == "skipped" for p in chosen):
                messages.append(f"{name} did not run: " + "; ".join(p.verdict for p in chosen))
        return messages

    def __repr__(self) -> str:
        marks = {"pass": "ok  ", "fail": "FAIL", "info": "info", "skipped": "skip"}
        lines = [f"{self.title} ({self.seconds:.0f} s)"]
        for part in self.parts:
            lines.append(f"  [{marks.get(part.status, part.status)}] {part.title}: {part.verdict}")
            if part.expected is not None:
                lines.append(f"         expected: {part.expected['text']} ({'met' if part.expected['met'] else 'NOT MET'})")
        return "\n".join(lines)

    def to_html(self, path: str | os.PathLike[str] | None = None) -> Any:
        """The self-contained HTML report; written atomically to ``path`` if given (returns the path)."""
        from fitaudit.report import render

        page = render(self, "html")
        if path is None:
            return page
        return atomic_write_text(path, page)

    def _repr_html_(self) -> str:
        from fitaudit.report import render

        return str(render(self, "html", standalone=False))

    def save(self, folder: str | os.PathLike[str]) -> dict[str, Path]:
        """Write ``audit.json`` and ``report.html`` into ``folder`` (each atomically)."""
        target = check_folder(folder, "out")
        json_path = atomic_write_text(target / "audit.json", self.to_json(indent=1))
        html_path = self.to_html(target / "report.html")
        umask = os.umask(0)
        os.umask(umask)
        for path in (json_path, html_path):  # readable like any file the user writes (temporary files are 0600)
            os.chmod(path, 0o666 & ~umask)
        return {"json": json_path, "html": html_path}


# --------------------------------------------------------------------------- parts


@dataclasses.dataclass
class PartSpec:
    """A part to run: its identity, what its key fingerprints, and how to compute it.

    ``compute()`` returns an :class:`AuditPart` (without timing or key).
    ``inputs`` must hold everything the answer depends on (model
    fingerprint, data, settings): it is the part's checkpoint key.
    """

    id: str
    instrument: str
    title: str
    inputs: Any
    compute: Callable[[], AuditPart]


def skipped(part_id: str, instrument: str, title: str, reason: str) -> AuditPart:
    """A part that could not run, with the reason."""
    return AuditPart(id=part_id, instrument=instrument, title=title, status="skipped", verdict=reason)


def _revive_part(data: dict[str, Any]) -> AuditPart:
    from fitaudit.report import load_result

    part = load_result(data)
    if not isinstance(part, AuditPart):
        raise InputError(f"stored part has type {type(part).__name__}, not AuditPart.")
    return part


def run_parts(
    specs: Sequence[PartSpec | AuditPart], store: CheckpointStore, *, progress: bool = True
) -> list[AuditPart]:
    """Run (or reuse from ``store``) every part, in order, with a progress bar.

    A finished part is stored under ``store.key(format, id, inputs, code)``
    (``code``: :func:`~fitaudit.checkpoint.code_fingerprint` of ``compute``) as
    soon as it is done; one found there is reused (``resumed=True``) and
    not recomputed. Every part goes through its JSON form, so a fresh part
    and a reused one look the same.
    """
    parts: list[AuditPart] = []
    bar = tqdm(specs, desc="audit", unit="part", disable=not progress, leave=True)
    for spec in bar:
        if isinstance(spec, AuditPart):
            parts.append(spec)
            continue
        bar.set_postfix_str(spec.id)
        key = store.key(_PART_FORMAT, spec.id, spec.inputs, code_fingerprint(spec.compute, within="fitaudit"))
        if store.has(key):
            part = _revive_part(store.load(key))
            part.resumed = True
        else:
            start = time.perf_counter()
            fresh = spec.compute()
            fresh.seconds = time.perf_counter() - start
            fresh.key = key
            part = _revive_part(store.save(key, fresh, part=spec.id))
        parts.append(part)
    return parts


# --------------------------------------------------------------------------- inputs


@dataclasses.dataclass
class Dataset:
    """Arrays of one data set, where they came from, and the canvas margin if it has one."""

    x: np.ndarray
    y: np.ndarray
    source: str
    margin: int | None = None

    def describe(self) -> dict[str, Any]:
        return {"source": self.source, "n": int(len(self.y)), "shape": list(self.x.shape[1:]),
                "margin": self.margin}


def load_data(data: Any, name: str) -> Dataset:
    """``data`` as a :class:`Dataset`: a ``.npz`` path (arrays ``x``, ``y``, optional ``margin``) or ``(x, y)``."""
    from fitaudit.data.io import read_npz, validate_dataset

    if isinstance(data, Dataset):
        return data
    if isinstance(data, (str, os.PathLike)):
        x, y = read_npz(data, name=name)
        with np.load(data, allow_pickle=False) as archive:
            margin = int(archive["margin"]) if "margin" in archive.files and archive["margin"].ndim == 0 else None
        x, y = validate_dataset(x, y, name_x=f"{name}['x']", name_y=f"{name}['y']")
        return Dataset(x, y, os.fspath(data), margin or None)
    if isinstance(data, tuple) and len(data) == 2:
        x, y = validate_dataset(data[0], data[1], name_x=f"{name}[0]", name_y=f"{name}[1]")
        return Dataset(x, y, "arrays")
    raise InputError(f"`{name}` must be a .npz path or a tuple (x, y); got {type(data).__name__}.")


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        h.update(str(file.relative_to(path) if path.is_dir() else file.name).encode())
        h.update(file.read_bytes())
    return h.hexdigest()


def model_fingerprint(model: Any) -> str:
    """Fingerprint of a model's weights: file bytes for a path, else its parameters or state."""
    if isinstance(model, (str, os.PathLike)):
        return "file:" + _file_digest(Path(model))
    from fitaudit.models import is_classifier_adapter

    native = getattr(model, "model", model) if is_classifier_adapter(model) else model
    try:
        return fingerprint(native)
    except InputError as exc:
        raise InputError(
            f"cannot fingerprint `model` ({type(native).__name__}) to key the audit's checkpoints; "
            "pass it as a file path (ONNX, safetensors folder, skops)."
        ) from exc


def _native_name(model: Any) -> str:
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


# --------------------------------------------------------------------------- part builders


def _fmt_p(p: float) -> str:
    return f"{p:.2g}" if p >= 0.001 else f"{p:.1e}"


def overfit_numbers(result: Any) -> dict[str, Any]:
    """Headline numbers of an overfitting test (pairwise test, its interval, the CI test)."""
    interval = result.pairwise.confidence_interval()
    return {
        "error rate R_S": result.error_rate,
        "adversarial risk R_g": result.risk_adversarial,
        "T = R_g - R_S": result.statistic,
        f"{1 - result.delta:.0%} interval of T": [interval.low, interval.high],
        "p-value (pairwise test)": result.pvalue,
        "p-value (interval test)": result.ci.pvalue,
        "examples m": result.m,
        "successful adversarial examples": result.n_success,
    }


def overfit_verdict(result: Any, role: str) -> tuple[str, str]:
    """Status and plain-words verdict of an overfitting test on the ``role`` data (test or train)."""
    p, level = result.pvalue, result.delta
    interval = result.pairwise.confidence_interval()
    sign = "<" if result.reject else ">="
    numbers = (f"p = {_fmt_p(p)} {sign} {level:g}; error rate {result.error_rate:.3f} vs adversarial risk "
               f"{result.risk_adversarial:.3f}, T = R_g - R_S in [{interval.low:.3f}, {interval.high:.3f}]")
    if role == "train":
        if result.reject:
            return "info", (f"Dependent on its training data, as it should be ({numbers}): the error rate "
                            "on these examples is optimistic. The test has power here.")
        return "info", (f"No dependence detected even on its own training data ({numbers}): the model "
                        "generalises well here, or the AEG is too weak to show it.")
    if result.reject:
        return "fail", (f"Not independent of this data ({numbers}): the model was trained or "
                        "tuned on it, so its error rate here underestimates its true risk.")
    return "pass", (f"No evidence that the model was fitted to this data ({numbers}); "
                    "its error rate here can be read as a risk estimate.")


def overfit_part(
    part_id: str,
    title: str,
    model: Any,
    model_key: str,
    data: Dataset,
    aeg: Any,
    *,
    role: str,
    delta: float = 0.05,
) -> PartSpec:
    """The overfitting test (Werpachowski et al. 2019) of ``model`` on ``data`` with ``aeg``."""

    def compute() -> AuditPart:
        from fitaudit.overfit import overfit_test

        result = overfit_test(model, data.x, data.y, aeg, delta=delta)
        status, verdict = overfit_verdict(result, role)
        return AuditPart(
            id=part_id, instrument="overfit", title=title, status=status, verdict=verdict,
            numbers=overfit_numbers(result), result=result,
            settings={"aeg": repr(aeg), "delta": delta, "data": data.describe(), "role": role,
                      "label": "training data" if role == "train" else "scored data"},
        )

    return PartSpec(part_id, "overfit", title, (model_key, data.x, data.y, aeg, delta, role), compute)


def nmodel_part(models: Sequence[Any], model_keys: list[str], data: Dataset, aeg: Any, *,
                delta: float = 0.05) -> PartSpec:
    """The N-model test on several trained runs of the same procedure."""

    def compute() -> AuditPart:
        from fitaudit.overfit import n_model_test

        result = n_model_test(models, data.x, data.y, aeg, delta=delta)
        status, verdict = overfit_verdict_nmodel(result)
        return AuditPart(
            id="overfit-nmodel", instrument="overfit", title=f"N-model test over {len(models)} runs",
            status=status, verdict=verdict,
            numbers={"p-value p_N": result.pvalue, "Tbar": result.statistic, "runs N": result.n_models,
                     "smallest per-run p-value": min(r["pvalue"] for r in result.per_model)},
            result=result, settings={"aeg": repr(aeg), "delta": delta, "data": data.describe()},
        )

    return PartSpec("overfit-nmodel", "overfit", "N-model test", (model_keys, data.x, data.y, aeg, delta), compute)


def overfit_verdict_nmodel(result: Any) -> tuple[str, str]:
    """Status and verdict of the N-model test."""
    text = f"p_N = {_fmt_p(result.pvalue)} over {result.n_models} runs, Tbar = {result.statistic:.3f}"
    if result.reject:
        return "fail", f"The training procedure depends on this data ({text} < {result.delta:g})."
    return "pass", f"No evidence that the runs were fitted to this data ({text} >= {result.delta:g})."


def pmv_verdict(result: Any, threshold: float) -> tuple[str, str]:
    """Status and verdict of a PMV score: |k_S| >= ``threshold`` is a good fit."""
    first, last = float(result.mean_accuracy[0]), float(result.mean_accuracy[-1])
    numbers = (f"|k_S| = {result.score:.3f}; training accuracy {first:.3f} on the clean labels, "
               f"{last:.3f} with {float(result.rates[-1]):.0%} flipped")
    if result.score >= threshold:
        return "pass", f"The learner's capacity fits the data ({numbers}; >= {threshold:g} counts as a good fit)."
    if first >= 0.9 and last >= 0.9:
        return "fail", f"The learner memorises label noise: it overfits ({numbers}; below {threshold:g})."
    return "fail", f"The learner cannot follow the labels: it underfits or the signal is weak ({numbers}; below {threshold:g})."


def pmv_part(learner: Any, learner_key: str, data: Dataset, *, threshold: float = PMV_THRESHOLD,
             random_state: int | None, n_jobs: int | None, checkpoint_dir: Path, progress: bool,
             part_id: str = "pmv", title: str = "Perturbed model validation of the learner") -> PartSpec:
    """PMV (Zhang et al. 2019) of a scikit-learn learner on the training data.

    ``threshold``: |k_S| below it fails. PMV itself ranks learners (the
    paper gives no absolute line); this one is fitaudit's convention. A
    learner that ignores flipped labels and is right on a fraction a of the
    clean ones has accuracy about (1 - r) a + r (1 - a) on S_r, so
    |k_S| = 2a - 1: 1 on separable data, about 0.5-0.7 on noisy data such
    as ``make_moons(300, noise=0.3)`` (measured in ``fitaudit demo``:
    logistic regression 0.63, RBF SVM 0.73, a depth-4 tree 0.69; with 200
    points 0.61, 0.55, 0.46); one that memorises every label keeps accuracy
    1 (|k_S| = 0; measured: an unbounded tree, 0.000). 0.3 sits between.
    """

    def compute() -> AuditPart:
        from fitaudit.pmv import pmv_score

        x = data.x.reshape(len(data.x), -1)
        result = pmv_score(learner, x, data.y, random_state=random_state, n_jobs=n_jobs,
                           progress=progress, checkpoint_dir=checkpoint_dir)
        status, verdict = pmv_verdict(result, threshold)
        return AuditPart(
            id=part_id, instrument="pmv", title=title, status=status, verdict=verdict,
            numbers={"PMV score |k_S|": result.score, "slope k_S": result.slope,
                     "training accuracy at r = 0": float(result.mean_accuracy[0]),
                     f"risk bound (delta = {result.delta:g})": result.bound, "training examples m": result.n_samples},
            result=result,
            settings={"threshold": threshold, "random_state": random_state, "estimator": result.estimator,
                      "data": data.describe()},
        )

    return PartSpec(part_id, "pmv", title, (learner_key, data.x, data.y, threshold, random_state), compute)


#: default largest drop from average to worst-case accuracy that still passes the examination
EXAMINE_TOLERANCE = 0.2


def _failures(log: dict[str, Any]) -> np.ndarray:
    return np.asarray(log["predicted"]) != np.asarray(log["label"])


def examination_numbers(result: Any) -> dict[str, Any]:
    """Average accuracy (uniform random factors) vs worst-case accuracy (what the examiner found)."""
    wrong = _failures(result.queries)
    instance = np.asarray(result.queries["instance"])
    broken = {int(i) for i in np.unique(instance[wrong])}
    worst = 1.0 - len(broken) / len(result.instances)
    average = 1.0 - float(np.mean(_failures(result.reference_queries))) if result.reference_queries else None
    numbers: dict[str, Any] = {
        "average accuracy (random factors)": average,
        "worst-case accuracy (examined)": worst,
        f"mean true-class probability at T = {result.steps}": result.mean_final_true_class_probability,
        "mean worst true-class probability": float(np.mean(result.min_true_class_probability)),
        "instances": len(result.instances),
        "model queries": result.n_model_queries,
    }
    weakness = result.weakness
    if weakness is not None and weakness.concentration:
        factor, value = next(iter(weakness.concentration.items()))
        numbers["factor where failures concentrate"] = f"{factor} (TV {value:.2f})"
    return numbers


def examination_verdict(result: Any, numbers: dict[str, Any], tolerance: float) -> tuple[str, str]:
    """Status and verdict: fail when worst-case accuracy is more than ``tolerance`` below average."""
    average, worst = numbers["average accuracy (random factors)"], numbers["worst-case accuracy (examined)"]
    rules = result.weakness.rules if result.weakness is not None else []
    where = f" Failures concentrate where {rules[0]['text']} ({rules[0]['precision']:.0%} wrong there)." if rules else ""
    text = (f"worst-case accuracy {worst:.2f} over the factors against {average:.2f} on random factors "
            f"({result.examiner} examiner, T = {result.steps}, {result.n_model_queries} queries).")
    if average is not None and average - worst > tolerance:
        return "fail", f"The average hides weak spots: {text}{where}"
    return "pass", f"No weak spot beyond {tolerance:g} accuracy: {text}{where}"


def examination_images(result: Any, generator: Any, limit: int = 12) -> list[dict[str, Any]]:
    """The worst input found for the first ``limit`` instances, as PNG data URIs with captions."""
    from fitaudit.report.html import image_uri

    order = np.argsort(result.min_true_class_probability)[:limit]
    pictures = result.extreme_inputs(generator)
    names = result.class_names or [str(c) for c in range(int(np.max(result.labels)) + 1)]
    columns = {name: i for i, name in enumerate(result.factor_names)}
    images = []
    for i in order:
        detail = ", ".join(f"{k.split('_')[-1]} {result.extreme_factors[i, columns[k]]:.0f}"
                           for k in ("camera_elevation", "camera_distance") if k in columns)
        images.append({
            "caption": f"{names[int(result.labels[i])]}: p(true) {result.min_true_class_probability[i]:.2f}"
                       + (f"; {detail}" if detail else ""),
            "uri": image_uri(pictures[i]) if np.asarray(pictures[i]).ndim == 3 else None,
        })
    return [image for image in images if image["uri"] is not None]


def examination_part(result: Any, generator: Any, *, tolerance: float, part_id: str = "examine",
                     title: str = "Adversarial examination over the input factors",
                     settings: dict[str, Any] | None = None, queries_path: Path | None = None) -> AuditPart:
    """An :class:`AuditPart` from an examination; its query logs go to ``queries_path`` (not the JSON)."""
    numbers = examination_numbers(result)
    status, verdict = examination_verdict(result, numbers, tolerance)
    images = examination_images(result, generator)
    if queries_path is not None:
        result.save_queries(queries_path)
    result.queries, result.reference_queries = {}, {}
    return AuditPart(
        id=part_id, instrument="examine", title=title, status=status, verdict=verdict, numbers=numbers,
        result=result, images=images,
        settings={"tolerance": tolerance, "examiner": result.examiner, "steps": result.steps,
                  "random_state": result.random_state, "queries": str(queries_path) if queries_path else None,
                  **(settings or {})},
    )


def examine_part(model: Any, model_key: str, generator: Any, *, examiner: str = "bo", steps: int = 30,
                 instances: int | None = None, tolerance: float = EXAMINE_TOLERANCE, random_state: Any,
                 n_jobs: int | None, folder: Path, progress: bool) -> PartSpec:
    """The adversarial examiner (Shu et al. 2020) of ``model`` over ``generator``'s factors."""
    inputs = (model_key, generator, examiner, steps, instances, tolerance, random_state)
    key = CheckpointStore.key("examine", inputs)

    def compute() -> AuditPart:
        from fitaudit.examine import examine

        result = examine(model, generator, examiner=examiner, steps=steps, instances=instances,
                         random_state=random_state, n_jobs=n_jobs, checkpoint_dir=folder / "examine" / key,
                         progress=progress)
        return examination_part(result, generator, tolerance=tolerance,
                                queries_path=folder / "examine" / f"{key}-queries.npz")

    return PartSpec("examine", "examine", "Adversarial examination", inputs, compute)


#: measures ranked by default on a population of models: the strong and weak baselines and cheap norms
PGDL_MEASURES = ("noisy_gap", "inverse_margin", "distance_from_init", "log_spec_product", "parameter_count", "vc_dim")


def leaderboard_part(board: Any, *, part_id: str = "pgdl",
                     title: str = "Generalization measures on a population of models",
                     settings: dict[str, Any] | None = None) -> AuditPart:
    """An :class:`AuditPart` from a PGDL leaderboard: which measures predict the generalization gap."""
    rows = board.rows
    best = rows[0]
    ranks = {row["measure"]: i + 1 for i, row in enumerate(rows)}

    def score(row: dict[str, Any]) -> str:
        final = "n/a" if row["final_score"] is None else f"{row['final_score']:.1f}"
        tau = "n/a" if row["kendall"] is None else f"{row['kendall']:.2f}"
        return f"{row['measure']} (score {final}, Kendall tau {tau})"

    verdict = (f"Best predictor of the generalization gap over {len(board.task_scores[0].scores[0].values)} models: "
               f"{score(best)}; last: {score(rows[-1])}. Scores are 100 x the official conditional mutual "
               "information of the PGDL competition.")
    numbers: dict[str, Any] = {f"#{ranks[row['measure']]} {row['measure']}": row["final_score"] for row in rows}
    return AuditPart(id=part_id, instrument="pgdl", title=title, status="info", verdict=verdict, numbers=numbers,
                     result=board, settings={"ranks": ranks, **(settings or {})})


def pgdl_part(task: Any, *, measures: Sequence[str] = PGDL_MEASURES, random_state: Any, n_jobs: int | None,
              folder: Path, progress: bool) -> PartSpec:
    """The PGDL leaderboard of ``measures`` on a task (Jiang et al. 2020)."""
    from fitaudit.pgdl.harness import as_task
    from fitaudit.pgdl.harness import task_model_fingerprint

    loaded = as_task(task)
    models = [task_model_fingerprint(loaded, str(i)) for i in loaded.model_ids]
    inputs = (models, list(measures), random_state)

    def compute() -> AuditPart:
        from fitaudit.pgdl.leaderboard import leaderboard

        board = leaderboard(loaded, list(measures), budget_s=None, random_state=random_state,
                            checkpoint_dir=folder / "pgdl-scores", n_jobs=n_jobs, progress=progress)
        return leaderboard_part(board, settings={"task": str(task), "measures": list(measures)})

    return PartSpec("pgdl", "pgdl", "Generalization measures", inputs, compute)


# --------------------------------------------------------------------------- environment


def environment() -> dict[str, Any]:
    """Versions and platform, for the report's evidence."""
    from fitaudit import __version__

    versions = {"fitaudit": __version__, "python": platform.python_version()}
    for name in ("numpy", "scipy", "sklearn", "torch", "onnxruntime", "dask"):
        module = sys.modules.get(name)
        if module is not None:
            versions[name] = str(getattr(module, "__version__", "?"))
    return {"versions": versions, "platform": platform.platform(), "cpus": os.cpu_count()}


@contextlib.contextmanager
def compute_backend(dask_scheduler: Any = None) -> Iterator[Any]:
    """Run joblib work locally, or on the Dask cluster at ``dask_scheduler`` (an address or a Client).

    Inside, every :func:`fitaudit.parallel.parallel_map` (N-model retraining,
    PMV fits, examiner instances, zoo training) runs on the cluster through
    ``joblib.parallel_config(backend="dask")``.
    """
    if dask_scheduler is None:
        yield None
        return
    import joblib

    from fitaudit._optional import import_optional

    distributed = import_optional("distributed", "running an audit on a Dask cluster")
    if isinstance(dask_scheduler, distributed.Client):
        with joblib.parallel_config(backend="dask"):
            yield dask_scheduler
        return
    if not isinstance(dask_scheduler, str):
        raise InputError(f"`dask_scheduler` must be an address such as 'tcp://host:8786'; got {type(dask_scheduler).__name__}.")
    try:
        client = distributed.Client(dask_scheduler, timeout="20s")
    except OSError as exc:
        raise InputError(f"`dask_scheduler`: cannot reach a Dask scheduler at {dask_scheduler!r} ({exc}).") from exc
    with client, joblib.parallel_config(backend="dask"):
        yield client


# --------------------------------------------------------------------------- audit


def _default_aeg(data: Dataset, margin: int | None, eps: int | None, random_state: Any) -> tuple[Any, str | None]:
    """A translational AEG when ``data`` holds image canvases with a margin; else (None, why)."""
    margin = margin if margin is not None else data.margin
    if data.x.ndim != 4:
        return None, ("no AEG applies to these data: the built-in one (translations) needs images on "
                      "canvases with a spare margin; pass `aeg=` in Python for other data.")
    if not margin:
        return None, ("the data are images without a spare margin: the translational AEG needs canvases "
                      "(m, C, H + 2P, W + 2P) and `margin` P (an array `margin` in the .npz or --margin).")
    from fitaudit.overfit import TranslationAEG

    step = eps if eps is not None else max(1, min(2, margin // 3))
    return TranslationAEG(eps=step, margin=margin, variant="strongest", random_state=random_state), None


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
    random_state: int | None = 0,
    progress: bool = True,
    title: str | None = None,
) -> AuditResult:
    """Audit ``model``: run every instrument that applies, write ``audit.json`` and ``report.html``.

    Parameters
    ----------
    model : path or model
        ONNX file, torch safetensors + config folder, ``.skops`` file, or a
        model object (see :func:`fitaudit.models.as_classifier`).
    data : path or (x, y)
        The data the model is scored on (its test set): ``.npz`` with ``x``
        and ``y`` (and ``margin`` for canvases), or arrays.
    train_data : path or (x, y), optional
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
    random_state : int or None
    progress : bool
        Progress bars on stderr.
    title : str, optional

    Returns
    -------
    AuditResult
    """
    start = time.perf_counter()
    folder = check_folder(out, "out")
    delta = check_float(delta, "delta", low=0.0, high=0.5, low_inclusive=False, high_inclusive=False)
    pmv_threshold = check_float(pmv_threshold, "pmv_threshold", low=0.0)
    if n_jobs is not None:
        n_jobs = check_int(n_jobs, "n_jobs")
    chosen = _check_instruments(instruments)
    from fitaudit.models import as_classifier

    if data is None:
        raise InputError("`data` is required: the data the model is scored on (.npz with x and y, or (x, y)).")
    adapter = as_classifier(model)
    model_key = model_fingerprint(model)
    test = load_data(data, "data")
    train = load_data(train_data, "train_data") if train_data is not None else None
    if aeg is None:
        aeg, no_aeg = _default_aeg(test, margin, eps, random_state)
    else:
        no_aeg = None
    subject = {"model": _native_name(model), "model_kind": getattr(adapter, "kind", type(adapter).__name__), "n_classes": adapter.n_classes,
               "data": test.describe(), "train_data": train.describe() if train else None}
    inputs_of = aeg.model_inputs if aeg is not None else (lambda x: x)
    subject["accuracy"] = accuracy_of(adapter, inputs_of(test.x), test.y, "data")
    if train is not None:
        subject["train_accuracy"] = accuracy_of(adapter, inputs_of(train.x), train.y, "train_data")
    store = CheckpointStore(folder / "parts")
    specs: list[PartSpec | AuditPart] = []
    wanted = {name: (chosen is None or name in chosen) for name in INSTRUMENTS}

    def need(instrument: str, reason: str) -> None:
        if chosen is not None and instrument in chosen:
            raise InputError(f"`instruments` asks for {instrument}, but {reason}")

    if wanted["overfit"]:
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
                runs = [adapter, *(as_classifier(m) for m in models)]
                keys = [model_key, *(model_fingerprint(m) for m in models)]
                specs.append(nmodel_part(runs, keys, test, aeg, delta=delta))
    if wanted["examine"]:
        specs.append(_examine_spec(adapter, model_key, generator, need, examiner, examine_steps, random_state,
                                   n_jobs, folder, progress))
    if wanted["pgdl"]:
        specs.append(_pgdl_spec(task, need, random_state, n_jobs, folder, progress))
    if wanted["pmv"]:
        learner = learner if learner is not None else _sklearn_learner(adapter)
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
    settings = {"delta": delta, "pmv_threshold": pmv_threshold, "aeg": repr(aeg) if aeg is not None else None,
                "examiner": examiner, "examine_steps": examine_steps, "task": str(task) if task is not None else None,
                "instruments": list(chosen) if chosen else list(INSTRUMENTS), "n_jobs": n_jobs,
                "dask_scheduler": str(dask_scheduler) if dask_scheduler is not None else None, "out": str(folder)}
    with compute_backend(dask_scheduler):
        parts = run_parts(specs, store, progress=progress)
    result = AuditResult(
        title=title or f"Audit of {Path(os.fspath(model)).name if isinstance(model, (str, os.PathLike)) else type(getattr(adapter, 'model', adapter)).__name__}",
        subject=subject, parts=parts, settings=settings, environment=environment(),
        random_state=random_state, seconds=time.perf_counter() - start,
        created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )
    result.save(folder)
    return result


def _check_instruments(instruments: Sequence[str] | None) -> tuple[str, ...] | None:
    if instruments is None:
        return None
    names = [instruments] if isinstance(instruments, str) else list(instruments)
    unknown = [n for n in names if n not in INSTRUMENTS]
    if unknown or not names:
        raise InputError(f"`instruments` must name some of {', '.join(INSTRUMENTS)}; got {names!r}.")
    return tuple(names)


def _sklearn_learner(adapter: Any) -> Any:
    return adapter.model if getattr(adapter, "kind", None) == "sklearn" else None


def _examine_spec(adapter: Any, model_key: str, generator: Any, need: Callable[[str, str], None], examiner: str,
                  steps: int, random_state: Any, n_jobs: Any, folder: Path, progress: bool) -> PartSpec | AuditPart:
    title = "Adversarial examination over the input factors"
    if generator is None:
        reason = "the examiner needs a generator of inputs from factors (`generator=`, e.g. ShapesGenerator)."
        need("examine", reason)
        return skipped("examine", "examine", title, reason)
    return examine_part(adapter, model_key, generator, examiner=examiner, steps=steps, random_state=random_state,
                        n_jobs=n_jobs, folder=folder, progress=progress)


def _pgdl_spec(task: Any, need: Callable[[str, str], None], random_state: Any, n_jobs: Any,
               folder: Path, progress: bool) -> PartSpec | AuditPart:
    title = "Generalization measures on a population of models"
    if task is None:
        reason = "the generalization measures need a population of trained models (`task=`: a PGDL task folder)."
        need("pgdl", reason)
        return skipped("pgdl", "pgdl", title, reason)
    return pgdl_part(task, random_state=random_state, n_jobs=n_jobs, folder=folder, progress=progress)


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`audit` (so ``fitaudit.audit(...)`` works after any import)."""

    def __call__(self, *args: Any, **kwargs: Any) -> AuditResult:
        return audit(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
