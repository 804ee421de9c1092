"""The Optuna adapter: sampler objects and factories, foreign tells, the missing extra."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit._errors import MissingDependencyError
from fitaudit.data.factors import Factor, FactorSpace
from fitaudit.examine.optuna_adapter import OptunaExaminer

optuna = pytest.importorskip("optuna")

SPACE = FactorSpace([Factor("a", 0.0, 1.0, 0.5, "u"), Factor("b", -5.0, 5.0, 0.0, "u")])


def loss(factors: np.ndarray) -> np.ndarray:
    return -((factors[..., 0] - 0.2) ** 2) - ((factors[..., 1] - 1.0) / 10) ** 2


def run(examiner: OptunaExaminer, steps: int = 12) -> np.ndarray:
    asks = []
    for _ in range(steps):
        factors = examiner.ask()
        examiner.tell(factors, loss(factors))
        asks.append(factors)
    return np.concatenate(asks, axis=1)


def test_a_sampler_object_is_copied_for_every_instance() -> None:
    examiner = OptunaExaminer(sampler=optuna.samplers.TPESampler(seed=3))
    examiner.start(SPACE, 2)
    asks = run(examiner)
    # copies of one seeded sampler: both instances see the same losses, so they agree
    np.testing.assert_array_equal(asks[0], asks[1])
    assert examiner.settings() == {"sampler": "TPESampler", "random_state": None}
    again = OptunaExaminer(sampler=optuna.samplers.TPESampler(seed=3))
    again.start(SPACE, 2)
    np.testing.assert_array_equal(run(again), asks)


def test_a_sampler_factory_gets_one_seed_per_instance() -> None:
    seeds: list[int] = []

    def factory(seed: int) -> object:
        seeds.append(seed)
        return optuna.samplers.RandomSampler(seed=seed)

    examiner = OptunaExaminer(sampler=factory, random_state=5)
    examiner.start(SPACE, 3)
    assert len(seeds) == 3 and len(set(seeds)) == 3
    asks = run(examiner, 3)
    assert not np.allclose(asks[0], asks[1])


def test_the_studies_learn_what_they_are_told() -> None:
    examiner = OptunaExaminer(sampler="tpe", random_state=0)
    examiner.start(SPACE, 2)
    factors = examiner.ask()
    told = np.array([[[0.25, 1.5]], [[0.75, -2.0]]])
    examiner.tell(told, np.array([[3.0], [4.0]]))
    for i, study in enumerate(examiner._studies):
        states = [t.state for t in study.trials]
        assert states == [optuna.trial.TrialState.FAIL, optuna.trial.TrialState.COMPLETE]
        assert study.best_trial.params == {"a": told[i, 0, 0], "b": told[i, 0, 1]}
        assert study.best_value == [3.0, 4.0][i]
    assert not np.allclose(factors, told)


@pytest.mark.slow
def test_tpe_improves_on_its_random_start() -> None:
    examiner = OptunaExaminer(sampler="tpe", random_state=0)
    examiner.start(SPACE, 3)
    losses = loss(run(examiner, 40))
    assert losses[:, 20:].mean() > losses[:, :10].mean()


def test_bad_samplers_name_the_argument() -> None:
    with pytest.raises(InputError, match="`sampler` must be one of tpe, cmaes, qmc, gp, random"):
        OptunaExaminer(sampler="anneal")
    examiner = OptunaExaminer(sampler=lambda seed: "not a sampler")
    with pytest.raises(InputError, match="`sampler` callable must return an Optuna sampler; got str"):
        examiner.start(SPACE, 1)
    with pytest.raises(InputError, match="`sampler` must be a name, an Optuna sampler or a callable"):
        OptunaExaminer(sampler=3).start(SPACE, 1)


def test_without_optuna_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "optuna", None)
    examiner = OptunaExaminer(sampler="tpe")
    with pytest.raises(MissingDependencyError, match=r"pip install 'fitaudit\[examine\]'"):
        examiner.start(SPACE, 1)
