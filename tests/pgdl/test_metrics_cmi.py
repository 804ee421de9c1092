"""Official CMI (Metric 2) against a per-pair loop transcription; the general form; bad input."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest
from _official_reference import reference_official_cmi

from fitaudit import InputError
from fitaudit.pgdl import conditional_mi, official_cmi, official_cmi_pairs, read_model_configs


def make_configs(values: dict[str, list], rng: np.random.Generator, *, prefix: str = "", tie_levels: int = 0) -> dict:
    """A complete grid; with ``tie_levels`` the test accuracies take few values (ties in the gap)."""
    configs = {}
    for i, combo in enumerate(itertools.product(*values.values())):
        test_acc = rng.uniform(0.5, 0.95)
        if tie_levels:
            test_acc = 0.5 + 0.1 * rng.integers(tie_levels)
        configs[f"{prefix}{i}"] = {
            "hparams": {
                name: {"possible_values": list(options), "current_value": value}
                for (name, options), value in zip(values.items(), combo)
            },
            "metrics": {"train_acc": 1.0, "test_acc": float(test_acc)},
        }
    return configs


def gaps(configs: dict) -> dict[str, float]:
    return {k: v["metrics"]["train_acc"] - v["metrics"]["test_acc"] for k, v in configs.items()}


GRIDS = [
    {"depth": [1, 2, 3], "width": [64, 128], "dropout": [0.0, 0.5]},
    {"lr": [0.1, 0.01], "wd": [0.0, 1e-4], "bs": [32, 64, 128], "bn": [True, False]},
    {"a": [1, 2], "b": ["x", "y", "z"], "c": [0.5, 1.5], "d": [3, 4], "e": [7, 8]},
]


@pytest.mark.parametrize("seed", range(6))
def test_official_cmi_matches_the_per_pair_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    configs = make_configs(GRIDS[seed % 3], rng, prefix="model_" if seed % 2 else "", tie_levels=3 * (seed % 2))
    gap = gaps(configs)
    candidates = {
        "noisy": {k: g + rng.normal(scale=0.05) for k, g in gap.items()},
        "ties": {k: float(np.round(g + rng.normal(scale=0.05), 1)) for k, g in gap.items()},
        "random": {k: float(rng.normal()) for k in gap},
        "constant": dict.fromkeys(gap, 1.0),
    }
    for measure in candidates.values():
        assert official_cmi(configs, measure) == pytest.approx(reference_official_cmi(configs, measure), abs=1e-9)


def test_ids_with_or_without_the_model_prefix() -> None:
    configs = make_configs(GRIDS[0], np.random.default_rng(1))
    measure = {k: g * 2 for k, g in gaps(configs).items()}
    prefixed = {f"model_{k}": v for k, v in measure.items()}
    assert official_cmi(configs, measure) == official_cmi(configs, prefixed)
    assert official_cmi({f"model_{k}": v for k, v in configs.items()}, measure) == official_cmi(configs, measure)


def test_documented_consequences() -> None:
    rng = np.random.default_rng(2)
    configs = make_configs(GRIDS[1], rng)
    gap = gaps(configs)
    perfect = official_cmi(configs, gap)
    assert 1.0 < perfect < 1.0 + 1e-9  # the 1e-12 in the entropy only
    noisy = {k: g + rng.normal(scale=0.02) for k, g in gap.items()}
    score = official_cmi(configs, noisy)
    negated = official_cmi(configs, {k: -v for k, v in noisy.items()})
    assert score > 0.3 and negated > 0.5 * score  # the metric barely sees the sign
    from fitaudit.pgdl import kendall_tau

    keys = list(gap)
    assert kendall_tau([noisy[k] for k in keys], [gap[k] for k in keys]) > 0.5
    assert kendall_tau([-noisy[k] for k in keys], [gap[k] for k in keys]) < -0.5
    # two hyperparameters: one ordered model pair per bin, so I = 0 in every bin
    two = make_configs({"a": [1, 2, 3], "b": [4, 5]}, rng)
    assert official_cmi(two, gaps(two)) == 0.0
    assert official_cmi(two, {k: rng.normal() for k in two}) == 0.0
    # both orders of a pair of hyperparameters give the same number
    pairs = official_cmi_pairs(configs, noisy)
    assert len(pairs) == 4 * 3
    for (h1, h2), value in pairs.items():
        assert value == pytest.approx(pairs[(h2, h1)], abs=1e-12)


def test_general_form_with_pairs_and_self_pairs_equals_the_official_on_complete_grids() -> None:
    rng = np.random.default_rng(3)
    configs = make_configs(GRIDS[2], rng, tie_levels=4)
    gap = gaps(configs)
    measure = {k: float(np.round(g + rng.normal(scale=0.05), 1)) for k, g in gap.items()}
    grid = read_model_configs(configs)
    mu = np.array([measure[k] for k in configs])
    general = conditional_mi(mu, grid.gap, grid.hparams(), max_set_size=2, self_pairs=True)
    pairs = {k: v for k, v in general.per_set.items() if k.count(",") == 1}
    assert min(pairs.values()) == pytest.approx(official_cmi(configs, measure), abs=1e-9)
    assert general.score <= min(pairs.values())
    assert "" in general.per_set  # the empty conditioning set is included
    assert len(general.per_set) == 1 + 5 + 10


def test_general_form_against_a_direct_computation() -> None:
    rng = np.random.default_rng(4)
    n = 30
    hparams = {"a": rng.integers(0, 3, n).tolist(), "b": rng.integers(0, 2, n).tolist()}
    gap = rng.normal(size=n)
    mu = gap + rng.normal(size=n)
    result = conditional_mi(mu, gap, hparams, max_set_size=1)

    def ratio(groups: list) -> float:
        counts: dict = {}
        for a in range(n):
            for b in range(n):
                if a != b:
                    key = tuple((hparams[h][a], hparams[h][b]) for h in groups)
                    cell = (gap[a] > gap[b], mu[a] > mu[b])
                    counts.setdefault(key, {}).setdefault(cell, 0)
                    counts[key][cell] += 1
        total = n * (n - 1)
        info = entropy = 0.0
        for table in counts.values():
            size = sum(table.values())
            p = {c: v / size for c, v in table.items()}
            pg = {s: sum(v for c, v in p.items() if c[0] == s) for s in (True, False)}
            pm = {s: sum(v for c, v in p.items() if c[1] == s) for s in (True, False)}
            info += size / total * sum(v * np.log2(v / (pg[c[0]] * pm[c[1]])) for c, v in p.items())
            entropy -= size / total * sum(v * np.log2(v) for v in pg.values() if v > 0)
        return info / entropy

    assert result.per_set[""] == pytest.approx(ratio([]), abs=1e-12)
    assert result.per_set["a"] == pytest.approx(ratio(["a"]), abs=1e-12)
    assert result.per_set["b"] == pytest.approx(ratio(["b"]), abs=1e-12)
    assert result.score == min(result.per_set.values())
    assert result.argmin == ([] if result.score == result.per_set[""] else [min(result.per_set, key=result.per_set.get)])


def test_general_form_is_zero_when_the_set_fixes_the_gap_order() -> None:
    gap = [0.1, 0.2, 0.3, 0.4]
    result = conditional_mi([4, 3, 2, 1], gap, {"h": [1, 2, 3, 4]}, max_set_size=1)
    assert result.per_set["h"] == 0.0
    assert result.per_set[""] == pytest.approx(1.0)
    with pytest.raises(InputError, match=re.escape("`max_set_size` must be at most the number of hyperparameters (1); got 2.")):
        conditional_mi([1, 2], [1, 2], {"h": [1, 2]}, max_set_size=2)


def test_bad_input_is_named() -> None:
    rng = np.random.default_rng(5)
    configs = make_configs(GRIDS[0], rng)
    measure = {k: float(rng.normal()) for k in configs}
    incomplete = dict(list(configs.items())[1:])
    with pytest.raises(InputError, match="not a complete grid.*1 of 12 combinations"):
        official_cmi(incomplete, {k: measure[k] for k in incomplete})
    duplicated = json.loads(json.dumps(configs))
    duplicated["0"]["hparams"]["depth"]["current_value"] = 2
    with pytest.raises(InputError, match="appears 2 times"):
        official_cmi(duplicated, measure)
    with pytest.raises(InputError, match=r"no value for 1 model\(s\) \(model_3\)"):
        official_cmi(configs, {k: v for k, v in measure.items() if k != "3"})
    with pytest.raises(InputError, match=r"values for 1 unknown id\(s\) \(model_99\)"):
        official_cmi(configs, {**measure, "99": 1.0})
    with pytest.raises(InputError, match="`measure` for 'model_2' is NaN"):
        official_cmi(configs, {**measure, "2": float("nan")})
    with pytest.raises(InputError, match="'EXCEEDED'.*whole submission 0"):
        official_cmi(configs, {**measure, "2": "EXCEEDED"})
    with pytest.raises(InputError, match="two values for model 'model_2'"):
        official_cmi(configs, {**measure, "model_2": 1.0})
    floats = json.loads(json.dumps(configs))
    floats["1"]["hparams"]["width"]["current_value"] = float(floats["1"]["hparams"]["width"]["current_value"])
    with pytest.raises(InputError, match=r"'model_1' hparams\['width'\] has current_value 64.0.*by str\(\)"):
        official_cmi(floats, measure)
    assert official_cmi(floats, measure, values="numeric") == pytest.approx(official_cmi(configs, measure))
    with pytest.raises(InputError, match="single hyperparameter \\('a'\\).*returns inf"):
        official_cmi(make_configs({"a": [1, 2, 3]}, rng), {str(i): float(i) for i in range(3)})
    colliding = make_configs({"a": [1, 11], "b": [1, 11], "c": [2, 3]}, rng)
    with pytest.raises(InputError, match="colliding bin keys"):
        official_cmi(colliding, {k: float(rng.normal()) for k in colliding})
    with pytest.raises(InputError, match="`values` must be one of exact, numeric; got 'loose'"):
        official_cmi(configs, measure, values="loose")
    missing_metric = json.loads(json.dumps(configs))
    del missing_metric["5"]["metrics"]["test_acc"]
    with pytest.raises(InputError, match="'model_5' metrics lacks the field 'test_acc'"):
        official_cmi(missing_metric, measure)
    renamed = json.loads(json.dumps(configs))
    renamed["6"]["hparams"]["drop"] = renamed["6"]["hparams"].pop("dropout")
    with pytest.raises(InputError, match="'model_6' has hyperparameters"):
        official_cmi(renamed, measure)
