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

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_float, check_labels
from fitaudit.overfit.independence import (
    CITestResult,
    PairwiseTestResult,
    ci_test,
    pairwise_test,
    pairwise_test_from_terms,
)
from fitaudit.overfit.translation import (
    DENSITY_WARNING,
    VARIANTS,
    TranslationAEG,
    TranslationAEGOutput,
)
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
        p-value of the pairwise test for this model alone.
    evaluations_per_example : float
        Images scored per example by the AEG.
    """

    model: str
    error_rate: float
    adversarial_risk: float
    success_rate: float
    pvalue: float
    evaluations_per_example: float


@dataclasses.dataclass(repr=False)
class OverfitCommandResult(Result):
    """What ``fitaudit overfit`` reports.

    Attributes
    ----------
    pvalue : float
        p-value of the pairwise test (of the N-model test when several
        models are given).
    pairwise : PairwiseTestResult
        Test B for the first model.
    ci : CITestResult
        Test A for the first model.
    n_model : PairwiseTestResult or None
        Test C on Tbar_i = (1/N) sum_j T_{i, g_j}(f_j), N = number of models.
    runs : list of ModelRun
        Per-model error rate and p-value (picking the best of several seeds
        shows up here).
    variant, eps, margin, m : the AEG and the sample size.
    warning : str
        The (G3) validity condition.
    """

    pvalue: float
    pairwise: PairwiseTestResult
    ci: CITestResult
    n_model: PairwiseTestResult | None
    runs: list[ModelRun]
    variant: str
    eps: int
    margin: int
    m: int
    warning: str

    def _summary_fields(self) -> list[str]:
        return ["pvalue", "variant", "eps", "margin", "m", "warning"]

    def __repr__(self) -> str:
        lines = [super().__repr__()]
        for run in self.runs:
            lines.append(
                f"  {run.model}: error rate {run.error_rate:.4f}, R_g {run.adversarial_risk:.4f}, "
                f"successful translations {run.success_rate:.3f}, p = {run.pvalue:.4g}, "
                f"{run.evaluations_per_example:.0f} evaluations/example"
            )
        lines.append(f"  CI test (first model): p = {self.ci.pvalue:.4g}, reject = {self.ci.reject}")
        return "\n".join(lines)


def translation_terms(
    model: Any, canvases: np.ndarray, y: np.ndarray, aeg: TranslationAEG
) -> tuple[np.ndarray, TranslationAEGOutput]:
    """L(f, X_i) on the centre crops and the AEG output for one model."""
    from fitaudit.models import as_classifier

    adapter = as_classifier(model)
    loss = (adapter.predict(aeg.model_inputs(canvases)) != y).astype(float)
    return loss, aeg.generate(adapter, canvases, y, loss=loss)


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
    paths = [args.model, *(args.models or [])]
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
    runs, terms = [], []
    first: tuple[PairwiseTestResult, CITestResult] | None = None
    for path, model in zip(paths, models):
        loss, out = translation_terms(model, canvases, y, aeg)
        test = pairwise_test(loss, out.weighted_adv_loss, U=aeg.pairwise_range, delta=delta)
        if first is None:
            first = (test, ci_test(loss, out.weighted_adv_loss, delta=delta))
        terms.append(out.weighted_adv_loss - loss)
        runs.append(
            ModelRun(
                model=str(path),
                error_rate=float(np.mean(loss)),
                adversarial_risk=float(np.mean(out.weighted_adv_loss)),
                success_rate=float(np.mean(out.success)),
                pvalue=test.pvalue,
                evaluations_per_example=out.evaluations_per_example,
            )
        )
    assert first is not None
    n_model = None
    if len(models) > 1:
        n_model = pairwise_test_from_terms(
            np.mean(terms, axis=0), U=aeg.pairwise_range, delta=delta,
            plain=np.zeros(len(y)), weighted=np.zeros(len(y)),
        )
    return OverfitCommandResult(
        pvalue=(n_model or first[0]).pvalue,
        pairwise=first[0],
        ci=first[1],
        n_model=n_model,
        runs=runs,
        variant=aeg.variant,
        eps=aeg.eps,
        margin=aeg.margin,
        m=len(y),
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
