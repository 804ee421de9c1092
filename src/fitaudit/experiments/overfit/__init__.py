"""Reproductions of Werpachowski, Gyorgy, Szepesvari, "Detecting overfitting via adversarial examples" (NeurIPS 2019).

Library functions returning result objects (figures and tables:
:mod:`fitaudit.report.reproductions`; command line: ``fitaudit reproduce``):

* :func:`reproduce_overfit_synthetic` -- Fig. 4, the N-model test on the
  Gaussian-margin problem (:class:`SyntheticReproductionResult`);
* :func:`reproduce_overfit_shapes` -- Fig. 5's p-value against sample size,
  on the Shapes world instead of ImageNet (:class:`OverfitShapesReproduction`);
* :func:`reproduce_overfit_imagefolder` -- Sec. 5's protocol as a user runs
  it: Shapes image folders, a CNN exported to ONNX, ``fitaudit overfit
  --images`` on its training folder and on unseen objects
  (:class:`OverfitImageFolderReproduction`).
"""

from __future__ import annotations

from fitaudit.experiments.overfit.imagefolder import (
    OverfitImageFolderReproduction,
    reproduce_overfit_imagefolder,
)
from fitaudit.experiments.overfit.shapes import OverfitShapesReproduction, reproduce_overfit_shapes
from fitaudit.experiments.overfit.synthetic import (
    SyntheticReproductionResult,
    reproduce_overfit_synthetic,
)

__all__ = [
    "OverfitImageFolderReproduction",
    "OverfitShapesReproduction",
    "SyntheticReproductionResult",
    "reproduce_overfit_imagefolder",
    "reproduce_overfit_shapes",
    "reproduce_overfit_synthetic",
]
