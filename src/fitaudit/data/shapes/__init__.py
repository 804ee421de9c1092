"""The Shapes world: procedural 3D objects rendered under nuisance factors.

The adversarial examiner (Shu, Liu, Qiu, Yuille, AAAI 2020;
docs/examiner.md) needs a generator x = g(z, s) of inputs from an object instance z
and nuisance factors s; the paper rendered ShapeNet models in Blender. This
world is fitaudit's built-in, dependency-free counterpart:

* :mod:`~fitaudit.data.shapes.classes` -- 12 classes of solids with
  per-instance proportions; :mod:`~fitaudit.data.shapes.instances` -- the
  instances z (class, proportions, colour), a pure function of an id;
* :mod:`~fitaudit.data.shapes.factors` -- the 13 continuous factors s
  (camera, point light, sun, sky) as a :class:`FactorSpace`;
* :mod:`~fitaudit.data.shapes.render` -- the renderer g(z, s): analytic ray
  casting with Lambertian shading, vectorised with numpy;
  :class:`~fitaudit.data.shapes.generator.ShapesGenerator` wraps it in the
  generator protocol of :mod:`fitaudit.data.generators`;
* :mod:`~fitaudit.data.shapes.datasets` -- train/validation/test sets with
  disjoint instances and m renders per object, and the free-position
  variant whose crops can be translated losslessly (the translational
  overfitting test of Werpachowski et al., NeurIPS 2019, Sec. 5,
  needs condition G3: docs/overfit.md#what-it-assumes);
* :mod:`~fitaudit.data.shapes.contact_sheet` -- the image grid of classes x
  factor sweeps to look at (saved as a PNG by
  :func:`fitaudit.report.shapes.write_contact_sheet`).

Labels: the label of g(z, s) is the class of z. The world's factor ranges
were chosen (and checked on contact sheets) so that the object stays in
view, lit and nameable; the known exceptions are a few look-alike views
listed in :mod:`~fitaudit.data.shapes.classes`.
"""

from __future__ import annotations

from fitaudit.data.shapes.classes import CLASS_NAMES, SHAPE_CLASSES
from fitaudit.data.shapes.datasets import (
    FreePositionLayout,
    ShapesDataset,
    make_dataset,
    make_free_position_dataset,
    make_splits,
)
from fitaudit.data.shapes.factors import SHAPES_FACTORS, Factor, FactorSpace, shapes_factor_space
from fitaudit.data.shapes.generator import ShapesGenerator
from fitaudit.data.shapes.instances import (
    SPLIT_ID_OFFSETS,
    ShapeInstances,
    instances_from_ids,
    sample_instances,
)
from fitaudit.data.shapes.render import render

__all__ = [
    "CLASS_NAMES",
    "SHAPES_FACTORS",
    "SHAPE_CLASSES",
    "SPLIT_ID_OFFSETS",
    "Factor",
    "FactorSpace",
    "FreePositionLayout",
    "ShapesDataset",
    "ShapeInstances",
    "ShapesGenerator",
    "instances_from_ids",
    "make_dataset",
    "make_free_position_dataset",
    "make_splits",
    "render",
    "sample_instances",
    "shapes_factor_space",
]
