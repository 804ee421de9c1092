"""Continuous factors and their product spaces: the search space of an examiner.

The adversarial examiner (Shu, Liu, Qiu, Yuille, AAAI 2020;
docs/examiner.md) searches a product space S = S_1 x ... x S_C of nuisance factors
(camera, light, ...) that a generator x = g(z, s) turns into inputs. A
:class:`Factor` is one closed interval ``[low, high]`` (optionally periodic,
for angles whose ends coincide); a :class:`FactorSpace` is their ordered
product. It validates values, samples uniformly, maps to and from the unit
cube (what Bayesian optimisation searches), discretises every factor into
equal bins (what the RL examiner's softmax policy chooses from), and can be
narrowed (:meth:`FactorSpace.restrict`), e.g. to train with camera elevation
limited to [-30, 30] degrees and plant a weakness an examiner should find.

The space is independent of any strategy that searches it (as Optuna's
distributions are of its samplers) and of any generator that renders it.
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

    def to_unit(self, values: Any) -> np.ndarray:
        """Map points of the box affinely onto ``[0, 1]^n_factors`` (inverse of :meth:`from_unit`).

        A factor with ``low == high`` maps to 0.
        """
        array = self.validate(values, "values")
        width = self.highs - self.lows
        return np.divide(array - self.lows, width, out=np.zeros_like(array), where=width > 0)

    def bin_centres(self, n_bins: int) -> np.ndarray:
        """Centres of ``n_bins`` equal bins per factor, shape ``(n_factors, n_bins)``.

        The RL examiner of Shu et al. (AAAI 2020, Sec. 4.2) discretises every
        factor into 100 bins and samples bin indices.
        """
        n_bins = check_int(n_bins, "n_bins", minimum=1)
        unit = (np.arange(n_bins) + 0.5) / n_bins
        return self.lows[:, None] + (self.highs - self.lows)[:, None] * unit[None, :]

    def from_bins(self, indices: Any, n_bins: int) -> np.ndarray:
        """Factor values at the centres of bin ``indices`` (ints ``(n, n_factors)``)."""
        n_bins = check_int(n_bins, "n_bins", minimum=1)
        idx = np.asarray(indices)
        if idx.ndim != 2 or idx.shape[1] != len(self) or not np.issubdtype(idx.dtype, np.integer):
            raise InputError(
                f"`indices` must be an integer array of shape (n, {len(self)}); "
                f"got {idx.dtype} with shape {idx.shape}."
            )
        if idx.size and (idx.min() < 0 or idx.max() >= n_bins):
            raise InputError(f"`indices` must lie in [0, {n_bins - 1}]; got {idx.min()}..{idx.max()}.")
        return self.from_unit((idx + 0.5) / n_bins)

    def to_bins(self, values: Any, n_bins: int) -> np.ndarray:
        """Index of the bin holding each value, shape ``(n, n_factors)``."""
        n_bins = check_int(n_bins, "n_bins", minimum=1)
        unit = self.to_unit(values)
        return np.minimum((unit * n_bins).astype(np.int64), n_bins - 1)

    def wrap(self, values: Any) -> np.ndarray:
        """Wrap periodic factors into their range and clip the others: ``(n, n_factors)``.

        Useful for strategies that step outside the box (local refinement of
        an acquisition function, CMA-ES).
        """
        array = check_array(values, "values", ndim=2)
        if array.shape[1] != len(self):
            raise InputError(f"`values` must have {len(self)} columns; got shape {array.shape}.")
        out = np.clip(array, self.lows, self.highs)
        for column, factor in enumerate(self.factors):
            width = factor.high - factor.low
            if factor.periodic and width > 0:
                out[:, column] = factor.low + np.mod(array[:, column] - factor.low, width)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FactorSpace:
        """Rebuild a space from :meth:`to_dict` output."""
        if not isinstance(data, Mapping) or not data:
            raise InputError("`data` must be a non-empty mapping of factor name -> factor fields.")
        return cls([Factor(**dict(fields)) for fields in data.values()])
