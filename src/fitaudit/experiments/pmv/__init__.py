"""Reproductions of Zhang et al. (2019), "Perturbed Model Validation".

Library functions returning result objects (figures and tables:
:mod:`fitaudit.report.reproductions`; command line: ``fitaudit reproduce``):

* :func:`reproduce_pmv_comparison` -- PMV against 10-fold CV on
  scikit-learn's classifier comparison (experiments a and b);
* :func:`reproduce_pmv_tree_depth` -- a decision tree's depth chosen by PMV,
  the mutation score and GridSearchCV (experiment c);
* :func:`reproduce_pmv_mlp_width` -- an MLP's width by PMV against a
  validation curve (experiment d).

Each takes ``mode`` (``"quick"`` for tests, ``"full"``), ``checkpoint_dir``,
``random_state``, ``n_jobs`` and ``progress``.
"""

from __future__ import annotations

from fitaudit.experiments.pmv.comparison import PMVComparisonReproduction, reproduce_pmv_comparison
from fitaudit.experiments.pmv.mlp_width import MLPWidthReproduction, reproduce_pmv_mlp_width
from fitaudit.experiments.pmv.tree_depth import TreeDepthReproduction, reproduce_pmv_tree_depth

__all__ = [
    "MLPWidthReproduction",
    "PMVComparisonReproduction",
    "TreeDepthReproduction",
    "reproduce_pmv_comparison",
    "reproduce_pmv_mlp_width",
    "reproduce_pmv_tree_depth",
]
