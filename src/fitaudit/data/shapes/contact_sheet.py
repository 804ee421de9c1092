"""A contact sheet of the Shapes world: classes x factor sweeps, as an image grid.

Every row is one instance of a class; every column sets one or two
factors to a value (the others keep their defaults), so a person can check
that each class stays nameable across the ranges, then a few columns of
fully random factors show typical training images. The PNG is drawn by
:func:`fitaudit.report.shapes.write_contact_sheet`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_int
from fitaudit.data.shapes.classes import CLASS_NAMES
from fitaudit.data.shapes.factors import shapes_factor_space
from fitaudit.data.shapes.instances import check_classes, sample_instances
from fitaudit.data.shapes.render import (
    BACKGROUND,
    check_background,
    check_image_size,
    render_unchecked,
)

#: columns of the default sheet: (title, {factor: value})
DEFAULT_SWEEPS: tuple[tuple[str, dict[str, float]], ...] = (
    ("default", {}),
    ("elev -90", {"camera_elevation": -90.0}),
    ("elev -45", {"camera_elevation": -45.0}),
    ("elev 0", {"camera_elevation": 0.0}),
    ("elev 45", {"camera_elevation": 45.0}),
    ("elev 90", {"camera_elevation": 90.0}),
    ("azim 120", {"camera_azimuth": 120.0}),
    ("azim 240", {"camera_azimuth": 240.0}),
    ("rot 90", {"object_rotation": 90.0}),
    ("roll 90", {"camera_roll": 90.0}),
    ("dist 3", {"camera_distance": 3.0}),
    ("dist 6", {"camera_distance": 6.0}),
    ("light back", {"light_azimuth": 210.0, "light_elevation": -30.0, "sun_energy": 0.0}),
    ("light dim", {"light_energy": 0.3, "light_distance": 10.0, "sun_energy": 0.0, "ambient_energy": 0.45}),
    ("light bright", {"light_energy": 1.0, "light_distance": 4.0, "sun_energy": 1.0, "ambient_energy": 0.85}),
    ("sun below", {"sun_elevation": -90.0, "sun_energy": 1.0}),
)


def contact_sheet_images(
    *,
    classes: Sequence[str | int] | None = None,
    sweeps: Sequence[tuple[str, dict[str, float]]] = DEFAULT_SWEEPS,
    n_random: int = 4,
    image_size: int = 64,
    background: Any = BACKGROUND,
    world_seed: int = 0,
    random_state: Any = 0,
) -> tuple[np.ndarray, list[str], list[str]]:
    """Images (rows, cols, 3, S, S) of the sheet with row and column titles."""
    class_ids = check_classes(classes)
    n_random = check_int(n_random, "n_random", minimum=0)
    size = check_image_size(image_size)
    bg = check_background(background).astype(np.float32)
    space = shapes_factor_space()
    columns = [space.to_array(values) for _, values in sweeps]
    if n_random:
        columns += list(space.sample(n_random, random_state=random_state)[:, None, :])
    titles = [title for title, _ in sweeps] + [f"random {i + 1}" for i in range(n_random)]
    if not columns:
        raise InputError("the contact sheet needs at least one column: give `sweeps` or `n_random` > 0.")
    objects = sample_instances(1, classes=list(class_ids), split="test", world_seed=world_seed)
    n_rows, n_cols = len(objects), len(columns)
    factors = np.concatenate(columns)  # (n_cols, 13)
    instances = objects.take(np.repeat(np.arange(n_rows), n_cols))
    images = render_unchecked(instances, np.tile(factors, (n_rows, 1)), size, bg)
    return images.reshape(n_rows, n_cols, 3, size, size), [CLASS_NAMES[c] for c in class_ids], titles
