"""Deprecated: moved to :mod:`fitaudit.experiments.examine` (this alias is removed in the next release)."""

from __future__ import annotations

from fitaudit._deprecation import moved_package

moved_package(__name__, "fitaudit.experiments.examine", ("_common", "_models", "_run", "images", "planted", "renders", "table", "variants"))
