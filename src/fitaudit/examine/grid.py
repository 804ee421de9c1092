"""Grid search: the exact worst case of a grid of factor values.

Engstrom, Tran, Tsipras, Schmidt, Madry ("Exploring the landscape of
spatial robustness", ICML 2019, Sec. 3 and 5; docs/examiner.md#the-image-transform-generator) find
far more failures of image classifiers by trying every point of a grid of
rotations and translations (CIFAR-10: 31 rotations in [-30, 30] degrees x
5 x 5 translations of up to 3 px, 775 queries per image) than by random
draws or first-order attacks. On the grid's own space its worst case is
exact, which makes it the reference every other examiner is compared with
(``benchmarks/bench_examiner_images.py``).

The grid is the product of ``points[name]`` equally spaced values per factor
(both ends included; a periodic factor spanning its whole period leaves the
duplicate end out); a factor the grid does not name stays at its default
(the identity of the image-transform generator). The default grid
(``"auto"``) covers exactly the factors left free (those whose range is not
a single value): Engstrom's 31 rotations and 5 x 5 translations where those
are free, :data:`DEFAULT_POINTS` values of every other free factor; it is
refused, naming the free factors, when it would exceed
:data:`MAX_AUTO_POINTS` points (fix or narrow factors, or name the points). Each instance walks the
whole grid in its own order, an affine bijection ``k -> (a k + b) mod G``
of the lexicographic order drawn from the seed, so that T * q = G queries
visit every point exactly once, and a smaller budget samples the grid
without replacement. Beyond G queries the walk starts again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_int
from fitaudit.data.factors import FactorSpace
from fitaudit.examine.base import Examiner

#: Engstrom et al.'s grid, and the same grid with brightness and contrast added
GRIDS: dict[str, dict[str, int]] = {
    "engstrom": {"rotation": 31, "translation_x": 5, "translation_y": 5},
    "engstrom+photometric": {"rotation": 31, "translation_x": 5, "translation_y": 5, "brightness": 3, "contrast": 3},
}
#: points per free factor of the default grid, for factors without Engstrom's count
DEFAULT_POINTS = 5
#: largest default ("auto") grid: beyond it the free factors must be fixed, narrowed or given points
MAX_AUTO_POINTS = 10_000


def auto_points(space: FactorSpace) -> dict[str, int]:
    """The default grid: every free factor of ``space`` (Engstrom's counts for rotation and translations).

    Raises
    ------
    InputError
        When the space has no free factor, or the grid over its free
        factors would exceed :data:`MAX_AUTO_POINTS` points.
    """
    free = [f.name for f in space.factors if f.high > f.low]
    if not free:
        raise InputError("`examiner` grid: every factor is fixed; leave at least one factor free to grid.")
    spec = {name: GRIDS["engstrom"].get(name, DEFAULT_POINTS) for name in free}
    size = math.prod(spec.values())
    if size > MAX_AUTO_POINTS:
        counts = " x ".join(f"{n} {name}" for name, n in spec.items())
        raise InputError(
            f"`examiner` grid: the grid over the {len(free)} free factors ({counts}) has {size:,} points, more "
            f"than the {MAX_AUTO_POINTS:,} it grids by default; fix the factors that need no search (--factor "
            "NAME=VALUE, e.g. noise=0) or narrow them, or name the grid's points per factor "
            "(examiner_options={'points': {...}})."
        )
    return spec


def grid_points(space: FactorSpace, points: int | str | Mapping[str, int] = "auto") -> list[np.ndarray]:
    """The values of every factor of ``space`` on the grid ``points`` (one array per factor).

    Parameters
    ----------
    space : FactorSpace
    points : "auto", a preset of :data:`GRIDS`, int or mapping
        ``"auto"``: every free factor (:func:`auto_points`); an int: that
        many per factor; a mapping ``{factor: n}``: the factors not named
        stay at their default.
    """
    spec: dict[str, int]
    if isinstance(points, str):
        key = points.strip().lower()
        if key == "auto":
            spec = auto_points(space)
        elif key in GRIDS:
            spec = dict(GRIDS[key])
        else:
            raise InputError(f"`points` must be 'auto', one of {', '.join(GRIDS)}, an int or a mapping; got {points!r}.")
    elif isinstance(points, Mapping):
        spec = {str(k): check_int(v, f"points['{k}']", minimum=1) for k, v in points.items()}
    else:
        spec = dict.fromkeys(space.names, check_int(points, "points", minimum=1))
    unknown = sorted(set(spec) - set(space.names))
    if unknown:
        raise InputError(
            f"`points` names factor(s) {', '.join(unknown)} that the examined space does not search "
            f"(its factors: {', '.join(space.names)})."
        )
    values = []
    for factor in space.factors:
        n = spec.get(factor.name, 1)
        if n == 1 or factor.low == factor.high:
            values.append(np.array([factor.default]))
        elif factor.periodic:
            values.append(np.linspace(factor.low, factor.high, n, endpoint=False))
        else:
            values.append(np.linspace(factor.low, factor.high, n))
    return values


class GridExaminer(Examiner):
    """Every point of a grid, in a seeded order per instance (Engstrom et al., ICML 2019).

    Parameters
    ----------
    random_state : None, int, SeedSequence or Generator
        Draws every instance's order of the grid.
    points : "auto", "engstrom", "engstrom+photometric", int or mapping
        The grid (:func:`grid_points`); ``"engstrom"`` is 31 x 5 x 5 = 775
        points, ``"engstrom+photometric"`` adds 3 brightness x 3 contrast
        levels (6,975 points).
    queries_per_step : int, default 1
        Grid points proposed per instance at every step; ``steps =
        grid_size / queries_per_step`` visits the whole grid.

    Attributes
    ----------
    grid_size_ : int
        G, the number of grid points (after :meth:`start`).
    """

    name: ClassVar[str] = "grid"

    def __init__(self, *, random_state: Any = None, points: int | str | Mapping[str, int] = "auto",
                 queries_per_step: int = 1) -> None:
        super().__init__(random_state=random_state)
        if isinstance(points, Mapping):
            points = {str(k): check_int(v, f"points['{k}']", minimum=1) for k, v in points.items()}
        elif not isinstance(points, str):
            points = check_int(points, "points", minimum=1)
        self.points = points
        self.queries_per_step = check_int(queries_per_step, "queries_per_step", minimum=1)

    def _start(self) -> None:
        self._values = grid_points(self.space_, self.points)
        self._shape = tuple(len(v) for v in self._values)
        self.grid_size_ = int(np.prod(self._shape))
        g = self.grid_size_
        self._multiplier = np.ones(self.n_instances_, dtype=np.int64)
        self._offset = np.zeros(self.n_instances_, dtype=np.int64)
        for i in range(self.n_instances_):
            a = int(self.rng_.integers(1, g)) if g > 1 else 1
            while math.gcd(a, g) != 1:  # a bijection of 0..G-1 needs a coprime to G
                a = a % (g - 1) + 1
            self._multiplier[i], self._offset[i] = a, int(self.rng_.integers(0, g))
        self._asked = 0

    def _ask(self) -> np.ndarray:
        k = self._asked + np.arange(self.queries_per_step)
        # (a k + b) mod G without overflow: G and a are far below 2**31 for any grid that fits in memory
        flat = (self._multiplier[:, None] * (k[None, :] % self.grid_size_) + self._offset[:, None]) % self.grid_size_
        index = np.unravel_index(flat, self._shape)
        return np.stack([values[i] for values, i in zip(self._values, index)], axis=-1)

    def _tell(self, factors: np.ndarray, losses: np.ndarray) -> None:
        """The grid does not learn; the walk moves on."""
        self._asked += self.queries_per_step

    def grid(self) -> np.ndarray:
        """Every grid point in lexicographic order, ``(G, n_factors)`` (after :meth:`start`)."""
        self._check_started()
        mesh = np.meshgrid(*self._values, indexing="ij")
        return np.stack([m.ravel() for m in mesh], axis=-1)
