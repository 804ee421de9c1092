"""Object instances z: class, proportions and surface colour.

An instance is ``z = (class_id, scale, params, colour)``. Instance ``i`` of
a world is drawn from its own seed ``SeedSequence([world_seed, i])``, so an
instance is a pure function of ``(world_seed, instance_id)`` and sets of
different ids are disjoint by construction (train, validation and test
splits draw from disjoint id blocks, see :data:`SPLIT_ID_OFFSETS`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_array, check_int
from fitaudit.data.shapes.classes import CLASS_NAMES, N_SHAPE_PARAMS, SHAPE_CLASSES

#: first instance id of each split; ids of different splits never meet
SPLIT_ID_OFFSETS: dict[str, int] = {"train": 0, "validation": 1 << 40, "test": 2 << 40}

#: HSV ranges of the surface colour (hue is free: colour carries no label)
SATURATION_RANGE = (0.45, 0.9)
VALUE_RANGE = (0.75, 1.0)

_PROBE_DISTANCE = 3.0
#: probing along finitely many lines can miss a corner by ~1%: shrink a little more
_RADIUS_SLACK = 1.015


@dataclasses.dataclass
class ShapeInstances:
    """A batch of object instances (one row per instance).

    Attributes
    ----------
    instance_id : ndarray of int64, shape (n,)
    class_id : ndarray of int64, shape (n,)
        Index into :data:`CLASS_NAMES`; the label of every render.
    scale : ndarray of float64, shape (n, 3)
        Per-axis scale of the canonical solid, including the normalisation
        that puts the farthest surface point on the unit sphere.
    params : ndarray of float64, shape (n, 2)
        Class-specific shape parameters (unused columns are zero).
    colour : ndarray of float64, shape (n, 3)
        Surface RGB in [0, 1].
    """

    instance_id: np.ndarray
    class_id: np.ndarray
    scale: np.ndarray
    params: np.ndarray
    colour: np.ndarray

    def __len__(self) -> int:
        return len(self.class_id)

    def take(self, index: Any) -> ShapeInstances:
        """Rows ``index`` (e.g. ``np.repeat(np.arange(n), m)`` for m renders each)."""
        idx = np.asarray(index)
        return ShapeInstances(
            self.instance_id[idx], self.class_id[idx], self.scale[idx], self.params[idx], self.colour[idx]
        )

    @property
    def class_names(self) -> list[str]:
        """The class name of every instance."""
        return [CLASS_NAMES[c] for c in self.class_id]


def check_classes(classes: Sequence[str | int] | None) -> np.ndarray:
    """Class ids for a list of class names or ids (``None``: every class)."""
    if classes is None:
        return np.arange(len(CLASS_NAMES))
    if isinstance(classes, (str, bytes)) or not isinstance(classes, Sequence) or not classes:
        raise InputError(f"`classes` must be a non-empty list of class names; got {classes!r}.")
    ids = []
    for item in classes:
        if isinstance(item, str) and item in CLASS_NAMES:
            ids.append(CLASS_NAMES.index(item))
        elif isinstance(item, (int, np.integer)) and not isinstance(item, bool) and 0 <= item < len(CLASS_NAMES):
            ids.append(int(item))
        else:
            raise InputError(
                f"`classes` holds unknown class {item!r}; the classes are {', '.join(CLASS_NAMES)}."
            )
    if len(set(ids)) != len(ids):
        raise InputError(f"`classes` must not repeat a class; got {list(classes)}.")
    return np.array(ids)


def _hsv_to_rgb(hsv: np.ndarray) -> np.ndarray:
    h, s, v = hsv[:, 0] * 6.0, hsv[:, 1], hsv[:, 2]
    k = (np.array([5.0, 3.0, 1.0])[None, :] + h[:, None]) % 6.0
    return v[:, None] - v[:, None] * s[:, None] * np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)


def _fibonacci_sphere(n: int) -> np.ndarray:
    i = np.arange(n) + 0.5
    z = 1.0 - 2.0 * i / n
    phi = np.pi * (1.0 + 5**0.5) * i
    r = np.sqrt(1.0 - z * z)
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def _probe_directions(scale: np.ndarray, pose: np.ndarray, n_dirs: int) -> np.ndarray:
    """Unit probe directions (n, k, 3): a Fibonacci sphere plus the canonical corner directions.

    The corners (axes, face and body diagonals of the canonical cube, the
    star's tips at z = +-1) are where the solids' vertices lie; they move
    with the instance's scale and the class's pose, so they are mapped
    through both.
    """
    lattice = np.array([[x, y, z] for x in (-1, 0, 1) for y in (-1, 0, 1) for z in (-1, 0, 1) if (x, y, z) != (0, 0, 0)])
    angles = np.pi / 2 + 2 * np.pi * np.arange(5) / 5
    tips = np.array([[np.cos(a), np.sin(a), z] for a in angles for z in (-1.0, 1.0)])
    corners = np.concatenate([lattice, tips])[None, :, :] * scale[:, None, :] @ pose.T
    corners /= np.linalg.norm(corners, axis=2, keepdims=True)
    sphere = np.broadcast_to(_fibonacci_sphere(n_dirs), (len(scale), n_dirs, 3))
    return np.concatenate([sphere, corners], axis=1)


def _farthest_surface_radius(class_id: int, scale: np.ndarray, params: np.ndarray, n_dirs: int = 300) -> np.ndarray:
    """Largest distance of the surface from the centre, probed along lines through it."""
    shape_class = SHAPE_CLASSES[class_id]
    pose = shape_class.pose.astype(np.float64)
    dirs = _probe_directions(scale, pose, n_dirs)
    n, k = dirs.shape[:2]
    axis_scale = np.repeat(scale, k, axis=0).T
    flat = pose.T @ dirs.reshape(-1, 3).T
    o = (_PROBE_DISTANCE * flat / axis_scale).astype(np.float32)
    d = (-flat / axis_scale).astype(np.float32)
    t, _ = shape_class.hit(o, d, np.repeat(params, k, axis=0).T.astype(np.float32))
    radius = np.where(np.isfinite(t), _PROBE_DISTANCE - t, 0.0)
    return radius.reshape(n, k).max(axis=1)


def instances_from_ids(instance_ids: Any, class_ids: Any, *, world_seed: int = 0) -> ShapeInstances:
    """The instances with the given ids and classes (a pure function of its inputs).

    Parameters
    ----------
    instance_ids : array of int, shape (n,)
        Non-negative ids; instance ``i`` is drawn from ``SeedSequence([world_seed, i])``.
    class_ids : array of int, shape (n,)
        Class of each instance.
    world_seed : int
        Seed of the world.
    """
    ids = check_array(instance_ids, "instance_ids", ndim=1, dtype=np.int64)
    classes = check_array(class_ids, "class_ids", ndim=1, dtype=np.int64)
    world_seed = check_int(world_seed, "world_seed", minimum=0)
    if len(ids) != len(classes):
        raise InputError(f"`instance_ids` and `class_ids` must have the same length; got {len(ids)} and {len(classes)}.")
    if ids.min() < 0:
        raise InputError(f"`instance_ids` must be non-negative; got {ids.min()}.")
    if classes.min() < 0 or classes.max() >= len(CLASS_NAMES):
        raise InputError(f"`class_ids` must be in [0, {len(CLASS_NAMES) - 1}]; got {classes.min()}..{classes.max()}.")
    n = len(ids)
    scale = np.ones((n, 3))
    params = np.zeros((n, N_SHAPE_PARAMS))
    hsv = np.zeros((n, 3))
    for row, (instance_id, class_id) in enumerate(zip(ids, classes)):
        rng = np.random.default_rng(np.random.SeedSequence([world_seed, int(instance_id)]))
        u = rng.random(3 + N_SHAPE_PARAMS + 3)
        shape_class = SHAPE_CLASSES[class_id]
        for axis, (low, high) in enumerate(shape_class.scale_ranges):
            scale[row, axis] = low + (high - low) * u[axis]
        for k, (low, high) in enumerate(shape_class.param_ranges):
            params[row, k] = low + (high - low) * u[3 + k]
        hsv[row] = [
            u[-3],
            SATURATION_RANGE[0] + (SATURATION_RANGE[1] - SATURATION_RANGE[0]) * u[-2],
            VALUE_RANGE[0] + (VALUE_RANGE[1] - VALUE_RANGE[0]) * u[-1],
        ]
    for class_id in np.unique(classes):
        rows = classes == class_id
        radius = _farthest_surface_radius(int(class_id), scale[rows], params[rows])
        scale[rows] /= _RADIUS_SLACK * radius[:, None]
    return ShapeInstances(ids, classes, scale, params, _hsv_to_rgb(hsv))


def sample_instances(
    n_per_class: int,
    *,
    classes: Sequence[str | int] | None = None,
    split: str = "train",
    world_seed: int = 0,
) -> ShapeInstances:
    """``n_per_class`` instances of every class, from the split's id block.

    Instance ``k`` of class ``c`` (in the order of ``classes``) has id
    ``SPLIT_ID_OFFSETS[split] + k * n_classes + position of c``; ids of
    different splits are disjoint whenever ``n_per_class * n_classes < 2**40``.
    """
    n_per_class = check_int(n_per_class, "n_per_class", minimum=1)
    if split not in SPLIT_ID_OFFSETS:
        raise InputError(f"`split` must be one of {', '.join(map(repr, SPLIT_ID_OFFSETS))}; got {split!r}.")
    class_ids = check_classes(classes)
    n_classes = len(class_ids)
    position = np.arange(n_per_class * n_classes)
    ids = SPLIT_ID_OFFSETS[split] + position
    return instances_from_ids(ids, class_ids[position % n_classes], world_seed=world_seed)
