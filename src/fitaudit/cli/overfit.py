"""``fitaudit overfit``: is an image classifier independent of the dataset it is scored on?

Werpachowski, Gyorgy, Szepesvari, NeurIPS 2019, Sec. 3 and 5: the pairwise
test (Test B) with a translational AEG, the confidence-interval test (Test A)
for comparison, and, with ``--models``, the N-model test (Test C) over
several training runs of the same procedure on the same data.

Data: a ``.npz`` archive with ``x``, canvases of shape
``(m, C, H + 2P, W + 2P)`` in [0, 1] (channels first) whose centre
``H x W`` crops are the images the model classifies, ``P`` = ``--margin``
spare pixels per side, and ``y``, integer labels. The model files are read
with :func:`fitaudit.models.load_model` (ONNX, safetensors + config folder,
skops; never pickle).

The test is valid only under (G3), translation-invariant image densities;
not for centred datasets such as MNIST or CIFAR-10.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from fitaudit._errors import InputError
from fitaudit._validation import check_float, check_int, check_labels
from fitaudit.cli._common import USER_GUIDE, add_seed, data_file, pvalue_text, table
from fitaudit.overfit.one_model import OverfitTestResult, overfit_test
from fitaudit.overfit.nmodel import NModelTestResult, n_model_test
from fitaudit.overfit.translation import DENSITY_WARNING, VARIANTS, TranslationAEG
from fitaudit.results import Result


@dataclasses.dataclass(repr=False)
class ModelRun:
    """One model's numbers in ``fitaudit overfit``.

    Attributes
    ----------
    model : str
        The model file.
    error_rate : float
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
    error_rate: float
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
        The (G3) validity condition.
    notes : list of str
        What could not be checked (e.g. whether several runs share their
        training data, when their files do not say).
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

    def _summary_fields(self) -> list[str]:
        return ["pvalue", "reject", "variant", "eps", "margin", "m", "n_models"]


def model_runs(paths: list[str], test: OverfitTestResult | NModelTestResult) -> list[ModelRun]:
    """Per-model numbers from the core's result (one model, or the N-model test's runs)."""
    if isinstance(test, OverfitTestResult):
        entries = [
            {
                "error_rate": test.error_rate,
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
            error_rate=float(entry["error_rate"]),
            risk_adversarial=float(entry["risk_adversarial"]),
            success_rate=entry["n_success"] / test.m,
            pvalue=float(entry["pvalue"]),
            ci_pvalue=float(entry["ci_pvalue"]),
            evaluations_per_example=entry["evaluations"] / test.m,
        )
        for path, entry in zip(paths, entries)
    ]


def check_margin(eps: int, margin: int) -> None:
    """``--margin`` leaves room for shifts up to 3 eps (h_g looks that far)."""
    eps = check_int(eps, "--eps", minimum=1)
    margin = check_int(margin, "--margin", minimum=0)
    if margin >= 3 * eps:
        return
    advice = (
        f"use --eps {margin // 3} or canvases with a larger margin"
        if margin >= 3
        else "the canvases need at least 3 spare pixels per side even for --eps 1"
    )
    raise InputError(
        f"`--margin` must be at least 3 * `--eps` = {3 * eps} spare pixels per side; got {margin} ({advice})."
    )


def training_data_notes(paths: list[str]) -> list[str]:
    """Check that several runs were trained on the same data, from their ``config.json`` metadata.

    ``fitaudit shapes train`` stores a fingerprint of the training set as
    ``metadata.data_fingerprint``. Runs with different fingerprints are an
    error (the N-model test averages runs of one training procedure on one
    data set); runs whose files do not say give a note.
    """
    from fitaudit.models.io import read_torch_config

    fingerprints: dict[str, str] = {}
    unknown = []
    for path in paths:
        try:
            metadata = read_torch_config(path, name="--models").get("metadata") or {}
        except InputError:  # not a torch folder (ONNX, skops): its file does not record its data
            metadata = {}
        value = metadata.get("data_fingerprint") if isinstance(metadata, dict) else None
        if isinstance(value, str):
            fingerprints[path] = value
        else:
            unknown.append(path)
    if len(set(fingerprints.values())) > 1:
        listing = ", ".join(f"{path} (data {value})" for path, value in fingerprints.items())
        raise InputError(
            "`--models`: the N-model test needs runs of one training procedure on the same training "
            f"data, but these models were trained on different data: {listing}. Train them with the "
            "same --data-seed (fitaudit shapes train) and different --seed."
        )
    if unknown:
        return [
            "could not check that the runs share their training data: no data fingerprint in "
            + ", ".join(unknown)
        ]
    return []


