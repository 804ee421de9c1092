"""One contract test over every examiner (as Optuna tests every sampler with one suite).

Every examiner in the registry, plus the RL examiner's sequential mode,
goes through the same checks: shapes, proposals inside the space,
determinism, replay of a tell history, reset by ``start``, and the errors
of bad input.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.data.factors import Factor, FactorSpace
from fitaudit.examine import Examiner, get_examiner, list_examiners

SPACE = FactorSpace(
    [
        Factor("azimuth", 0.0, 360.0, 10.0, "deg", periodic=True),
        Factor("energy", 0.3, 1.0, 0.5, "energy"),
        Factor("distance", -4.0, 9.0, 1.0, "radii"),
        Factor("fixed", 2.0, 2.0, 2.0, "energy"),
    ]
)
N_INSTANCES = 3
STEPS = 12  # > the 10 random start-up trials of Optuna's TPE and GP samplers

#: (registry name, constructor keyword arguments)
CASES: list[tuple[str, dict[str, Any]]] = [(name, {}) for name in list_examiners()] + [
    ("rl", {"update": "sequential", "batch_size": 4}),
    ("rl", {"batch_size": 4, "factor_order": ["distance", "fixed", "energy", "azimuth"]}),
    ("random", {"queries_per_step": 3}),
]
IDS = [name + ("-" + "-".join(f"{k}" for k in kw) if kw else "") for name, kw in CASES]
#: Optuna's GP sampler takes about a second per proposal on a busy machine: it runs
#: the replay test (which also checks shapes and determinism) only
FAST = [(case, i) for case, i in zip(CASES, IDS, strict=True) if case[0] != "optuna:gp"]


def make(name: str, kwargs: dict[str, Any], seed: Any = 0) -> Examiner:
    if name in ("optuna:cmaes",):
        pytest.importorskip("cmaes")
    if name in ("rl", "optuna:gp"):
        pytest.importorskip("torch")
    if name.startswith("optuna:"):
        pytest.importorskip("optuna")
    return get_examiner(name, random_state=seed, **kwargs)


def loss(factors: np.ndarray) -> np.ndarray:
    """A smooth loss of the factors, ``(n, q)``."""
    unit = (factors - SPACE.lows) / np.where(SPACE.highs > SPACE.lows, SPACE.highs - SPACE.lows, 1.0)
    return -np.sum((unit - 0.3) ** 2, axis=-1) + 0.1 * np.arange(len(factors))[:, None]


def run(examiner: Examiner) -> list[np.ndarray]:
    # one model-based step after the 10 random ones of Optuna's GP sampler
    steps = 11 if getattr(examiner, "sampler", None) == "gp" else STEPS
    asks = []
    for _ in range(steps):
        factors = examiner.ask()
        asks.append(factors)
        examiner.tell(factors, loss(factors))
    return asks


#: configurations of the RL examiner beyond its plain one, seconds each: the fast command checks the plain one
SLOW_RL = {"rl-update-batch_size", "rl-batch_size-factor_order"}


@pytest.fixture(params=[pytest.param(c, id=i, marks=[pytest.mark.slow] if i in SLOW_RL else []) for c, i in FAST])
def case(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    return request.param


def test_shapes_and_proposals_inside_the_space(case: tuple[str, dict[str, Any]]) -> None:
    examiner = make(*case)
    examiner.start(SPACE, N_INSTANCES)
    for factors in run(examiner):
        assert factors.shape == (N_INSTANCES, examiner.queries_per_step, len(SPACE))
        assert np.all(np.isfinite(factors))
        assert np.all(factors >= SPACE.lows) and np.all(factors <= SPACE.highs)
    assert examiner.queries_per_step >= 1
    assert isinstance(examiner.name, str) and examiner.name
    json.dumps(examiner.settings())  # JSON-safe, as checkpoints and reports need
    assert type(examiner).__name__ in repr(examiner)


@pytest.mark.slow
def test_same_seed_same_asks_and_other_seed_other_asks(case: tuple[str, dict[str, Any]]) -> None:
    first, second, other = make(*case, seed=7), make(*case, seed=7), make(*case, seed=8)
    for examiner in (first, second, other):
        examiner.start(SPACE, N_INSTANCES)
    a, b, c = run(first), run(second), run(other)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not all(np.array_equal(x, z) for x, z in zip(a, c, strict=True))


@pytest.mark.slow
def test_instances_search_independently(case: tuple[str, dict[str, Any]]) -> None:
    examiner = make(*case)
    examiner.start(SPACE, N_INSTANCES)
    asks = run(examiner)
    # the instances do not all propose the same factors
    assert any(not np.allclose(f[0], f[1]) for f in asks)


#: the replays of seconds each (README.md: the fast command leaves them out)
SLOW_REPLAYS = {"optuna:gp", "rl"} | SLOW_RL
assert SLOW_REPLAYS <= set(IDS), SLOW_REPLAYS - set(IDS)


@pytest.mark.parametrize("case", [pytest.param(c, id=i, marks=[pytest.mark.slow] if i in SLOW_REPLAYS else [])
                                  for c, i in zip(CASES, IDS, strict=True)])
def test_replaying_the_tell_history_reproduces_the_state(case: tuple[str, dict[str, Any]]) -> None:
    original = make(*case)
    original.start(SPACE, N_INSTANCES)
    log = []
    for factors in run(original):
        assert factors.shape == (N_INSTANCES, original.queries_per_step, len(SPACE))
        log.append((factors.tolist(), loss(factors).tolist()))
    next_original = original.ask()
    # the log goes through JSON, as a checkpointed query log does
    replayed_log = json.loads(json.dumps(log))
    resumed = make(*case)
    resumed.start(SPACE, N_INSTANCES)
    for factors, losses in replayed_log:
        resumed.ask()
        resumed.tell(np.array(factors), np.array(losses))
    np.testing.assert_allclose(resumed.ask(), next_original, rtol=1e-12, atol=1e-12)


@pytest.mark.slow
def test_start_forgets_everything(case: tuple[str, dict[str, Any]]) -> None:
    examiner = make(*case)
    examiner.start(SPACE, N_INSTANCES)
    first = run(examiner)
    examiner.start(SPACE, N_INSTANCES)
    again = run(examiner)
    for x, y in zip(first, again, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.slow
def test_bad_input_names_the_argument(case: tuple[str, dict[str, Any]]) -> None:
    examiner = make(*case)
    with pytest.raises(InputError, match="start"):
        examiner.ask()
    with pytest.raises(InputError, match="`space`"):
        examiner.start("not a space", 2)
    with pytest.raises(InputError, match="`n_instances`"):
        examiner.start(SPACE, 0)
    examiner.start(SPACE, N_INSTANCES)
    factors = examiner.ask()
    good = loss(factors)
    with pytest.raises(InputError, match="`losses` must have shape"):
        examiner.tell(factors, np.zeros((N_INSTANCES, examiner.queries_per_step + 1)))
    with pytest.raises(InputError, match="`losses` must be finite"):
        examiner.tell(factors, np.full_like(good, np.nan))
    with pytest.raises(InputError, match="`factors` must have shape"):
        examiner.tell(factors[..., :2], good)
    outside = factors.copy()
    outside[..., 1] = 5.0
    with pytest.raises(InputError, match="factor `energy` must be in"):
        examiner.tell(outside, good)
    examiner.tell(factors, good)  # the failed calls changed nothing
    assert examiner.ask().shape == factors.shape


def test_registry_lists_and_builds_every_examiner() -> None:
    names = list_examiners()
    assert {"random", "bo", "rl", "optuna:tpe", "optuna:cmaes", "optuna:qmc", "optuna:gp"} <= set(names)
    assert get_examiner("BO", random_state=3, kappa=1.0).settings()["kappa"] == 1.0
    assert get_examiner("random").name == "random"


def test_registry_rejects_unknown_names() -> None:
    with pytest.raises(InputError, match="`examiner` must be one of .*random.*got 'simplex'"):
        get_examiner("simplex")
    with pytest.raises(InputError, match="unknown Optuna sampler; known: tpe"):
        get_examiner("optuna:nelder")
    with pytest.raises(InputError, match="`examiner` must be an examiner name"):
        get_examiner(3)
