"""Perturbed model validation (Zhang, Barr, Guedj, Harman, Shawe-Taylor 2019).

Does a learner's capacity fit the data? Retrain it on copies of the training
set with a growing fraction of labels flipped and watch its training
accuracy: the absolute slope |k_S| of accuracy against noise rate is large
for a good fit, small for a learner that memorises noise (overfits) or that
cannot fit the signal (underfits). User guide: docs/pmv.md.

Needs only scikit-learn (no torch).

* :func:`flip_labels` -- per-class label perturbation;
* :func:`fit_line` -- the PMV line (slope k_S, intercept) of accuracy on noise rate;
* :func:`pmv_score` -- the score of one learner (:class:`PMVResult`);
* :func:`compare_estimators` -- several learners on the same perturbed sets;
* :class:`PMVSearchCV` -- a scikit-learn search ranked by |k_S|.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fitaudit._lazy import lazy_exports

if TYPE_CHECKING:
    from fitaudit.pmv._engine import fit_line
    from fitaudit.pmv.compare import PMVComparison, compare_estimators
    from fitaudit.pmv.perturb import DEFAULT_RATES, SCHEMES, flip_labels
    from fitaudit.pmv.score import PMVResult, pmv_score
    from fitaudit.pmv.search import PMVSearchCV

__all__ = [
    "DEFAULT_RATES",
    "SCHEMES",
    "PMVComparison",
    "PMVResult",
    "PMVSearchCV",
    "compare_estimators",
    "fit_line",
    "flip_labels",
    "pmv_score",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "PMVComparison": "compare",
        "compare_estimators": "compare",
        "DEFAULT_RATES": "perturb",
        "SCHEMES": "perturb",
        "flip_labels": "perturb",
        "fit_line": "_engine",
        "PMVResult": "score",
        "pmv_score": "score",
        "PMVSearchCV": "search",
    },
)
