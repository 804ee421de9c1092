"""The Shapes renderer before issue 24's speed-up, kept verbatim as the reference of the fast one.

``reference_render(instances, s, size, bg)`` is ``render_unchecked`` of
``fitaudit.data.shapes.render`` at commit c6fdcc8; the
tests assert that the current renderer gives the same images bit for bit.
It shares the camera set-up (``_Scene``), the shading (``_shade``), the geometry and the classes with
the library: the speed-up changed no arithmetic there (in the geometry only
how two gathers are indexed; checked once against the whole package at
c6fdcc8 on 14,000 renders, identical).
"""

from __future__ import annotations

import numpy as np

from fitaudit.data.shapes.classes import SHAPE_CLASSES
from fitaudit.data.shapes.instances import ShapeInstances
from fitaudit.data.shapes.render import HALF_FOV_DEG, _Scene, _shade

_RAYS_PER_CHUNK = 1 << 16


def reference_render(instances: ShapeInstances, s: np.ndarray, size: int, bg: np.ndarray) -> np.ndarray:
    """The renderer as it was before the speed-up of issue 24 (commit c6fdcc8), kept verbatim."""
    # group the renders by class, so that each class's rays form one slice
    order = np.argsort(instances.class_id, kind="stable")
    instances = instances.take(order)
    n = len(instances)
    scene = _Scene(s[order])
    grid = ((np.arange(size) + 0.5) / size * 2.0 - 1.0) * np.tan(np.radians(HALF_FOV_DEG))
    px = np.tile(grid, size).astype(np.float32)
    py = np.repeat(-grid, size).astype(np.float32)
    # a ray through (px, py) makes an angle with tan^2 = px^2 + py^2 with the
    # view axis; it can meet the unit sphere (which holds the object) only if
    # that angle is below asin(1 / distance)
    radius2 = px * px + py * py
    reach = (1.0 + 1e-4) / (scene.distance**2 - 1.0)
    image = np.empty((n, size * size, 3), dtype=np.float32)
    image[:] = bg
    chunk = max(1, _RAYS_PER_CHUNK // (size * size))
    for start in range(0, n, chunk):
        rows = slice(start, min(start + chunk, n))
        mask = radius2[None, :] < reach[rows, None]
        counts = mask.sum(axis=1)
        render_idx, pixel_idx = np.nonzero(mask)
        if render_idx.size == 0:
            continue
        render_idx += start

        def per_ray(values: np.ndarray, rows: slice = rows, counts: np.ndarray = counts) -> np.ndarray:
            return np.repeat(values[..., rows], counts, axis=-1)

        d = per_ray(scene.forward) + px[pixel_idx] * per_ray(scene.right) + py[pixel_idx] * per_ray(scene.up)
        d /= np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        o = per_ray(scene.origin)
        ray_class = per_ray(instances.class_id)
        bounds = np.searchsorted(ray_class, np.arange(len(SHAPE_CLASSES) + 1))
        t = np.full(d.shape[1], np.inf, dtype=np.float32)
        normal = np.zeros_like(d)
        scale = per_ray(instances.scale.T.astype(np.float32))
        params = per_ray(instances.params.T.astype(np.float32))
        for class_id, shape_class in enumerate(SHAPE_CLASSES):
            rays = slice(bounds[class_id], bounds[class_id + 1])
            if rays.start == rays.stop:
                continue
            pose, axes = shape_class.pose, scale[:, rays]
            t[rays], n_canonical = shape_class.hit(pose.T @ o[:, rays] / axes, pose.T @ d[:, rays] / axes, params[:, rays])
            normal[:, rays] = pose @ (n_canonical / axes)
        hit = np.isfinite(t)
        colour = _shade(
            per_ray(instances.colour.T.astype(np.float32))[:, hit],
            [per_ray(v)[..., hit] for v in (scene.light, scene.sun, scene.light_energy, scene.sun_energy, scene.ambient)],
            o[:, hit] + t[hit] * d[:, hit],
            normal[:, hit],
        )
        image[render_idx[hit], pixel_idx[hit]] = colour.T
    out = np.empty((n, 3, size, size), dtype=np.float32)
    out[order] = image.reshape(n, size, size, 3).transpose(0, 3, 1, 2)
    return out

