"""Vectorised ray casting against convex primitives (numpy, float32).

Every function takes ray origins ``o`` and directions ``d`` of shape
``(3, n)`` (component-major, so that each coordinate is contiguous;
directions need not be unit length: a point is ``o + t d``) and returns the
first hit ``t`` of shape ``(n,)`` (``inf`` on a miss) with the outward
surface normal there, shape ``(3, n)``, unnormalised.

Convex pieces are intersections of half-spaces and quadric regions,
computed as the intersection of parameter intervals ``[t_enter, t_exit]``
along the ray (the slab method, generalised); shapes that are not convex
are unions of convex pieces (:func:`first_hit`); the torus is found by
sphere tracing its signed distance. The camera is always outside every
object, so the first hit is the entry of the first non-empty interval.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_BIG = np.float32(1e9)
_TINY = np.float32(1e-9)
_REFINE_STEPS = 8


def _safe(x: np.ndarray) -> np.ndarray:
    """``x`` with values of magnitude below 1e-9 replaced by +-1e-9 (no division by zero); ``x`` itself when none is."""
    small = np.abs(x) < _TINY
    if not small.any():
        return x
    return np.where(small, np.where(x < 0, -_TINY, _TINY), x)


def _entry(t_enter: np.ndarray, t_exit: np.ndarray) -> np.ndarray:
    """Entry parameter where the interval is non-empty and ahead of the camera, else inf."""
    valid = (t_enter <= t_exit) & (t_enter > 0) & (t_enter < _BIG)
    return np.where(valid, t_enter, np.float32(np.inf)).astype(np.float32, copy=False)


def box(o: np.ndarray, d: np.ndarray, half: Sequence[np.ndarray | float]) -> tuple[np.ndarray, np.ndarray]:
    """Axis-aligned box ``|p_k| <= half[k]`` centred at the origin (slab method)."""
    t_enter = np.full(o.shape[1], -_BIG, dtype=np.float32)
    t_exit = np.full(o.shape[1], _BIG, dtype=np.float32)
    axis = np.zeros(o.shape[1], dtype=np.int8)
    for k in range(3):
        inv = 1.0 / _safe(d[k])
        t_a = (-half[k] - o[k]) * inv
        t_b = (half[k] - o[k]) * inv
        near = np.minimum(t_a, t_b)
        later = near > t_enter
        t_enter = np.where(later, near, t_enter)
        axis = np.where(later, np.int8(k), axis)
        t_exit = np.minimum(t_exit, np.maximum(t_a, t_b))
    normal = np.stack([np.where(axis == k, -np.sign(d[k]), 0.0) for k in range(3)]).astype(np.float32)
    return _entry(t_enter, t_exit), normal


def polytope(o: np.ndarray, d: np.ndarray, normals: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Convex polytope ``normals @ p <= offsets`` (normals (k, 3), offsets (k,), constants)."""
    n = o.shape[1]
    t_enter = np.full(n, -_BIG, dtype=np.float32)
    t_exit = np.full(n, _BIG, dtype=np.float32)
    face = np.zeros(n, dtype=np.int8)
    for j, (normal, offset) in enumerate(zip(normals, offsets)):
        denom = normal[0] * d[0] + normal[1] * d[1] + normal[2] * d[2]
        num = offset - (normal[0] * o[0] + normal[1] * o[1] + normal[2] * o[2])
        t = num / _safe(denom)
        entering = denom < 0
        later = entering & (t > t_enter)
        t_enter = np.where(later, t, t_enter)
        face = np.where(later, np.int8(j), face)
        # exiting faces bound the interval; a parallel face the ray is outside of empties it
        t_exit = np.where(entering, t_exit, np.minimum(t_exit, np.where(num < 0, -_BIG, t)))
    return _entry(t_enter, t_exit), np.take(normals.T, face, axis=1)


def ellipsoid(o: np.ndarray, d: np.ndarray, centre: Sequence[np.ndarray | float], radii: Sequence[np.ndarray | float]) -> tuple[np.ndarray, np.ndarray]:
    """Ellipsoid ``sum(((p - centre) / radii)^2) <= 1``."""
    oc = [(o[k] - centre[k]) / radii[k] for k in range(3)]
    dc = [d[k] / radii[k] for k in range(3)]
    a = dc[0] * dc[0] + dc[1] * dc[1] + dc[2] * dc[2]
    b = oc[0] * dc[0] + oc[1] * dc[1] + oc[2] * dc[2]
    c = oc[0] * oc[0] + oc[1] * oc[1] + oc[2] * oc[2] - 1.0
    disc = b * b - a * c
    t = (-b - np.sqrt(np.maximum(disc, 0.0))) / a
    t = np.where((disc >= 0) & (t > 0), t, np.float32(np.inf)).astype(np.float32, copy=False)
    t0 = np.where(np.isfinite(t), t, 0.0)
    normal = np.stack([(o[k] + t0 * d[k] - centre[k]) / (radii[k] * radii[k]) for k in range(3)])
    return t, normal.astype(np.float32, copy=False)


