"""Nuisance factors of the Shapes world: names, units, ranges, defaults.

The adversarial examiner (Shu, Liu, Qiu, Yuille, AAAI 2020;
docs/examiner.md) searches a product space S of continuous factors. The paper
rendered ShapeNet objects in Blender under camera and lighting factors;
:func:`shapes_factor_space` is this world's counterpart. Every factor is a
closed interval ``[low, high]``; a :class:`FactorSpace` validates values
against those intervals, samples uniformly inside them and can be narrowed
(:meth:`FactorSpace.restrict`), e.g. to train with camera elevation limited
to [-30, 30] degrees and plant a weakness the examiner should find.

Units: angles in degrees; lengths in object radii (every object is scaled so
that it fits inside the unit sphere); energies are dimensionless
multipliers of the object's surface colour.
"""

from __future__ import annotations

from typing import Any

from fitaudit._errors import InputError
from fitaudit.data.factors import Factor, FactorSpace

__all__ = ["SHAPES_FACTORS", "Factor", "FactorSpace", "check_world_space", "shapes_factor_space"]


#: the world's factors (modelled on the paper's table, docs/examiner.md#the-papers-factor-space)
SHAPES_FACTORS: tuple[Factor, ...] = (
    Factor("object_rotation", 0.0, 360.0, 0.0, "deg", True, "yaw of the object about the vertical axis"),
    Factor("camera_distance", 3.0, 6.0, 4.0, "radii", False, "camera to object centre"),
    Factor("camera_azimuth", 0.0, 360.0, 30.0, "deg", True, "camera position around the vertical axis"),
    Factor("camera_elevation", -90.0, 90.0, 20.0, "deg", False, "camera height angle; +-90 looks straight down/up"),
    Factor("camera_roll", 0.0, 360.0, 0.0, "deg", True, "rotation of the image about the viewing axis"),
    Factor("light_energy", 0.3, 1.0, 0.8, "energy", False, "point light intensity at distance 4"),
    Factor("light_distance", 4.0, 10.0, 5.0, "radii", False, "point light to object centre (inverse-square falloff)"),
    Factor("light_azimuth", 0.0, 360.0, 60.0, "deg", True, "point light position around the vertical axis"),
    Factor("light_elevation", -90.0, 90.0, 40.0, "deg", False, "point light height angle"),
    Factor("sun_energy", 0.0, 1.0, 0.5, "energy", False, "directional light intensity"),
    Factor("sun_azimuth", 0.0, 360.0, 200.0, "deg", True, "direction the sunlight comes from, around the vertical"),
    Factor("sun_elevation", -90.0, 90.0, 50.0, "deg", False, "sun height angle"),
    Factor("ambient_energy", 0.45, 0.85, 0.6, "energy", False, "sky/ground hemisphere light (never zero, so shading always shows the shape)"),
)


def shapes_factor_space() -> FactorSpace:
    """The full factor space of the Shapes world (13 factors).

    ======================  ==============  ======  =========================================
    factor                  range           unit    meaning
    ======================  ==============  ======  =========================================
    object_rotation         [0, 360]        deg     yaw of the object
    camera_distance         [3, 6]          radii   camera to object centre
    camera_azimuth          [0, 360]        deg     camera around the vertical axis
    camera_elevation        [-90, 90]       deg     +-90: straight down / up
    camera_roll             [0, 360]        deg     image rotation about the view axis
    light_energy            [0.3, 1]        energy  point light (paper: [0.3, 1])
    light_distance          [4, 10]         radii   point light, inverse-square falloff
    light_azimuth           [0, 360]        deg     point light direction
    light_elevation         [-90, 90]       deg
    sun_energy              [0, 1]          energy  directional light
    sun_azimuth             [0, 360]        deg
    sun_elevation           [-90, 90]       deg
    ambient_energy          [0.45, 0.85]      energy  hemisphere sky light, never zero
    ======================  ==============  ======  =========================================

    The paper's nine examined factors are the point light's four, the
    camera's four and the sun energy; ``object_rotation``, the sun direction
    (fixed at random in the paper) and the ambient term complete the scene.
    """
    return FactorSpace(SHAPES_FACTORS)


def check_world_space(factor_space: Any, name: str = "factor_space") -> FactorSpace:
    """``factor_space`` if it is the world's space or a narrowing of it (``None``: the world's)."""
    world = shapes_factor_space()
    if factor_space is None:
        return world
    if not isinstance(factor_space, FactorSpace) or factor_space.names != world.names:
        raise InputError(
            f"`{name}` must be shapes_factor_space() or a restriction of it "
            "(shapes_factor_space().restrict(...))."
        )
    world.restrict(**{f.name: (f.low, f.high) for f in factor_space.factors})  # inside the world's ranges
    return factor_space
