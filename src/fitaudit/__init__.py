"""fitaudit: can a model's measured performance be trusted?

Four instruments, each a faithful implementation of a published method
(the user guide, ``docs/``, gives each one's method, assumptions and references):

* :mod:`fitaudit.overfit` -- overfitting test from adversarial examples
  (Werpachowski, Gyorgy, Szepesvari, NeurIPS 2019);
* :mod:`fitaudit.examine` -- the adversarial examiner, worst-case evaluation
  over the factors that generate the inputs (Shu et al., AAAI 2020);
* :mod:`fitaudit.measures` and :mod:`fitaudit.pgdl` -- generalization
  measures and the PGDL competition's tasks and scorer (Jiang et al. 2020);
* :mod:`fitaudit.pmv` -- perturbed model validation (Zhang et al. 2019);
* :func:`fitaudit.audit` -- all four joined in one audit and report
  (:mod:`fitaudit.auditing`).

Importing :mod:`fitaudit` needs only numpy, scipy, scikit-learn and joblib;
torch, onnxruntime and dask are optional extras, imported when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fitaudit._errors import FitauditError, InputError, MissingDependencyError
from fitaudit.options import RunOptions

if TYPE_CHECKING:
    from fitaudit._audit import audit

from fitaudit._version import __version__

__all__ = ["FitauditError", "InputError", "MissingDependencyError", "RunOptions", "__version__", "audit"]


def __getattr__(name: str) -> object:
    """``fitaudit.audit`` (:func:`fitaudit.auditing.run_audit`, worded by the report layer), imported on first use."""
    if name == "audit":
        from fitaudit._audit import audit

        globals()["audit"] = audit
        return audit
    raise AttributeError(f"module 'fitaudit' has no attribute {name!r}")