def capped_cylinder(
    o: np.ndarray, d: np.ndarray, radius: np.ndarray | float, half_length: np.ndarray | float, axis: int
) -> tuple[np.ndarray, np.ndarray]:
    """Cylinder of ``radius`` about coordinate ``axis`` through the origin, ``|p_axis| <= half_length``."""
    u, v = [k for k in range(3) if k != axis]
    a = d[u] * d[u] + d[v] * d[v]
    b = o[u] * d[u] + o[v] * d[v]
    c = o[u] * o[u] + o[v] * o[v] - np.float32(radius) * radius
    disc = b * b - a * c
    root = np.sqrt(np.maximum(disc, 0.0))
    a_safe = np.maximum(a, _TINY)
    inside_axis = c <= 0  # matters only for rays parallel to the axis
    parallel = a < _TINY
    side_in = np.where(parallel, np.where(inside_axis, -_BIG, _BIG), np.where(disc >= 0, (-b - root) / a_safe, _BIG))
    side_out = np.where(parallel, np.where(inside_axis, _BIG, -_BIG), np.where(disc >= 0, (-b + root) / a_safe, -_BIG))
    dz = _safe(d[axis])
    t_a = (-half_length - o[axis]) / dz
    t_b = (half_length - o[axis]) / dz
    cap_in = np.minimum(t_a, t_b)
    t_enter = np.maximum(side_in, cap_in)
    t_exit = np.minimum(side_out, np.maximum(t_a, t_b))
    t = _entry(t_enter, t_exit)
    on_cap = cap_in > side_in
    t0 = np.where(np.isfinite(t), t, 0.0)
    normal = np.empty_like(o)
    normal[u] = np.where(on_cap, 0.0, o[u] + t0 * d[u])
    normal[v] = np.where(on_cap, 0.0, o[v] + t0 * d[v])
    normal[axis] = np.where(on_cap, -np.sign(d[axis]), 0.0)
    return t, normal


def cone_z(o: np.ndarray, d: np.ndarray, apex: float, slope: float, z_low: float, z_high: float) -> tuple[np.ndarray, np.ndarray]:
    """Region ``x^2 + y^2 <= slope^2 (z - apex)^2`` with ``z_low <= z <= z_high``.

    With the apex at one end of the slab this is a cone. The quadric region
    along a ray is one interval (``a > 0``) or two rays (``a < 0``); each is
    cut by the slab and the earliest non-empty piece gives the hit.
    """
    k2 = np.float32(slope * slope)
    oz = o[2] - apex
    a = d[0] * d[0] + d[1] * d[1] - k2 * d[2] * d[2]
    b = o[0] * d[0] + o[1] * d[1] - k2 * oz * d[2]
    c = o[0] * o[0] + o[1] * o[1] - k2 * oz * oz
    disc = b * b - a * c
    root = np.sqrt(np.maximum(disc, 0.0))
    a_safe = _safe(a)
    r1 = (-b - root) / a_safe
    r2 = (-b + root) / a_safe
    lo_root, hi_root = np.minimum(r1, r2), np.maximum(r1, r2)
    dz = _safe(d[2])
    t_a = (z_low - o[2]) / dz
    t_b = (z_high - o[2]) / dz
    s_in, s_out = np.minimum(t_a, t_b), np.maximum(t_a, t_b)
    real = disc >= 0
    bounded = a > 0
    everywhere = ~real & ~bounded
    # the quadric region is [p1_in, p1_out] united with [p2_in, p2_out]
    p1_in = np.where(everywhere, -_BIG, np.where(real, np.where(bounded, lo_root, -_BIG), _BIG))
    p1_out = np.where(everywhere, _BIG, np.where(real, np.where(bounded, hi_root, lo_root), -_BIG))
    p2_in = np.where(real & ~bounded, hi_root, _BIG)
    best_t = _entry(np.maximum(p1_in, s_in), np.minimum(p1_out, s_out))
    best_cap = s_in > p1_in
    t2 = _entry(np.maximum(p2_in, s_in), s_out)
    second = t2 < best_t
    best_t = np.where(second, t2, best_t)
    best_cap = np.where(second, s_in > p2_in, best_cap)
    t0 = np.where(np.isfinite(best_t), best_t, 0.0)
    px, py, pz = (o[k] + t0 * d[k] for k in range(3))
    normal = np.stack(
        [
            np.where(best_cap, 0.0, px),
            np.where(best_cap, 0.0, py),
            np.where(best_cap, -np.sign(d[2]), -k2 * (pz - apex)),
        ]
    )
    return best_t, normal.astype(np.float32, copy=False)