def run_overfit_command(args: argparse.Namespace) -> OverfitCommandResult:
    """Handler of ``fitaudit overfit``."""
    from fitaudit.data.io import load_npz
    from fitaudit.models import load_model

    delta = check_float(args.delta, "--delta", low=0.0, high=0.5, low_inclusive=False, high_inclusive=False)
    check_margin(args.eps, args.margin)
    aeg = TranslationAEG(
        eps=args.eps,
        margin=args.margin,
        variant=args.variant,
        batch_size=args.batch_size,
        progress=not args.quiet,
        random_state=args.seed,
    )
    paths = [str(args.model), *(str(p) for p in args.models or [])]
    notes = training_data_notes(paths) if len(paths) > 1 else []
    models = [
        load_model(
            path,
            trust_torchscript=args.trust_torchscript,
            batch_size=args.batch_size,
            device=args.device,
            name="--model" if i == 0 else "--models",
        )
        for i, path in enumerate(paths)
    ]
    canvases, y = load_npz(data_file(args.data), image=True, name="--data")
    probe = aeg.model_inputs(canvases[:1])
    for path, model in zip(paths, models):
        try:
            model.logits(probe)  # also makes n_classes known for models that do not declare it
        except InputError as exc:
            raise InputError(
                f"`--margin` {aeg.margin} makes the images {probe.shape[2]}x{probe.shape[3]} "
                f"crops of the canvases, and model {path} refuses them ({exc})"
            ) from exc
        check_labels(y, f"--data['y'] for model {path}", n_classes=model.n_classes)
    test: OverfitTestResult | NModelTestResult
    if len(models) == 1:
        test = overfit_test(models[0], canvases, y, aeg, delta=delta)
    else:
        test = n_model_test(models, canvases, y, aeg, delta=delta)
    return OverfitCommandResult(
        pvalue=test.pvalue,
        reject=test.reject,
        test=test,
        runs=model_runs(paths, test),
        variant=aeg.variant,
        eps=aeg.eps,
        margin=aeg.margin,
        m=len(y),
        n_models=len(models),
        warning=DENSITY_WARNING,
        notes=notes,
    )


def summary(result: OverfitCommandResult) -> str:
    """Verdict, the per-model numbers and the validity condition."""
    delta = result.test.delta
    what = "the model" if result.n_models == 1 else f"the {result.n_models} runs (N-model test)"
    if result.reject:
        verdict = (
            f"Rejected: {what} is not independent of this data ({pvalue_text(result.pvalue)} < "
            f"delta = {delta:g}); it was probably trained or tuned on it, so its error rate here "
            "is optimistic."
        )
    else:
        verdict = (
            f"Not rejected: no evidence that {what} depends on this data "
            f"({pvalue_text(result.pvalue)} >= delta = {delta:g}, m = {result.m})."
        )
    rows = [
        [
            run.model, f"{run.error_rate:.4f}", f"{run.risk_adversarial:.4f}", f"{run.success_rate:.3f}",
            f"{run.pvalue:.3g}", f"{run.ci_pvalue:.3g}",
        ]
        for run in result.runs
    ]
    lines = [
        verdict,
        "",
        f"Translational AEG {result.variant!r}, eps = {result.eps}, margin = {result.margin}, "
        f"{result.runs[0].evaluations_per_example:.0f} model evaluations per example:",
        table(rows, ["model", "error R_S", "adv. R_g", "success", "pairwise p", "CI p"]),
        "",
        f"Valid only if shifting an image keeps its density (G3); see {USER_GUIDE}.",
    ]
    lines += [f"Note: {note}." for note in result.notes]
    return "\n".join(lines)


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit overfit`` to the command line."""
    parser = subparsers.add_parser(
        "overfit",
        parents=parents,
        help="test whether an image classifier is independent of its test set",
        description=(
            "Overfitting test of Werpachowski et al. (NeurIPS 2019) with translational "
            "adversarial examples. --data holds canvases x of shape (m, C, H+2P, W+2P) in [0, 1] "
            "whose centre HxW crops are the images, and labels y. " + DENSITY_WARNING
            + f" How to read the numbers: {USER_GUIDE}."
        ),
    )
    parser.add_argument(
        "--model", required=True, help="model file: .onnx, safetensors + config.json folder, or .skops"
    )
    parser.add_argument(
        "--data", required=True, help=".npz with canvases x of shape (m, C, H+2P, W+2P) and labels y"
    )
    parser.add_argument("--eps", type=int, required=True, help="largest shift in pixels per axis (>= 1)")
    parser.add_argument(
        "--variant",
        choices=VARIANTS,
        default="strongest",
        help="translational AEG: strongest, nearest, random or random2 (default strongest)",
    )
    parser.add_argument(
        "--margin", type=int, required=True, help="spare pixels P per side of the canvases (>= 3 * eps)"
    )
    parser.add_argument(
        "--models",
        nargs="+",
        metavar="M",
        help="further runs of the same training on the same data: the N-model test over all runs",
    )
    parser.add_argument("--delta", type=float, default=0.05, help="level of the tests (default 0.05)")
    parser.add_argument("--batch-size", type=int, default=256, help="images per model call (default 256)")
    parser.add_argument("--device", default="cpu", help="torch device (cpu, cuda:0) or 'cuda' for ONNX")
    parser.add_argument(
        "--trust-torchscript",
        action="store_true",
        help="allow loading TorchScript files (runs code stored in them; only for files you trust)",
    )
    add_seed(parser, "the random and random2 AEGs' draws")
    parser.set_defaults(handler=run_overfit_command, summary=summary)
