"""The grid examiner (Engstrom et al., ICML 2019): the exact worst case of its grid."""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.data.factors import Factor, FactorSpace
from fitaudit.data.generators import CallableGenerator
from fitaudit.data.transforms import image_factor_space
from fitaudit.examine import examine, get_examiner
from fitaudit.examine.grid import DEFAULT_POINTS, GridExaminer, grid_points

# Engstrom et al.'s space (rotation [-30, 30], translations [-0.1, 0.1]), wider than the photo-calibrated defaults
SPACE = image_factor_space({"rotation": (-30, 30), "translation_x": (-0.1, 0.1), "translation_y": (-0.1, 0.1)})
NAMES = SPACE.names
LABELS = np.array([0, 1, 0])
#: the planted worst case of each instance: (rotation, translation_x, translation_y), on the grid
PLANTED = np.array([[14.0, -0.05, 0.1], [-30.0, 0.0, 0.05], [4.0, 0.1, -0.1]])


def render(instances: np.ndarray, factors: np.ndarray) -> np.ndarray:
    return np.column_stack([factors, np.asarray(instances, dtype=float)])


def true_logit(x: np.ndarray) -> np.ndarray:
    """High everywhere, a sharp dip at the planted point, a shallow wide dip (a decoy) elsewhere."""
    i = x[:, -1].astype(int)
    r, tx, ty = x[:, NAMES.index("rotation")], x[:, NAMES.index("translation_x")], x[:, NAMES.index("translation_y")]
    d2 = ((r - PLANTED[i, 0]) / 1.0) ** 2 + ((tx - PLANTED[i, 1]) / 0.01) ** 2 + ((ty - PLANTED[i, 2]) / 0.01) ** 2
    decoy = ((r + 20 - 40 * (i == 1)) / 15) ** 2 + (tx / 0.2) ** 2
    return 4.0 - 7.0 * np.exp(-d2) - 2.0 * np.exp(-decoy)


def classify(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    out = np.zeros((len(x), 2))
    out[np.arange(len(x)), LABELS[x[:, -1].astype(int)]] = true_logit(x)
    return out


def test_engstrom_grid_on_the_image_space():
    values = grid_points(SPACE, "engstrom")
    sizes = {name: len(v) for name, v in zip(NAMES, values)}
    assert sizes["rotation"] == 31 and sizes["translation_x"] == sizes["translation_y"] == 5
    assert np.prod(list(sizes.values())) == 775
    np.testing.assert_allclose(np.diff(values[NAMES.index("rotation")]), 2.0)
    assert values[NAMES.index("contrast")].tolist() == [1.0]  # not on the grid: the identity
    assert np.prod([len(v) for v in grid_points(SPACE, "engstrom+photometric")]) == 775 * 9
    rotation_and_translations = SPACE.restrict(**{n: (f.default, f.default) for n, f in zip(NAMES, SPACE.factors)
                                                  if n not in ("rotation", "translation_x", "translation_y")})
    assert np.prod([len(v) for v in grid_points(rotation_and_translations, "auto")]) == 775


def test_auto_grid_covers_exactly_the_free_factors():
    """Translations fixed, rotation and brightness free: the default grid is over those two, nothing else."""
    space = image_factor_space({name: f.default for name, f in zip(NAMES, SPACE.factors)
                                if name not in ("rotation", "brightness")})
    values = grid_points(space, "auto")
    sizes = {name: len(v) for name, v in zip(NAMES, values)}
    assert sizes["rotation"] == 31 and sizes["brightness"] == DEFAULT_POINTS
    assert all(n == 1 for name, n in sizes.items() if name not in ("rotation", "brightness"))
    only_scale = image_factor_space({name: f.default for name, f in zip(NAMES, SPACE.factors) if name != "scale"})
    assert [len(v) for v in grid_points(only_scale, "auto")] == [1] * NAMES.index("scale") + [DEFAULT_POINTS] + [1] * (
        len(NAMES) - NAMES.index("scale") - 1)
    # every factor free: far more than the default grid's maximum, refused with the free factors named
    with pytest.raises(InputError, match=r"grid over the 14 free factors \(5 flip x 31 rotation x 5 translation_x.*fix the factors"):
        grid_points(SPACE, "auto")
    fixed = image_factor_space({name: f.default for name, f in zip(NAMES, SPACE.factors)})
    with pytest.raises(InputError, match="every factor is fixed"):
        grid_points(fixed, "auto")


def test_every_instance_visits_every_point_exactly_once():
    examiner = GridExaminer(random_state=3, points="engstrom", queries_per_step=25)
    examiner.start(SPACE, 4)
    asks = []
    for _ in range(31):
        factors = examiner.ask()
        asks.append(factors)
        examiner.tell(factors, np.zeros(factors.shape[:2]))
    visited = np.concatenate(asks, axis=1)  # (4, 775, n_factors)
    grid = {tuple(row) for row in examiner.grid()}
    assert len(grid) == 775
    for i in range(4):
        assert {tuple(row) for row in visited[i]} == grid and len(visited[i]) == 775
    assert not np.array_equal(visited[0], visited[1])  # each instance has its own order


def test_finds_the_planted_worst_case_of_a_toy_model():
    generator = CallableGenerator(render, factor_space=SPACE, labels=LABELS, name="toy")
    result = examine(classify, generator, examiner="grid", steps=31,
                     examiner_options={"queries_per_step": 25, "points": "engstrom"},
                     n_reference=0, weakness=False, random_state=0)
    assert result.n_model_queries == 3 * 775
    columns = [NAMES.index(n) for n in ("rotation", "translation_x", "translation_y")]
    np.testing.assert_allclose(result.extreme_factors[:, columns], PLANTED, atol=1e-9)
    # the exact worst case: brute force over every grid point
    examiner = GridExaminer(points="engstrom")
    examiner.start(SPACE, 1)
    grid = examiner.grid()
    for i in range(3):
        logits = classify(render(np.full(len(grid), i), grid))
        z = np.exp(logits - logits.max(axis=1, keepdims=True))
        prob = (z / z.sum(axis=1, keepdims=True))[:, LABELS[i]]
        assert result.min_true_class_probability[i] == pytest.approx(prob.min(), rel=1e-9)


def test_periodic_fixed_and_bad_points():
    space = FactorSpace([Factor("azimuth", 0.0, 360.0, 0.0, "deg", periodic=True), Factor("d", 1.0, 1.0, 1.0, "u")])
    values = grid_points(space, 4)
    assert values[0].tolist() == [0.0, 90.0, 180.0, 270.0] and values[1].tolist() == [1.0]
    with pytest.raises(InputError, match="`points` names factor\\(s\\) rotation, translation_x, translation_y that the examined space"):
        grid_points(space, "engstrom")
    with pytest.raises(InputError, match="`points` must be 'auto'"):
        grid_points(space, "fine")
    with pytest.raises(InputError, match="`points\\['azimuth'\\]` must be a positive integer"):
        get_examiner("grid", points={"azimuth": 0})
