"""Reference classifiers of the Shapes world and their training routine.

Two families of small CNNs sized for a CPU (the paper examined an AlexNet
and a ResNet, Shu et al., AAAI 2020): ``shapes_alexnet`` and
``shapes_resnet`` (:mod:`fitaudit.shapes_models.nets`, registered with
:mod:`fitaudit.models.architectures`), trained by
:func:`~fitaudit.shapes_models.training.train_classifier` with progress,
per-epoch checkpoints and resume, and saved as ``weights.safetensors`` +
``config.json`` (loadable with :func:`fitaudit.models.io.load_model`).
Needs the ``torch`` extra.
"""

from __future__ import annotations
