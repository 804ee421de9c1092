"""What ``fitaudit overfit`` reports, and the checks on the runs it is given.

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 3 and 5: one model's
pairwise and confidence-interval tests, or the N-model test (Test C) over
several training runs of one procedure on one data set.

* :class:`OverfitCommandResult` and :class:`ModelRun` -- the result of the
  command (and of :func:`fitaudit.overfit.images.overfit_test_images` as the
  command runs it), with the data source and the evaluation pipeline;
* :func:`model_runs` -- per-model numbers from the core's result;
* :func:`check_distinct_runs` -- the same weights given twice are refused
  (an N-model test of identical runs would count one run N times);
* :func:`training_data_notes` -- runs trained on different data are
  refused, runs whose files do not say give a note.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from fitaudit._errors import InputError
from fitaudit.overfit.decision import command_contradiction, command_verdict
from fitaudit.overfit.nmodel import NModelTestResult
from fitaudit.overfit.one_model import OverfitTestResult
from fitaudit.results import Result
from fitaudit.verdict import Verdict


@dataclasses.dataclass(repr=False)
class ModelRun:
    """One model's numbers in ``fitaudit overfit``.

    Attributes
    ----------
    model : str
        The model file.
    risk_plain : float
        R_S, the zero-one risk on the centre crops.
    risk_adversarial : float
        R_g = mean of L(f, g(X_i)) h_g(g(X_i)).
    success_rate : float
        Share of examples with a successful adversarial translation.
    pvalue : float
        p-value of the pairwise test (Test B) for this model alone.
    ci_pvalue : float
        p-value of the confidence-interval test (Test A) for this model alone.
    evaluations_per_example : float
        Images scored per example by the AEG.
    """

    model: str
    risk_plain: float
    risk_adversarial: float
    success_rate: float
    pvalue: float
    ci_pvalue: float
    evaluations_per_example: float


@dataclasses.dataclass(repr=False)
class OverfitCommandResult(Result):
    """What ``fitaudit overfit`` reports.

    Attributes
    ----------
    pvalue : float
        p-value of the pairwise test, of the N-model test when several
        models are given.
    reject : bool
        ``pvalue < delta``.
    test : OverfitTestResult or NModelTestResult
        The core's result: :func:`~fitaudit.overfit.one_model.overfit_test` for
        one model, :func:`~fitaudit.overfit.nmodel.n_model_test` (Test C on
        Tbar_i = (1/N) sum_j T_{i, g_j}(f_j)) for several.
    runs : list of ModelRun
        Per-model error rate and p-values (picking the best of several seeds
        shows up here).
    variant, eps, margin, m, n_models : the AEG, the sample size, N.
    warning : str
        The (G3) validity condition and where it fails.
    notes : list of str
        What could not be checked (e.g. whether several runs share their
        training data, when their files do not say).
    source : str
        The scored data: the canvas archive, image folder or CSV.
    pipeline : dict or None
        The evaluation pipeline the images went through
        (:meth:`fitaudit.data.pipeline.EvalPipeline.to_dict`); None for canvases.
    broken : list of str
        Image files left out (``--skip-broken``), with the reason.
    pipeline_choice : dict or None
        Which pipeline (or normalisation of the canvases) was used, the one
        the model records and the first model's accuracy under each
        (:meth:`fitaudit.data.pipeline_rule.PipelineChoice.to_dict`).
    inference : dict or None
        How the first model ran (:func:`fitaudit.models.inference.run_record`:
        device, backend, mode, precision and, for reduced precision, its
        measured disagreement with fp32); None for a model without an
        inference path or one run only in worker processes.
    control : OverfitTestResult or None
        The same test on the model's training data (``--train-data``,
        ``--train-images``), the control of the test's power as in the audit
        (:func:`fitaudit.overfit.decision.command_verdict`); None when not given.
    control_source : str
        Where the training data came from.
    stride : int
        Pixels per step of the AEG's shifts (``--stride``; 1: the paper's ``V_eps``).
    mirror : bool
        Whether the AEG also tried the mirror image of every shift (``--mirror``,
        :class:`~fitaudit.overfit.mirror.MirrorTranslationAEG`).
    """

    pvalue: float
    reject: bool
    test: OverfitTestResult | NModelTestResult
    runs: list[ModelRun]
    variant: str
    eps: int
    margin: int
    m: int
    n_models: int
    warning: str
    notes: list[str] = dataclasses.field(default_factory=list)
    source: str = ""
    pipeline: dict[str, Any] | None = None
    broken: list[str] = dataclasses.field(default_factory=list)
    pipeline_choice: dict[str, Any] | None = None
    inference: dict[str, Any] | None = None
    control: OverfitTestResult | None = None
    control_source: str = ""
    stride: int = 1
    mirror: bool = False

    def _summary_fields(self) -> list[str]:
        return ["pvalue", "reject", "variant", "eps", "stride", "mirror", "margin", "m", "n_models"]

    def verdict(self, **context: Any) -> Verdict:
        """The decision of the test the command ran, read with its control and pipeline
        (:func:`fitaudit.overfit.decision.command_verdict`)."""
        return command_verdict(self, **context)

    def contradiction(self) -> str | None:
        """Where the headline disagrees with the test (:func:`fitaudit.overfit.decision.command_contradiction`)."""
        return command_contradiction(self)


def model_runs(paths: list[str], test: OverfitTestResult | NModelTestResult) -> list[ModelRun]:
    """Per-model numbers from the core's result (one model, or the N-model test's runs)."""
    if isinstance(test, OverfitTestResult):
        entries = [
            {
                "risk_plain": test.risk_plain,
                "risk_adversarial": test.risk_adversarial,
                "pvalue": test.pvalue,
                "ci_pvalue": test.ci.pvalue,
                "n_success": test.n_success,
                "evaluations": test.evaluations,
            }
        ]
    else:
        entries = test.per_model
    return [
        ModelRun(
            model=str(path),
            risk_plain=float(entry["risk_plain"]),
            risk_adversarial=float(entry["risk_adversarial"]),
            success_rate=entry["n_success"] / test.m,
            pvalue=float(entry["pvalue"]),
            ci_pvalue=float(entry["ci_pvalue"]),
            evaluations_per_example=entry["evaluations"] / test.m,
        )
        for path, entry in zip(paths, entries)
    ]


def check_distinct_runs(paths: Sequence[Any], *, option: str = "--models") -> None:
    """Refuse models with the same weights (:func:`fitaudit.models.fingerprint.model_fingerprint`: a file's bytes).

    The N-model test averages N independent training runs, and the
    agreement between runs compares two: the same file (or a copy) twice is
    one run counted twice. ``paths`` are model files or in-memory models.
    """
    from fitaudit.models.fingerprint import model_fingerprint, run_digest

    seen: dict[str, str] = {}
    for i, path in enumerate(paths):
        if isinstance(path, (str, os.PathLike)) and os.path.exists(path):  # a copy under another name too
            key = run_digest(path)  # a folder's config.json read as JSON: a space does not make a new run
        else:  # an in-memory model
            key = model_fingerprint(path)
        shown = repr(os.fspath(path)) if isinstance(path, (str, os.PathLike)) else f"model {i} ({type(path).__name__})"
        if key in seen:
            raise InputError(
                f"`{option}`: {shown} has the same weights as {seen[key]}; the N-model test and the agreement "
                "between runs need different training runs (e.g. other seeds), not the same model twice."
            )
        seen[key] = shown


def training_data_notes(paths: Sequence[str | os.PathLike[str]], *, option: str = "--models") -> list[str]:
    """Check that several runs were trained on the same data, from the data fingerprint their files record.

    The fingerprint is read with :func:`fitaudit.models.io.read_model_metadata`
    (``data_fingerprint`` in a torch folder's ``config.json`` -- written by
    ``fitaudit shapes train`` -- or in an ONNX file's metadata). Runs with
    different fingerprints are an error (the N-model test averages runs of one
    training procedure on one data set); runs whose files do not say give a note.
    """
    from fitaudit.models.io import read_model_metadata

    fingerprints: dict[str, str] = {}
    unknown = []
    for path in [str(p) for p in paths]:
        value = read_model_metadata(path, name=option).data_fingerprint
        if value is None:
            unknown.append(path)
        else:
            fingerprints[path] = value
    if len(set(fingerprints.values())) > 1:
        listing = ", ".join(f"{path} (data {value})" for path, value in fingerprints.items())
        raise InputError(
            f"`{option}`: the N-model test needs runs of one training procedure on the same training "
            f"data, but these models were trained on different data: {listing}. Train them on the "
            "same data (fitaudit shapes train: the same --data-seed) with different seeds."
        )
    if unknown:
        return [
            "could not check that the runs share their training data: no data fingerprint in "
            + ", ".join(unknown)
        ]
    return []
