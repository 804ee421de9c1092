"""The headline numbers a part's card shows, one function per kind of result.

A part is built with these numbers (:mod:`fitaudit.auditing.first`,
:mod:`fitaudit.auditing.parts`), and a saved audit's numbers are checked
against them on load (:func:`fitaudit.auditing.result.check_numbers`): the
same function gives both, so an edited number is seen. This module imports
no other module of the audit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fitaudit.examine.decision import examination_accuracies


def accuracy_numbers(result: Any) -> dict[str, Any]:
    """The card's numbers of an AccuracyResult."""
    return {"accuracy": result.accuracy, "interval low": result.low, "interval high": result.high,
            "examples": result.n}


def leakage_numbers(result: Any) -> dict[str, Any]:
    """The card's numbers of a LeakageResult."""
    numbers: dict[str, Any] = {"near twins": result.n_near, "exact copies": result.n_exact,
                               "share of scored": result.fraction_near, "threshold": result.threshold}
    if result.accuracy_without is not None:
        numbers["accuracy without twins"] = result.accuracy_without.accuracy
    return numbers


def overfit_numbers(result: Any) -> dict[str, Any]:
    """Headline numbers of an overfitting test (pairwise test, its interval, the CI test)."""
    interval = result.pairwise.confidence_interval()
    return {
        "error rate R_S": result.risk_plain,
        "adversarial risk R_g": result.risk_adversarial,
        "T = R_g - R_S": result.statistic,
        f"{1 - result.delta:.0%} interval of T": [interval.low, interval.high],
        "p-value (pairwise test)": result.pvalue,
        "p-value (interval test)": result.ci.pvalue,
        "examples m": result.m,
        "successful adversarial examples": result.n_success,
        **g3_numbers(result),
    }


def g3_numbers(result: Any) -> dict[str, Any]:
    """The (G3) check's numbers of an overfitting test (none when it was not checked)."""
    g3 = getattr(result, "g3", None)
    if g3 is None:
        return {}
    return {"G3 check: shifted vs centre crops told apart": g3.accuracy, "G3 check p-value": g3.pvalue}


def nmodel_numbers(result: Any) -> dict[str, Any]:
    """Headline numbers of an N-model test."""
    return {"p-value p_N": result.pvalue, "Tbar": result.statistic, "runs N": result.n_models,
            "smallest per-run p-value": min(r["pvalue"] for r in result.per_model), **g3_numbers(result)}


def pmv_numbers(result: Any) -> dict[str, Any]:
    """Headline numbers of a PMV score."""
    return {"PMV score |k_S|": result.statistic, "slope k_S": result.slope,
            "training accuracy at r = 0": float(result.mean_accuracy[0]),
            f"risk bound (delta = {result.delta:g})": result.bound, "training examples m": result.n_train}


def examination_numbers(result: Any) -> dict[str, Any]:
    """Average accuracy (uniform random factors) vs worst-case accuracy (what the examiner found)."""
    average, worst = examination_accuracies(result)
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


def slice_numbers(result: Any) -> dict[str, Any]:
    """The card's numbers of a SliceResult."""
    numbers: dict[str, Any] = {"slices tried": result.n_tried, "slices flagged": result.n_flagged,
                               "distinct weak slices": result.n_groups}
    if result.groups:
        worst = result.groups[0]
        numbers.update({"weakest slice": worst["text"], "its accuracy": worst["accuracy"],
                        "its rows": worst["rows"], "accuracy elsewhere": worst["rest_accuracy"]})
    return numbers


def label_numbers(result: Any) -> dict[str, Any]:
    """The card's numbers of a LabelResult."""
    return {"flagged labels": result.n_flagged, "accuracy": result.accuracy,
            "corrected accuracy": result.corrected_accuracy, "interval high": result.high}


def headline_numbers(result: Any) -> dict[str, Any]:
    """The numbers a part shows for ``result``, computed from it again (``{}`` for a result whose part adds its own)."""

    makers: dict[str, Callable[[Any], dict[str, Any]]] = {"AccuracyResult": accuracy_numbers, "LeakageResult": leakage_numbers,
              "OverfitTestResult": overfit_numbers, "NModelTestResult": nmodel_numbers,
              "PMVResult": pmv_numbers, "ExaminationResult": examination_numbers,
              "AgreementResult": lambda r: {"agreement estimate": r.estimate, "gap": r.gap},
              "SliceResult": slice_numbers, "LabelResult": label_numbers}
    make = makers.get(type(result).__name__)
    return make(result) if make is not None else {}
