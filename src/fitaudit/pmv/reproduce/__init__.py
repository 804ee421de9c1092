"""Deprecated: moved to :mod:`fitaudit.experiments.pmv` (this alias is removed in the next release)."""

from __future__ import annotations

from fitaudit._deprecation import moved_package

moved_package(__name__, "fitaudit.experiments.pmv", ("comparison", "mlp_width", "tree_depth"))
