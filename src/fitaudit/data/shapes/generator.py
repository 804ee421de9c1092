"""The Shapes world as a :class:`~fitaudit.data.generators.Generator`.

:class:`ShapesGenerator` holds a fixed set of object instances z (by default
``n_per_class`` held-out instances of every class from the ``validation``
split) and renders g(z, s) for any rows of factors s in its factor space:
the built-in scenario of the adversarial examiner (Shu et al., AAAI 2020;
docs/examiner.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_int
from fitaudit.data.factors import FactorSpace
from fitaudit.data.shapes.classes import CLASS_NAMES
from fitaudit.data.shapes.factors import check_world_space
from fitaudit.data.shapes.instances import ShapeInstances, check_classes, sample_instances
from fitaudit.data.shapes.render import (
    BACKGROUND,
    check_background,
    check_image_size,
    render_unchecked,
)


class ShapesGenerator:
    """Renders of a fixed set of Shapes objects under any factors.

    Parameters
    ----------
    n_per_class : int
        Objects of every class (ignored when ``instances`` is given).
    classes : list of str or int, optional
        Classes, in label order (labels are positions in this list); the
        classes the examined model was trained on, in the same order.
    split : {"train", "validation", "test"}
        Which disjoint block of instances to draw from.
    instances : ShapeInstances, optional
        Explicit instances instead of ``n_per_class`` per class.
    factor_space : FactorSpace, optional
        The world's space (default) or a narrowing of it.
    image_size : int
    background : RGB triple
    world_seed : int
    """

    def __init__(
        self,
        n_per_class: int = 1,
        *,
        classes: Sequence[str | int] | None = None,
        split: str = "validation",
        instances: ShapeInstances | None = None,
        factor_space: FactorSpace | None = None,
        image_size: int = 32,
        background: Any = BACKGROUND,
        world_seed: int = 0,
    ) -> None:
        class_ids = check_classes(classes)
        if instances is None:
            instances = sample_instances(
                check_int(n_per_class, "n_per_class", minimum=1),
                classes=list(class_ids),
                split=split,
                world_seed=world_seed,
            )
        elif not isinstance(instances, ShapeInstances):
            raise InputError(f"`instances` must be ShapeInstances; got {type(instances).__name__}.")
        missing = sorted(set(instances.class_id.tolist()) - set(class_ids.tolist()))
        if missing:
            raise InputError(
                f"`instances` hold classes {[CLASS_NAMES[c] for c in missing]} that are not in `classes`."
            )
        label_of_class = np.full(len(CLASS_NAMES), -1, dtype=np.int64)
        label_of_class[class_ids] = np.arange(len(class_ids))
        self.instances = instances
        self.class_names = [CLASS_NAMES[c] for c in class_ids]
        self.labels = label_of_class[instances.class_id]
        self.factor_space = check_world_space(factor_space)
        self.image_size = check_image_size(image_size)
        self.background = check_background(background).astype(np.float32)
        self.world_seed = int(world_seed)
        self.split = split

    @property
    def n_instances(self) -> int:
        """Number of objects."""
        return len(self.instances)

    def generate(self, instances: np.ndarray, factors: np.ndarray) -> np.ndarray:
        """float32 images ``(n, 3, S, S)`` in [0, 1]: object ``instances[i]`` under ``factors[i]``."""
        s = self.factor_space.validate(factors)
        return render_unchecked(self.instances.take(np.asarray(instances)), s, self.image_size, self.background)

    def describe(self) -> dict[str, Any]:
        """JSON-safe identity of the scenario (keys checkpoints, shown in reports)."""
        return {
            "generator": "shapes",
            "instance_ids": self.instances.instance_id.tolist(),
            "class_names": self.class_names,
            "labels": self.labels.tolist(),
            "factor_space": self.factor_space.to_dict(),
            "image_size": self.image_size,
            "background": self.background.tolist(),
            "world_seed": self.world_seed,
        }

    def __repr__(self) -> str:
        return (
            f"ShapesGenerator({self.n_instances} objects of {len(self.class_names)} classes, "
            f"{self.image_size}x{self.image_size}, split={self.split!r})"
        )
