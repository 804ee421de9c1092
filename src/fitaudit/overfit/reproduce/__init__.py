"""Deprecated: moved to :mod:`fitaudit.experiments.overfit` (this alias is removed in the next release)."""

from __future__ import annotations

from fitaudit._deprecation import moved_package

moved_package(__name__, "fitaudit.experiments.overfit", ("imagefolder", "shapes", "synthetic"))
