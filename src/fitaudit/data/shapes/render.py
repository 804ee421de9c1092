"""The renderer x = g(z, s) of the Shapes world.

A pinhole camera looks at the object's centre from ``camera_distance``
along (``camera_azimuth``, ``camera_elevation``) and is rolled by
``camera_roll``; the object is yawed by ``object_rotation``. Each pixel's
ray is cast analytically against the object's convex pieces
(:mod:`fitaudit.data.shapes.geometry`); only rays that enter the unit
sphere (which contains every object) are cast. Shading is Lambertian:

    colour * ( ambient * (0.3 + 0.7 (1 + n_z) / 2)               hemisphere sky
             + sun_energy * max(0, n . l_sun)                       directional sun
             + light_energy * max(0, n . l_pt) * (4 / |L - p|)^2 )  point light

with n the unit normal, n_z its vertical component, l the unit directions
to the lights, clipped to [0, 1]. No shadows. The background is one plain
colour (label-free and translation-invariant).

Rendering is vectorised with numpy over (renders x pixels), in float32;
the same (z, s) always gives the same image, whatever else is in the batch
(bit for bit on one machine and numpy build; other CPUs may differ in the
last bits of a few pixels). It runs on one thread: casting blocks of
renders on two threads was slower on two cores (the many short numpy calls
contend for the GIL; ``benchmarks/results/shapes_render.txt``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_array, check_int
from fitaudit.data.shapes.classes import SHAPE_CLASSES
from fitaudit.data.shapes.factors import FactorSpace, check_world_space, shapes_factor_space
from fitaudit.data.shapes.instances import ShapeInstances

#: half field of view: an object at the nearest camera distance (3) fills the frame but
#: stays inside it (its bounding sphere subtends 19.5 degrees, the outermost pixel centres 20.4)
HALF_FOV_DEG = 21.0
#: default background colour (RGB)
BACKGROUND = (0.42, 0.42, 0.45)
#: point-light distance at which ``light_energy`` is the received intensity
LIGHT_REFERENCE_DISTANCE = 4.0
#: hemisphere light: a surface facing straight down gets this fraction of a surface facing up
SKY_BASE = 0.3

#: most rays (of renders times pixels) cast together in one block
_RAYS_PER_CHUNK = 1 << 16

_WORLD = shapes_factor_space()


def _direction(azimuth_deg: np.ndarray, elevation_deg: np.ndarray) -> np.ndarray:
    az, el = np.radians(azimuth_deg), np.radians(elevation_deg)
    return np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=-1)


def _rotate_z(v: np.ndarray, angle_deg: np.ndarray) -> np.ndarray:
    """Rotate vectors v (n, 3) by angle (n,) about z."""
    c, s = np.cos(np.radians(angle_deg)), np.sin(np.radians(angle_deg))
    return np.stack([c * v[:, 0] - s * v[:, 1], s * v[:, 0] + c * v[:, 1], v[:, 2]], axis=1)


def check_image_size(image_size: Any, name: str = "image_size") -> int:
    """A positive image side in pixels (at most 512)."""
    return check_int(image_size, name, minimum=1, maximum=512)


def check_background(background: Any) -> np.ndarray:
    """An RGB triple in [0, 1]."""
    colour = check_array(background, "background", ndim=1, value_range=(0.0, 1.0))
    if colour.shape != (3,):
        raise InputError(f"`background` must be an RGB triple; got shape {colour.shape}.")
    return colour


class _Scene:
    """Per-render camera and lights in each object's (yawed) frame, as float32 (3, n) arrays."""

    def __init__(self, s: np.ndarray) -> None:
        f = {name: s[:, i] for i, name in enumerate(_WORLD.names)}
        yaw = -f["object_rotation"]
        view = _direction(f["camera_azimuth"], f["camera_elevation"])
        az = np.radians(f["camera_azimuth"])
        right = np.stack([-np.sin(az), np.cos(az), np.zeros_like(az)], axis=1)
        forward = -view
        up = np.cross(right, forward)
        roll = np.radians(f["camera_roll"])[:, None]
        right, up = np.cos(roll) * right + np.sin(roll) * up, np.cos(roll) * up - np.sin(roll) * right
        light = f["light_distance"][:, None] * _direction(f["light_azimuth"], f["light_elevation"])

        def frame(v: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(_rotate_z(v, yaw).T, dtype=np.float32)

        self.distance = f["camera_distance"]
        self.origin = frame(f["camera_distance"][:, None] * view)
        self.forward = frame(forward)
        self.right = frame(right)
        self.up = frame(up)
        self.light = frame(light)
        self.sun = frame(_direction(f["sun_azimuth"], f["sun_elevation"]))
        self.light_energy = f["light_energy"].astype(np.float32)
        self.sun_energy = f["sun_energy"].astype(np.float32)
        self.ambient = f["ambient_energy"].astype(np.float32)


def render(
    instances: ShapeInstances,
    factors: Any,
    *,
    image_size: int = 32,
    background: Any = BACKGROUND,
    factor_space: FactorSpace | None = None,
) -> np.ndarray:
    """Render one image per (instance, factor row): g(z_i, s_i).

    Parameters
    ----------
    instances : ShapeInstances
        n instances (repeat rows with :meth:`ShapeInstances.take` to render
        an object several times).
    factors : array (n, 13) or mapping {factor name: scalar or (n,) array}
        Nuisance factors s in the order of :func:`shapes_factor_space`;
        missing names in a mapping take their defaults.
    image_size : int
        Side of the square image in pixels (32 default, 64 available).
    background : RGB triple in [0, 1]
        Plain background colour.
    factor_space : FactorSpace, optional
        Ranges the factors must respect: the world's (default, where labels
        are preserved) or a narrowing of them.

    Returns
    -------
    ndarray of float32, shape (n, 3, image_size, image_size), values in [0, 1]
    """
    if not isinstance(instances, ShapeInstances):
        raise InputError(f"`instances` must be ShapeInstances; got {type(instances).__name__}.")
    space = check_world_space(factor_space)
    s = space.to_array(factors, n=len(instances) if isinstance(factors, Mapping) else None)
    if len(s) != len(instances):
        raise InputError(f"`factors` must have one row per instance ({len(instances)}); got {len(s)}.")
    size = check_image_size(image_size)
    bg = check_background(background).astype(np.float32)
    return render_unchecked(instances, s, size, bg)


@functools.lru_cache(maxsize=8)
def _pixel_grid(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pixel centres from the image centre outwards: image-plane coordinates ``(px, py)`` (float32),
    the pixel's row-major index and ``px^2 + py^2`` (ascending, as float64).

    A render's rays are a prefix of this order (those with ``px^2 + py^2`` below its reach).
    """
    grid = ((np.arange(size) + 0.5) / size * 2.0 - 1.0) * np.tan(np.radians(HALF_FOV_DEG))
    px = np.tile(grid, size).astype(np.float32)
    py = np.repeat(-grid, size).astype(np.float32)
    radius2 = px * px + py * py
    outwards = np.argsort(radius2, kind="stable")
    arrays = (px[outwards], py[outwards], outwards, radius2[outwards].astype(np.float64))
    for a in arrays:
        a.flags.writeable = False
    return arrays


def render_unchecked(instances: ShapeInstances, s: np.ndarray, size: int, bg: np.ndarray) -> np.ndarray:
    """:func:`render` for inputs already validated (factors (n, 13) inside the world's ranges).

    The renders are cast in blocks of at most 64K rays (renders times
    pixels); every ray's arithmetic is the same whatever its block, so the
    images do not depend on the batch.
    """
    # group the renders by class, so that each class's rays form one slice of a block
    order = np.argsort(instances.class_id, kind="stable")
    n = len(order)
    sorted_instances = instances.take(order)
    scene = _Scene(s[order])
    # a ray through (px, py) makes an angle with tan^2 = px^2 + py^2 with the
    # view axis; it can meet the unit sphere (which holds the object) only if
    # that angle is below asin(1 / distance)
    reach = (1.0 + 1e-4) / (scene.distance**2 - 1.0)
    objects = _Objects(sorted_instances, order)
    out = np.empty((n, 3, size, size), dtype=np.float32)
    out[:] = bg[:, None, None]
    per_block = max(1, _RAYS_PER_CHUNK // (size * size))
    for start in range(0, n, per_block):
        _cast_block(slice(start, min(start + per_block, n)), out=out, scene=scene, objects=objects, reach=reach, size=size)
    return out


class _Objects:
    """Per-render object attributes as float32 (k, n) arrays, class-sorted, and each render's output row."""

    def __init__(self, instances: ShapeInstances, row: np.ndarray) -> None:
        self.row = row
        self.class_id = instances.class_id
        self.scale = np.ascontiguousarray(instances.scale.T, dtype=np.float32)
        self.params = np.ascontiguousarray(instances.params.T, dtype=np.float32)
        self.colour = np.ascontiguousarray(instances.colour.T, dtype=np.float32)


def _cast_block(rows: slice, *, out: np.ndarray, scene: _Scene, objects: _Objects, reach: np.ndarray, size: int) -> None:
    """Cast the rays of (class-sorted) renders ``rows`` and write their hit pixels into ``out`` ``(n, 3, size, size)``.

    The rays are in render order (within a render, from the image centre
    outwards) and the renders class-sorted, so each render's rays, and each
    class's, form one slice; per-render values are spread over them with
    ``np.repeat`` (far faster than a gather).
    """
    px_all, py_all, pixel_all, radius2 = _pixel_grid(size)
    counts = np.searchsorted(radius2, reach[rows], side="left")  # pixels with radius2 < reach
    ray_start = np.concatenate([[0], np.cumsum(counts)])
    if ray_start[-1] == 0:
        return
    render_idx = np.repeat(np.arange(len(counts)), counts)
    outwards = np.arange(ray_start[-1]) - ray_start[render_idx]  # each ray's place in its render's prefix
    px, py, pixel_idx = px_all[outwards], py_all[outwards], pixel_all[outwards]

    def per_ray(values: np.ndarray, renders: slice = slice(None)) -> np.ndarray:
        return np.repeat(values[..., rows][..., renders], counts[renders], axis=-1)

    d = per_ray(scene.forward) + px * per_ray(scene.right) + py * per_ray(scene.up)
    d /= np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    o = per_ray(scene.origin)
    class_bounds = np.searchsorted(objects.class_id[rows], np.arange(len(SHAPE_CLASSES) + 1))
    t = np.full(d.shape[1], np.inf, dtype=np.float32)
    normal = np.zeros_like(d)
    for class_id, shape_class in enumerate(SHAPE_CLASSES):
        renders = slice(class_bounds[class_id], class_bounds[class_id + 1])
        rays = slice(ray_start[renders.start], ray_start[renders.stop])
        if rays.start == rays.stop:
            continue
        pose, axes = shape_class.pose, per_ray(objects.scale, renders)
        t[rays], n_canonical = shape_class.hit(
            pose.T @ o[:, rays] / axes, pose.T @ d[:, rays] / axes, per_ray(objects.params, renders)
        )
        normal[:, rays] = pose @ (n_canonical / axes)
    finite = np.isfinite(t)
    hit = np.flatnonzero(finite)
    hits_so_far = np.concatenate([[0], np.cumsum(finite)])
    hit_counts = hits_so_far[ray_start[1:]] - hits_so_far[ray_start[:-1]]

    def per_hit(values: np.ndarray) -> np.ndarray:
        return np.repeat(values[..., rows], hit_counts, axis=-1)

    colour = _shade(
        per_hit(objects.colour),
        [per_hit(v) for v in (scene.light, scene.sun, scene.light_energy, scene.sun_energy, scene.ambient)],
        np.take(o, hit, axis=1) + t[hit] * np.take(d, hit, axis=1),
        np.take(normal, hit, axis=1),
    )
    # out is (n, 3, size * size) flat: the hit pixels of channel 0, then 1 and 2, of their renders' rows
    pixels = size * size
    flat = out.reshape(-1)
    where = objects.row[render_idx[hit] + rows.start] * (3 * pixels) + pixel_idx[hit]
    for channel in range(3):
        flat[where + channel * pixels] = colour[channel]


def _shade(colour: np.ndarray, lights: list[np.ndarray], point: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """Lambertian colour (3, k) of surface points (3, k) with normals (3, k) under ``lights``."""
    light, sun, light_energy, sun_energy, ambient = lights
    n = normal / np.maximum(np.sqrt((normal * normal).sum(axis=0)), 1e-12)
    to_light = light - point
    dist2 = (to_light * to_light).sum(axis=0)
    point_term = np.maximum((n * to_light).sum(axis=0) / np.sqrt(dist2), 0.0) * (
        light_energy * (LIGHT_REFERENCE_DISTANCE**2 / dist2)
    )
    sun_term = np.maximum((n * sun).sum(axis=0), 0.0) * sun_energy
    sky_term = ambient * (SKY_BASE + (1.0 - SKY_BASE) * 0.5 * (1.0 + n[2]))
    return np.clip(colour * (sky_term + sun_term + point_term), 0.0, 1.0)
