"""Nuisance factors of the Shapes world: names, units, ranges, defaults.

The adversarial examiner (Shu, Liu, Qiu, Yuille, AAAI 2020; METHODS.md
section 2) searches a product space S of continuous factors. The paper
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

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_array, check_int
from fitaudit.random import check_random_state


@dataclasses.dataclass(frozen=True)
class Factor:
    """One continuous factor ``low <= value <= high``.

    Attributes
    ----------
    name : str
        Identifier (a keyword of the renderer).
    low, high : float
        Inclusive range.
    default : float
        Value used when the factor is not given.
    unit : str
        ``"deg"``, ``"radii"`` or ``"energy"``.
    periodic : bool
        An angle whose ends coincide (0 and 360 degrees); search strategies
        may wrap it around.
    description : str
        One line for people.
    """

    name: str
    low: float
    high: float
    default: float
    unit: str
    periodic: bool = False
    description: str = ""

    def __post_init__(self) -> None:
        if not (np.isfinite(self.low) and np.isfinite(self.high) and self.low <= self.high):
            raise InputError(
                f"factor `{self.name}` needs finite bounds low <= high; got [{self.low}, {self.high}]."
            )
        if not self.low <= self.default <= self.high:
            raise InputError(
                f"factor `{self.name}`: default {self.default:g} is outside "
                f"[{self.low:g}, {self.high:g}]."
            )


class FactorSpace:
    """An ordered product of :class:`Factor` intervals.

    Values travel as arrays of shape ``(n, n_factors)`` in :attr:`names`
    order, or as a mapping ``{name: scalar or (n,) array}`` where missing
    factors take their defaults (:meth:`to_array`).

    Parameters
    ----------
    factors : sequence of Factor
        Distinct names.
    """

    def __init__(self, factors: Sequence[Factor]) -> None:
        names = [f.name for f in factors]
        if len(set(names)) != len(names):
            raise InputError(f"`factors` must have distinct names; got {names}.")
        if not names:
            raise InputError("`factors` must hold at least one factor.")
        self.factors: tuple[Factor, ...] = tuple(factors)

    @property
    def names(self) -> list[str]:
        """Factor names, in array column order."""
        return [f.name for f in self.factors]

    @property
    def lows(self) -> np.ndarray:
        """Lower bounds, shape (n_factors,)."""
        return np.array([f.low for f in self.factors])

    @property
    def highs(self) -> np.ndarray:
        """Upper bounds, shape (n_factors,)."""
        return np.array([f.high for f in self.factors])

    @property
    def defaults(self) -> np.ndarray:
        """Default values, shape (n_factors,)."""
        return np.array([f.default for f in self.factors])

    def __len__(self) -> int:
        return len(self.factors)

    def __getitem__(self, name: str) -> Factor:
        for factor in self.factors:
            if factor.name == name:
                return factor
        raise InputError(f"unknown factor {name!r}; the factors are {', '.join(self.names)}.")

    def __repr__(self) -> str:
        parts = ", ".join(f"{f.name}=[{f.low:g}, {f.high:g}] {f.unit}" for f in self.factors)
        return f"FactorSpace({parts})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FactorSpace) and self.factors == other.factors

    def __hash__(self) -> int:
        return hash(self.factors)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description of every factor."""
        return {f.name: dataclasses.asdict(f) for f in self.factors}

    def restrict(self, **ranges: tuple[float, float]) -> FactorSpace:
        """A narrower space: ``restrict(camera_elevation=(-30, 30))``.

        Each new range must lie inside the current one (the renderer is only
        label-preserving inside the world's ranges). A default outside the
        new range moves to its nearest end.
        """
        new = []
        for factor in self.factors:
            if factor.name not in ranges:
                new.append(factor)
                continue
            bounds = ranges[factor.name]
            try:
                low, high = (float(b) for b in bounds)
            except (TypeError, ValueError) as exc:
                raise InputError(
                    f"`{factor.name}` must be a (low, high) pair of numbers; got {bounds!r}."
                ) from exc
            if not (factor.low <= low <= high <= factor.high):
                raise InputError(
                    f"`{factor.name}` range must satisfy {factor.low:g} <= low <= high <= "
                    f"{factor.high:g}; got ({low:g}, {high:g})."
                )
            default = min(max(factor.default, low), high)
            new.append(dataclasses.replace(factor, low=low, high=high, default=default))
        unknown = sorted(set(ranges) - set(self.names))
        if unknown:
            raise InputError(
                f"unknown factor(s) {', '.join(unknown)}; the factors are {', '.join(self.names)}."
            )
        return FactorSpace(new)

    def validate(self, values: Any, name: str = "factors") -> np.ndarray:
        """Check an ``(n, n_factors)`` array against the ranges; return it as float64.

        Raises
        ------
        InputError
            Naming the first factor with a value outside its range.
        """
        array = check_array(values, name, ndim=2)
        if array.shape[1] != len(self):
            raise InputError(
                f"`{name}` must have {len(self)} columns ({', '.join(self.names)}); "
                f"got shape {array.shape}."
            )
        for column, factor in enumerate(self.factors):
            col = array[:, column]
            # tolerance for values that went through float32 and back
            slack = 1e-6 * max(1.0, abs(factor.low), abs(factor.high))
            bad = (col < factor.low - slack) | (col > factor.high + slack)
            if np.any(bad):
                value = col[np.argmax(bad)]
                raise InputError(
                    f"factor `{factor.name}` must be in [{factor.low:g}, {factor.high:g}] "
                    f"{factor.unit}; got {value:g}."
                )
        return np.clip(array, self.lows, self.highs)

    def to_array(self, values: Mapping[str, Any] | np.ndarray | Sequence[Any], n: int | None = None) -> np.ndarray:
        """Turn a mapping (missing factors -> defaults) or an array into ``(n, n_factors)``.

        Scalars in the mapping broadcast to ``n`` rows (``n`` defaults to the
        length of the longest array in the mapping, or 1).
        """
        if not isinstance(values, Mapping):
            return self.validate(values)
        unknown = sorted(set(values) - set(self.names))
        if unknown:
            raise InputError(
                f"unknown factor(s) {', '.join(unknown)}; the factors are {', '.join(self.names)}."
            )
        columns = {k: np.atleast_1d(np.asarray(v, dtype=float)) for k, v in values.items()}
        lengths = {len(v) for v in columns.values() if len(v) != 1}
        if len(lengths) > 1:
            raise InputError(f"factor arrays must have one common length; got lengths {sorted(lengths)}.")
        rows = check_int(n, "n", minimum=1) if n is not None else (lengths.pop() if lengths else 1)
        out = np.tile(self.defaults, (rows, 1))
        for column, factor in enumerate(self.factors):
            if factor.name in columns:
                col = columns[factor.name]
                if col.ndim != 1 or len(col) not in (1, rows):
                    raise InputError(
                        f"factor `{factor.name}` must be a scalar or have {rows} values; got shape {col.shape}."
                    )
                out[:, column] = col
        return self.validate(out)

    def sample(self, n: int, *, random_state: Any = None) -> np.ndarray:
        """``n`` points drawn uniformly from the box, shape ``(n, n_factors)``."""
        n = check_int(n, "n", minimum=1)
        rng = check_random_state(random_state)
        return self.lows + (self.highs - self.lows) * rng.random((n, len(self)))

    def from_unit(self, unit: Any) -> np.ndarray:
        """Map points of ``[0, 1]^n_factors`` affinely onto the box."""
        u = check_array(unit, "unit", ndim=2, value_range=(0.0, 1.0))
        if u.shape[1] != len(self):
            raise InputError(f"`unit` must have {len(self)} columns; got shape {u.shape}.")
        return self.lows + (self.highs - self.lows) * u


#: the world's factors (modelled on the paper's table, METHODS.md section 2)
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
