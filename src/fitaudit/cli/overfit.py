"""``fitaudit overfit``: is an image classifier independent of the dataset it is scored on?

Werpachowski, Gyorgy, Szepesvari, NeurIPS 2019, Sec. 3 and 5: the pairwise
test (Test B) with a translational AEG, the confidence-interval test (Test A)
for comparison, and, with ``--models``, the N-model test (Test C) over
several training runs of the same procedure.

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
from fitaudit._validation import check_float, check_labels
from fitaudit.overfit.audit import OverfitTestResult, overfit_test
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
    adversarial_risk : float
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
    adversarial_risk: float
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
        The core's result: :func:`~fitaudit.overfit.audit.overfit_test` for
        one model, :func:`~fitaudit.overfit.nmodel.n_model_test` (Test C on
        Tbar_i = (1/N) sum_j T_{i, g_j}(f_j)) for several.
    runs : list of ModelRun
        Per-model error rate and p-values (picking the best of several seeds
        shows up here).
    variant, eps, margin, m, n_models : the AEG, the sample size, N.
    warning : str
        The (G3) validity condition.
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

    def _summary_fields(self) -> list[str]:
        return ["pvalue", "reject", "variant", "eps", "margin", "m", "n_models", "warning"]

    def __repr__(self) -> str:
        lines = [super().__repr__()]
        for run in self.runs:
            lines.append(
                f"  {run.model}: error rate {run.error_rate:.4f}, R_g {run.adversarial_risk:.4f}, "
                f"successful translations {run.success_rate:.3f}, pairwise p = {run.pvalue:.4g}, "
                f"CI p = {run.ci_pvalue:.4g}, {run.evaluations_per_example:.0f} evaluations/example"
            )
        return "\n".join(lines)


def model_runs(paths: list[str], test: OverfitTestResult | NModelTestResult) -> list[ModelRun]:
    """Per-model numbers from the core's result (one model, or the N-model test's runs)."""
    if isinstance(test, OverfitTestResult):
        entries = [
            {
                "error_rate": test.error_rate,
                "adversarial_risk": test.risk_adversarial,
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
            adversarial_risk=float(entry["adversarial_risk"]),
            success_rate=entry["n_success"] / test.m,
            pvalue=float(entry["pvalue"]),
            ci_pvalue=float(entry["ci_pvalue"]),
            evaluations_per_example=entry["evaluations"] / test.m,
        )
        for path, entry in zip(paths, entries)
    ]


def run_overfit_command(args: argparse.Namespace) -> OverfitCommandResult:
    """Handler of ``fitaudit overfit``."""
    from fitaudit.data.io import load_npz
    from fitaudit.models import load_model

    delta = check_float(args.delta, "--delta", low=0.0, high=0.5, low_inclusive=False, high_inclusive=False)
    aeg = TranslationAEG(
        eps=args.eps,
        margin=args.margin,
        variant=args.variant,
        batch_size=args.batch_size,
        progress=not args.quiet,
        random_state=args.seed,
    )
    paths = [str(args.model), *(str(p) for p in args.models or [])]
    models = [
        load_model(path, batch_size=args.batch_size, device=args.device, name="--model")
        for path in paths
    ]
    canvases, y = load_npz(args.data, image=True, name="--data")
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
    )


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
        ),
    )
    parser.add_argument("--model", required=True, help="model file: .onnx, safetensors+config folder, .skops")
    parser.add_argument("--data", required=True, help=".npz with canvases x (m, C, H+2P, W+2P) and labels y")
    parser.add_argument("--eps", type=int, required=True, help="largest shift per axis (>= 1)")
    parser.add_argument("--variant", choices=VARIANTS, default="strongest", help="translational AEG")
    parser.add_argument("--margin", type=int, required=True, help="spare pixels P per side (>= 3 * eps)")
    parser.add_argument(
        "--models", nargs="+", metavar="M", help="further runs of the same training for the N-model test"
    )
    parser.add_argument("--delta", type=float, default=0.05, help="level of the tests (default 0.05)")
    parser.add_argument("--batch-size", type=int, default=256, help="images per model call")
    parser.add_argument("--device", default="cpu", help="torch device or 'cuda' for ONNX")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random/random2 draws")
    parser.set_defaults(handler=run_overfit_command)