def torus_z(o: np.ndarray, d: np.ndarray, major: np.ndarray, minor: np.ndarray, steps: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Torus about the z axis (per-ray radii, ``major + minor <= 1``) by sphere tracing.

    Tracing starts where the ray enters the torus's bounding slab
    ``|z| <= minor`` inside the unit sphere; rays that have not converged
    after ``steps`` steps graze the silhouette and count as misses.
    """
    length = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    unit = d / length
    b = o[0] * unit[0] + o[1] * unit[1] + o[2] * unit[2]
    c = o[0] * o[0] + o[1] * o[1] + o[2] * o[2] - 1.0
    disc = b * b - c
    root = np.sqrt(np.maximum(disc, 0.0))
    dz = _safe(unit[2])
    slab_a, slab_b = (-minor - o[2]) / dz, (minor - o[2]) / dz
    t = np.maximum(-b - root, np.minimum(slab_a, slab_b))
    t_far = np.minimum(-b + root, np.maximum(slab_a, slab_b))
    active = np.flatnonzero((disc > 0) & (t <= t_far))
    hit = np.zeros(o.shape[1], dtype=bool)
    ox, oy, oz = o[0][active], o[1][active], o[2][active]
    ux, uy, uz = unit[0][active], unit[1][active], unit[2][active]
    ta, far, big, small = t[active], t_far[active], major[active], minor[active]
    for step in range(steps):
        dist = np.hypot(np.hypot(ox + ta * ux, oy + ta * uy) - big, oz + ta * uz) - small
        ta += dist
        if step % 8 == 7 or step == steps - 1:
            done = dist < 2e-3
            hit[active[done]] = True
            t[active] = ta
            keep = ~done & (ta <= far)
            active = active[keep]
            ox, oy, oz, ux, uy, uz = ox[keep], oy[keep], oz[keep], ux[keep], uy[keep], uz[keep]
            ta, far, big, small = ta[keep], far[keep], big[keep], small[keep]
    # refine the converged rays: a grazing ray stops early within 2e-3 of the
    # surface; stepping on moves it onto the surface, or past it if it misses
    rays = np.flatnonzero(hit)
    unit_hit, big, small = np.take(unit, rays, axis=1), major[rays], minor[rays]
    t_hit = t[rays]
    p = np.take(o, rays, axis=1) + t_hit * unit_hit
    for _ in range(_REFINE_STEPS):
        dist = np.hypot(np.hypot(p[0], p[1]) - big, p[2]) - small
        t_hit += dist
        p += dist * unit_hit
    t[rays] = t_hit
    hit[rays] = np.abs(np.hypot(np.hypot(p[0], p[1]) - big, p[2]) - small) < 1e-4
    t = np.where(hit, t, np.float32(np.inf))
    p = o + np.where(hit, t, 0.0) * unit
    radial = np.maximum(np.hypot(p[0], p[1]), _TINY)
    scale = 1.0 - major / radial
    normal = np.stack([p[0] * scale, p[1] * scale, p[2]])
    return (t / length).astype(np.float32), normal.astype(np.float32)


def prisms_z(o: np.ndarray, d: np.ndarray, polygons: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Union of convex prisms ``|z| <= 1`` over 2D polygons ``normals @ (x, y) <= offsets``.

    The slab interval is shared; each polygon adds its side planes
    (normals (k, 2), offsets (k,)).
    """
    dz = _safe(d[2])
    t_a, t_b = (-1.0 - o[2]) / dz, (1.0 - o[2]) / dz
    slab_in, slab_out = np.minimum(t_a, t_b), np.maximum(t_a, t_b)
    best_t = np.full(o.shape[1], np.inf, dtype=np.float32)
    best_normal = np.zeros_like(o)
    best_normal[2] = -np.sign(d[2])
    for normals, offsets in polygons:
        t_enter, t_exit = slab_in, slab_out
        side = np.full(o.shape[1], -1, dtype=np.int8)
        for j, (normal, offset) in enumerate(zip(normals, offsets)):
            denom = normal[0] * d[0] + normal[1] * d[1]
            t = (offset - (normal[0] * o[0] + normal[1] * o[1])) / _safe(denom)
            later = (denom < 0) & (t > t_enter)
            t_enter = np.where(later, t, t_enter)
            side = np.where(later, np.int8(j), side)
            t_exit = np.where(denom < 0, t_exit, np.minimum(t_exit, t))
        t_piece = _entry(t_enter, t_exit)
        closer = t_piece < best_t
        best_t = np.where(closer, t_piece, best_t)
        wall = closer & (side >= 0)
        side_normal = normals[np.maximum(side, 0)].T
        best_normal[0] = np.where(wall, side_normal[0], np.where(closer, 0.0, best_normal[0]))
        best_normal[1] = np.where(wall, side_normal[1], np.where(closer, 0.0, best_normal[1]))
        best_normal[2] = np.where(wall, 0.0, np.where(closer, -np.sign(d[2]), best_normal[2]))
    return best_t, best_normal


def rotated(hit_result: tuple[np.ndarray, np.ndarray], rotation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Map the normal of a hit computed in a rotated frame back: ``n -> rotation @ n``."""
    t, normal = hit_result
    return t, (rotation @ normal).astype(np.float32, copy=False)


def first_hit(hits: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Union of pieces: the nearest hit and its normal."""
    t, normal = hits[0]
    for t_piece, n_piece in hits[1:]:
        closer = t_piece < t
        t = np.where(closer, t_piece, t)
        normal = np.where(closer, n_piece, normal)
    return t, normal
