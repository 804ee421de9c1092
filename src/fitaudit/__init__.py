"""fitaudit: can a model's measured performance be trusted?

Four instruments, each a faithful implementation of a published method
(see ``docs/METHODS.md`` in the project's shared documents):

* :mod:`fitaudit.overfit` -- overfitting test from adversarial examples
  (Werpachowski, Gyorgy, Szepesvari, NeurIPS 2019);
* :mod:`fitaudit.pmv` -- perturbed model validation (Zhang et al. 2019);
* the adversarial examiner and the PGDL generalization measures follow.

Importing :mod:`fitaudit` needs only numpy, scipy, scikit-learn and joblib;
torch, onnxruntime and dask are optional extras, imported when used.
"""

from __future__ import annotations

from fitaudit._errors import FitauditError, InputError, MissingDependencyError

__version__ = "0.1.0"

__all__ = ["FitauditError", "InputError", "MissingDependencyError", "__version__", "audit"]


def __getattr__(name: str) -> object:
    """``fitaudit.audit``: the audit module, callable as :func:`fitaudit.audit.audit`, imported on first use."""
    if name == "audit":
        import importlib

        return importlib.import_module("fitaudit.audit")
    raise AttributeError(f"module 'fitaudit' has no attribute {name!r}")
