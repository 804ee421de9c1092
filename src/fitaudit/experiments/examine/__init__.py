"""Reproductions of Shu, Liu, Qiu, Yuille (AAAI 2020) on the Shapes world (``fitaudit reproduce examiner-...``).

* :func:`reproduce_examiner_table` -- Table 2: RL / BO / random on two model
  families at T = 0, 100, 300, 500;
* :func:`reproduce_examiner_renders` -- models trained with m = 1, 2, 5, 10
  renders per object, at T = 200;
* :func:`reproduce_examiner_planted` -- the planted weakness (training
  elevation limited to [-30, 30] degrees);
* :func:`reproduce_examiner_variants` -- the RL examiner's factor order and
  strength mode;
* :func:`reproduce_examiner_images` -- image models on their own test
  images (digits, with and without rotation augmentation) against the exact
  worst case of Engstrom et al.'s grid (docs/examiner.md#your-own-images).

Each takes ``mode`` (``"quick"``: seconds, for tests; ``"full"``),
``checkpoint_dir``, ``random_state``, ``progress`` and ``models_dir`` (the
cache of reference models shared by the four) and returns an
:class:`ExaminerReproduction`.
"""

from __future__ import annotations

from fitaudit.experiments.examine._run import ExaminerReproduction
from fitaudit.experiments.examine.images import ImageExaminerReproduction, reproduce_examiner_images
from fitaudit.experiments.examine.planted import reproduce_examiner_planted
from fitaudit.experiments.examine.renders import reproduce_examiner_renders
from fitaudit.experiments.examine.table import reproduce_examiner_table
from fitaudit.experiments.examine.variants import reproduce_examiner_variants

__all__ = [
    "ExaminerReproduction",
    "ImageExaminerReproduction",
    "reproduce_examiner_planted",
    "reproduce_examiner_renders",
    "reproduce_examiner_images",
    "reproduce_examiner_table",
    "reproduce_examiner_variants",
]
