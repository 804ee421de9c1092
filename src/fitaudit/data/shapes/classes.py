"""The object classes of the Shapes world and their per-instance proportions.

Each class is a canonical solid (in "canonical" coordinates, z up) plus a
per-instance parametrisation: an anisotropic scale (proportions) and up to
two shape parameters (arm thickness, tube radius, ...), each drawn
uniformly from a class-specific range chosen so that every instance still
looks like its class. After sampling, every instance is rescaled so that
its farthest surface point lies on the unit sphere (see
:mod:`fitaudit.data.shapes.instances`).

Known look-alike views (where a person could hesitate; the world's limits):
the cone seen from its base shows a flat disc, like a cylinder seen exactly
end-on; the pyramid seen from its base shows a flat square, like a cube
seen exactly face-on (or, with dim lighting, an octahedron seen along a
vertex axis); the dumbbell seen exactly end-on shows a ball; the
torus and the star seen edge-on are flat bars. Cones and pyramids lie on
their side (axis along x) so that their base views fall at mid camera
elevations rather than at the poles, which the uniform (azimuth, elevation)
box over-samples; the cube, octahedron and tetrahedron are tilted for the
same reason. Shading separates most of the rest (the hemisphere light
is never off, so curved surfaces always show a gradient).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from fitaudit.data.shapes import geometry

HitFunction = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclasses.dataclass(frozen=True)
class ShapeClass:
    """One object class.

    Attributes
    ----------
    name : str
    scale_ranges : three (low, high) pairs
        Ranges of the per-axis scale (x, y, z) of the canonical solid.
    param_ranges : tuple of (low, high)
        Ranges of the class's shape parameters (at most two).
    pose : ndarray (3, 3)
        Rotation from canonical to object coordinates, applied after the
        scale: an object point is ``pose @ (scale * canonical point)``.
    hit : callable
        ``hit(o, d, params) -> (t, normal)`` in canonical coordinates, with
        ``o``, ``d`` and ``normal`` of shape (3, n), ``params`` (2, n) and
        ``t`` (n,) (see :mod:`fitaudit.data.shapes.geometry`).
    """

    name: str
    scale_ranges: tuple[tuple[float, float], tuple[float, float], tuple[float, float]]
    param_ranges: tuple[tuple[float, float], ...]
    hit: HitFunction
    pose: np.ndarray = dataclasses.field(default_factory=lambda: np.eye(3, dtype=np.float32))


def _sphere(o: np.ndarray, d: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return geometry.ellipsoid(o, d, (0.0, 0.0, 0.0), (1.0, 1.0, 1.0))


def _cube(o: np.ndarray, d: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return geometry.box(o, d, (1.0, 1.0, 1.0))


def _cylinder(o: np.ndarray, d: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return geometry.capped_cylinder(o, d, 1.0, 1.0, axis=2)


# canonical z becomes object x: cones and pyramids lie on their side, so that
# their base views (which look flat) sit at mid elevations, not at the
# over-sampled poles of the (azimuth, elevation) box
_Z_TO_X = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0]], dtype=np.float32)


def _cone(o: np.ndarray, d: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Base disc of radius 1 at x = -1, apex at x = 1."""
    hit = geometry.cone_z(_Z_TO_X.T @ o, _Z_TO_X.T @ d, apex=1.0, slope=0.5, z_low=-1.0, z_high=1.0)
    return geometry.rotated(hit, _Z_TO_X)


_PYRAMID = (
    np.array([[2, 0, 1], [-2, 0, 1], [0, 2, 1], [0, -2, 1], [0, 0, -1]], dtype=np.float32) @ _Z_TO_X.T,
    np.ones(5, dtype=np.float32),
)
_OCTAHEDRON = (
    np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=np.float32),
    np.ones(8, dtype=np.float32),
)
_TETRAHEDRON = (
    -np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], dtype=np.float32),
    np.ones(4, dtype=np.float32),
)


