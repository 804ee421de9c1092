"""p-value against sample size for the translational AEGs (the analysis behind Fig. 5).

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 5: on ImageNet the
pairwise test with the strongest translational AEG rejects independence on
the training set once the sample is large enough, while the other variants
and the confidence-interval test need far more data, and test sets are not
rejected. :func:`pvalue_curves` computes those curves for any model and any
canvases: each example's terms L(f, X_i) and L(f, g(X_i)) h_g(g(X_i)) do not
depend on the other examples, so the AEG runs once per dataset and variant
(checkpointed under a fingerprint of the model's weights, the data and the
AEG's settings) and the samples of size m are subsets of those terms. The
figure is drawn by :func:`fitaudit.report.overfit.pvalue_curves_figure`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fitaudit._errors import InputError
from fitaudit.overfit.independence import ci_test, pairwise_test
from fitaudit.overfit.one_model import example_terms
from fitaudit.overfit.translation import TranslationAEG
from fitaudit.random import RandomState, check_random_state


def subsample_pvalues(
    terms: Mapping[str, np.ndarray],
    sizes: Sequence[int],
    *,
    U: float,
    repetitions: int,
    delta: float,
    random_state: RandomState,
) -> dict[str, list[float]]:
    """Mean p-values (pairwise and CI test) and rejection rates over random subsets of each size."""
    rng = check_random_state(random_state)
    loss, weighted = terms["loss"], terms["weighted_adv_loss"]
    curves: dict[str, list[float]] = {
        "pairwise": [], "ci": [], "pairwise_reject": [], "ci_reject": []
    }
    for m in sizes:
        if m > len(loss):
            raise InputError(f"`sizes` holds {m}, more than the {len(loss)} examples available.")
        pair, ci = [], []
        for _ in range(repetitions):
            rows = rng.choice(len(loss), size=m, replace=False)
            pair.append(pairwise_test(loss[rows], weighted[rows], U=U, delta=delta).pvalue)
            ci.append(ci_test(loss[rows], weighted[rows], delta=delta).pvalue)
        curves["pairwise"].append(float(np.mean(pair)))
        curves["ci"].append(float(np.mean(ci)))
        curves["pairwise_reject"].append(float(np.mean(np.array(pair) < delta)))
        curves["ci_reject"].append(float(np.mean(np.array(ci) < 2 * delta)))
    return curves


def pvalue_curves(
    model: Any,
    datasets: Mapping[str, tuple[np.ndarray, np.ndarray]],
    *,
    eps: int,
    margin: int,
    variants: Sequence[str],
    sizes: Sequence[int],
    repetitions: int,
    delta: float = 0.05,
    batch_size: int = 512,
    progress: bool = False,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    random_state: RandomState = None,
) -> dict[str, Any]:
    """p-value vs sample size for each dataset and translational AEG variant.

    Parameters
    ----------
    model : classifier adapter
    datasets : mapping name -> (canvases, labels)
        E.g. ``{"train": ..., "test": ...}``; canvases carry ``margin`` spare pixels.
    eps, margin : int
        Translation radius and margin (``margin >= 3 eps``).
    variants : sequence of str
    sizes : sequence of int
        Sample sizes m (subsets drawn without replacement).
    repetitions : int
        Subsets per size; the curves are means over them.
    delta : float
        Level of the pairwise test (the CI test is reported at 2 delta).
    batch_size : int
        Images per model call.
    progress : bool
        Progress bars (stderr).
    checkpoint_dir : path, optional
        Keep each dataset's and variant's per-example terms there
        (:func:`example_terms`), so a rerun resumes; a changed model, data
        set or AEG setting never reuses them.
    random_state : None, int, SeedSequence or Generator
        Seeds the random AEG variants and the subsets.

    Returns
    -------
    dict
        ``curves[dataset][variant]`` with ``pairwise``, ``ci``,
        ``pairwise_reject``, ``ci_reject`` (one entry per size), and
        ``risk_plain`` (R_S), ``success_rate``, ``risk_adversarial``,
        ``evaluations_per_example`` per dataset and variant.
    """
    rng = check_random_state(random_state)
    curves: dict[str, dict[str, Any]] = {}
    jobs = [(name, variant) for name in datasets for variant in variants]
    for name, variant in tqdm(jobs, desc="AEG runs", disable=not progress):
        canvases, y = datasets[name]
        aeg = TranslationAEG(
            eps=eps, margin=margin, variant=variant, batch_size=batch_size, progress=progress,
            random_state=int(rng.integers(2**31 - 1)),
        )
        terms = example_terms(model, canvases, y, aeg, checkpoint_dir=checkpoint_dir)
        entry = subsample_pvalues(
            terms, sizes, U=aeg.pairwise_range, repetitions=repetitions, delta=delta,
            random_state=int(rng.integers(2**31 - 1)),
        )
        curves.setdefault(name, {})[variant] = {
            **entry,
            "risk_plain": float(np.mean(terms["loss"])),
            "risk_adversarial": float(np.mean(terms["weighted_adv_loss"])),
            "success_rate": float(np.mean(terms["success"])),
            "evaluations_per_example": float(terms["evaluations"]) / len(y),
            "full_pvalue": pairwise_test(
                terms["loss"], terms["weighted_adv_loss"], U=aeg.pairwise_range, delta=delta
            ).pvalue,
        }
    return {"sizes": list(sizes), "curves": curves}