def _pyramid(o: np.ndarray, d: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Square base at x = -1, apex at x = 1."""
    return geometry.polytope(o, d, *_PYRAMID)


def _octahedron(o: np.ndarray, d: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return geometry.polytope(o, d, *_OCTAHEDRON)


def _tetrahedron(o: np.ndarray, d: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return geometry.polytope(o, d, *_TETRAHEDRON)


def _torus(o: np.ndarray, d: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tube radius ``params[0]``, outer radius 1."""
    return geometry.torus_z(o, d, 1.0 - params[0], params[0])


def _cross(o: np.ndarray, d: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Three orthogonal bars of half-thickness ``params[0]`` (a 3D plus sign)."""
    w = params[0]
    return geometry.first_hit(
        [geometry.box(o, d, (1.0, w, w)), geometry.box(o, d, (w, 1.0, w)), geometry.box(o, d, (w, w, 1.0))]
    )


def _dumbbell(o: np.ndarray, d: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two balls of radius ``params[0]`` on a bar of radius ``params[1]`` along x."""
    ball, bar = params[0], params[1]
    return geometry.first_hit(
        [
            geometry.ellipsoid(o, d, (1.0 - ball, 0.0, 0.0), (ball, ball, ball)),
            geometry.ellipsoid(o, d, (ball - 1.0, 0.0, 0.0), (ball, ball, ball)),
            geometry.capped_cylinder(o, d, bar, 1.0 - ball, axis=0),
        ]
    )


def _frame_of(axis: np.ndarray) -> np.ndarray:
    """A rotation matrix whose third column is the unit vector ``axis``."""
    z = axis / np.linalg.norm(axis)
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    return np.stack([x, np.cross(z, x), z], axis=1).astype(np.float32)


_TETRAPOD_FRAMES = [_frame_of(np.array(v, dtype=float)) for v in ((1, 1, 1), (1, -1, -1), (-1, 1, -1), (-1, -1, 1))]


def _tetrapod(o: np.ndarray, d: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Four arms of radius ``params[0]`` from the centre to the corners of a tetrahedron."""
    hits = []
    for frame in _TETRAPOD_FRAMES:
        o_arm = frame.T @ o
        o_arm[2] -= 0.5
        hits.append(geometry.rotated(geometry.capped_cylinder(o_arm, frame.T @ d, params[0], 0.5, axis=2), frame))
    return geometry.first_hit(hits)


def _star_pieces(points: int = 5, inner: float = 0.45) -> list[tuple[np.ndarray, np.ndarray]]:
    """Convex kites (centre, inner vertex, tip, next inner vertex) of a 2D star, as half-planes."""
    pieces = []
    for i in range(points):
        tip_angle = np.pi / 2 + 2 * np.pi * i / points
        corners = [
            np.zeros(2),
            inner * np.array([np.cos(tip_angle - np.pi / points), np.sin(tip_angle - np.pi / points)]),
            np.array([np.cos(tip_angle), np.sin(tip_angle)]),
            inner * np.array([np.cos(tip_angle + np.pi / points), np.sin(tip_angle + np.pi / points)]),
        ]
        normals, offsets = [], []
        for a, b in zip(corners, corners[1:] + corners[:1]):
            edge = b - a
            normal = np.array([edge[1], -edge[0]])  # outward for counter-clockwise corners
            normal /= np.linalg.norm(normal)
            normals.append(normal)
            offsets.append(float(normal @ a))
        pieces.append((np.array(normals, dtype=np.float32), np.array(offsets, dtype=np.float32)))
    return pieces


_STAR = _star_pieces()


def _star(o: np.ndarray, d: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A five-pointed star extruded along z."""
    return geometry.prisms_z(o, d, _STAR)


def _rotation(x_deg: float, y_deg: float) -> np.ndarray:
    """Rotation about x by ``x_deg``, then about y by ``y_deg``."""
    a, b = np.radians(x_deg), np.radians(y_deg)
    rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
    return (ry @ rx).astype(np.float32)


# flat-faced solids are tilted so that their face-on views (a plain square or
# triangle) are not at the poles, which the uniform (azimuth, elevation) box
# over-samples: seen from straight above, the cube shows three faces
_TILT = _rotation(35.0, 30.0)

#: the classes, in label order
SHAPE_CLASSES: tuple[ShapeClass, ...] = (
    ShapeClass("sphere", ((1, 1), (0.88, 1.12), (0.88, 1.12)), (), _sphere),
    ShapeClass("cube", ((1, 1), (0.8, 1.2), (0.8, 1.2)), (), _cube, _TILT),
    ShapeClass("cylinder", ((1, 1), (1, 1), (0.8, 1.5)), (), _cylinder),
    ShapeClass("cone", ((0.75, 1.1), (1, 1), (1, 1)), (), _cone),
    ShapeClass("pyramid", ((0.65, 1.0), (0.85, 1.15), (1, 1)), (), _pyramid),
    ShapeClass("octahedron", ((1, 1), (0.85, 1.15), (1.0, 1.35)), (), _octahedron, _TILT),
    ShapeClass("tetrahedron", ((1, 1), (0.9, 1.1), (0.9, 1.1)), (), _tetrahedron, _TILT),
    ShapeClass("torus", ((1, 1), (1, 1), (1, 1)), ((0.22, 0.36),), _torus),
    ShapeClass("cross", ((1, 1), (0.85, 1.15), (0.85, 1.15)), ((0.2, 0.32),), _cross),
    ShapeClass("dumbbell", ((1, 1), (1, 1), (1, 1)), ((0.3, 0.4), (0.09, 0.14)), _dumbbell),
    ShapeClass("tetrapod", ((1, 1), (1, 1), (1, 1)), ((0.14, 0.2),), _tetrapod),
    ShapeClass("star", ((1, 1), (0.9, 1.1), (0.3, 0.45)), (), _star),
)

#: class names in label order
CLASS_NAMES: tuple[str, ...] = tuple(c.name for c in SHAPE_CLASSES)

#: maximum number of shape parameters of any class
N_SHAPE_PARAMS = 2
