"""Scores on a large zoo (81 models) against 24-model sub-grids of it (issue 22, item 5).

Reads the per-model measure values that ``fitaudit pgdl leaderboard`` stored
in its ``leaderboard.json`` (nothing is recomputed) and the task's
``model_configs.json``, and scores every measure with fitaudit.pgdl's public
metric functions:

* on all 81 models (a 3 x 3 x 3 x 3 grid): 100 x the official conditional MI
  (:func:`fitaudit.pgdl.official_cmi`, the competition's number), Kendall's
  tau-a, the granulated Kendall Psi and the general conditional MI (sets of
  at most 2 hyperparameters), exactly as the leaderboard computes them;
* on one random complete sub-grid of 24 models (the official CMI needs a
  complete grid): 2 of the 3 values of each of three hyperparameters and all
  3 of the fourth (by default batch size, so 2 x 2 x 2 x 3), the values drawn
  with ``numpy.random.default_rng(seed)`` (``rng.choice(3, 2,
  replace=False)`` per hyperparameter, in the grid's order). The sub-grid's
  ``possible_values`` are cut down to its own values, as a task built with
  that grid would list them;
* on every such sub-grid (any hyperparameter kept at 3 values: 4 x 3^3 = 108
  sub-grids) the official CMI and tau, summarised as median [min, max], so
  that one draw is not read as the 24-model answer.

It also prints the seconds per model of each measure (the competition's
budget is 300 s per model, pooled over the task, for each submission) and of
all measures together, and how the measures' order by the official CMI at
24 models agrees with the order at 81 (Kendall's tau between the two
columns), and the official CMI of measures with no information (random
values per model) on both model sets: the score a measure gets by chance,
which is not 0 and depends on the number of models.

Run: ``python benchmarks/pgdl_large_zoo.py --task fitaudit-out/zoos/digits-large
--leaderboard fitaudit-out/lb/digits-large/leaderboard.json [--seed 0] [--results FILE]``
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np

from _results import emit
from fitaudit.pgdl import conditional_mi, granulated_kendall, kendall_tau, official_cmi
from fitaudit.pgdl.grid import normalise_model_id

REFERENCES = ("noisy_gap",)


def load(task: Path, board: Path) -> tuple[dict[str, Any], dict[str, dict[str, float | None]], dict[str, dict[str, float]]]:
    configs = {normalise_model_id(k): v for k, v in json.loads((task / "model_configs.json").read_text()).items()}
    scores = json.loads(board.read_text())["task_scores"][0]["scores"]
    values = {s["measure"]: {normalise_model_id(k): v for k, v in s["values"].items()} for s in scores}
    seconds = {s["measure"]: {normalise_model_id(k): float(v) for k, v in s["seconds"].items()} for s in scores}
    return configs, values, seconds


def grid_of(configs: dict[str, Any]) -> dict[str, list[Any]]:
    first = next(iter(configs.values()))["hparams"]
    return {name: list(entry["possible_values"]) for name, entry in first.items()}


def sub_configs(configs: dict[str, Any], chosen: dict[str, list[Any]]) -> dict[str, Any]:
    """The models whose every hyperparameter is among ``chosen``, their possible values cut down to it."""
    out = {}
    for model_id, entry in configs.items():
        if all(entry["hparams"][h]["current_value"] in vals for h, vals in chosen.items()):
            hp = {h: {"current_value": entry["hparams"][h]["current_value"], "possible_values": list(chosen[h])}
                  for h in entry["hparams"]}
            out[model_id] = {"hparams": hp, "metrics": entry["metrics"]}
    return out


def all_subgrids(grid: dict[str, list[Any]]) -> list[dict[str, list[Any]]]:
    """Every sub-grid with one hyperparameter at all its values and the others at 2 of theirs."""
    subs = []
    for full in grid:
        others = [h for h in grid if h != full]
        for pick in itertools.product(*(itertools.combinations(grid[h], 2) for h in others)):
            chosen = {h: list(grid[h]) if h == full else [] for h in grid}
            for h, vals in zip(others, pick):
                chosen[h] = list(vals)
            subs.append(chosen)
    return subs


def random_subgrid(grid: dict[str, list[Any]], full: str, seed: int) -> dict[str, list[Any]]:
    rng = np.random.default_rng(seed)
    chosen = {}
    for h, vals in grid.items():
        chosen[h] = list(vals) if h == full else [vals[i] for i in sorted(rng.choice(len(vals), 2, replace=False))]
    return chosen


def metrics(configs: dict[str, Any], mu_all: dict[str, float | None], full: bool) -> dict[str, float | None]:
    ids = list(configs)
    if any(mu_all.get(i) is None for i in ids):
        return {"cmi": None, "tau": None, "psi": None, "gcmi": None}
    mu = np.array([mu_all[i] for i in ids], dtype=float)
    gap = np.array([configs[i]["metrics"]["train_acc"] - configs[i]["metrics"]["test_acc"] for i in ids])
    out: dict[str, float | None] = {"cmi": 100.0 * official_cmi(configs, dict(zip(ids, mu.tolist()))),
                                    "tau": kendall_tau(mu, gap), "psi": None, "gcmi": None}
    if full:
        hparams = [{h: e["current_value"] for h, e in configs[i]["hparams"].items()} for i in ids]
        out["psi"] = granulated_kendall(mu, gap, hparams).psi
        out["gcmi"] = conditional_mi(mu, gap, hparams, max_set_size=2).score
    return out


def null_scores(configs: dict[str, Any], draws: int, seed: int) -> list[float]:
    """100 x official CMI of ``draws`` measures with no information (independent uniform values per model)."""
    rng = np.random.default_rng(seed)
    ids = list(configs)
    return [100.0 * official_cmi(configs, dict(zip(ids, rng.random(len(ids)).tolist()))) for _ in range(draws)]


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", required=True, help="the large zoo's task folder")
    parser.add_argument("--leaderboard", required=True, help="leaderboard.json of `fitaudit pgdl leaderboard` on it")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random 24-model sub-grid")
    parser.add_argument("--full", default="batch_size", help="hyperparameter kept at all its values in the sub-grid")
    parser.add_argument("--null-draws", type=int, default=200, help="random measures scored as the no-information reference")
    parser.add_argument("--results", default=None, help="also write the printed text to this file")
    args = parser.parse_args()

    configs, values, seconds = load(Path(args.task), Path(args.leaderboard))
    grid = grid_of(configs)
    chosen = random_subgrid(grid, args.full, args.seed)
    subset = sub_configs(configs, chosen)
    subs = [sub_configs(configs, c) for c in all_subgrids(grid)]
    gaps = [c["metrics"]["train_acc"] - c["metrics"]["test_acc"] for c in configs.values()]
    lines = [
        f"task {args.task}: {len(configs)} models, grid " + " x ".join(f"{h}{v}" for h, v in grid.items())
        + f", gap {min(gaps):.3f}..{max(gaps):.3f}",
        f"random sub-grid (seed {args.seed}, numpy default_rng, 2 of 3 values per hyperparameter, {args.full} all 3): "
        + " x ".join(f"{h}{v}" for h, v in chosen.items()) + f" = {len(subset)} models",
        f"all sub-grids: any one hyperparameter at 3 values, the others at 2 of 3: {len(subs)} sub-grids of "
        f"{'/'.join(str(k) for k in sorted({len(s) for s in subs}))} models (official CMI: median [min, max])",
        "",
    ]
    rows = []
    for name in values:
        whole = metrics(configs, values[name], full=True)
        part = metrics(subset, values[name], full=True)
        spread = [metrics(s, values[name], full=False) for s in subs]
        cmis = [m["cmi"] for m in spread if m["cmi"] is not None]
        taus = [m["tau"] for m in spread if m["tau"] is not None]
        per_model = seconds[name]
        rows.append({
            "measure": name, "n": whole, "s24": part,
            "cmi_med": float(np.median(cmis)) if cmis else None, "cmi_min": min(cmis) if cmis else None,
            "cmi_max": max(cmis) if cmis else None, "tau_med": float(np.median(taus)) if taus else None,
            "s_model": float(np.mean(list(per_model.values()))) if per_model else None,
            "s_max": max(per_model.values()) if per_model else None,
        })
    rows.sort(key=lambda r: -(r["n"]["cmi"] if r["n"]["cmi"] is not None else -1.0))
    n_all, n_sub = len(configs), len(subset)
    head = (f"{'measure':30s} {f'CMI {n_all}':>7s} {f'tau {n_all}':>7s} {f'Psi {n_all}':>7s} {f'gCMI {n_all}':>8s} | "
            f"{f'CMI {n_sub}':>7s} {f'tau {n_sub}':>7s} {f'Psi {n_sub}':>7s} | "
            f"{f'CMI {len(subs)} sub-grids: med [min, max]':>34s} {'tau med':>7s} | {'s/model':>7s} {'max s':>6s}")
    lines += [head, "-" * len(head)]
    for r in rows:
        n, p = r["n"], r["s24"]
        spread = f"{fmt(r['cmi_med'])} [{fmt(r['cmi_min'])}, {fmt(r['cmi_max'])}]"
        lines.append(
            f"{r['measure']:30s} {fmt(n['cmi']):>7s} {fmt(n['tau'], 3):>7s} {fmt(n['psi'], 3):>7s} {fmt(n['gcmi'], 3):>8s} | "
            f"{fmt(p['cmi']):>7s} {fmt(p['tau'], 3):>7s} {fmt(p['psi'], 3):>7s} | {spread:>34s} {fmt(r['tau_med'], 3):>7s} | "
            f"{fmt(r['s_model']):>7s} {fmt(r['s_max'], 1):>6s}"
        )
    null_all = null_scores(configs, args.null_draws, args.seed)
    null_sub = null_scores(subset, args.null_draws, args.seed)
    lines += [
        "",
        f"a measure with no information (random values, {args.null_draws} draws, seed {args.seed}), 100 x official CMI: "
        f"{n_all} models mean {np.mean(null_all):.2f}, 95th percentile {np.percentile(null_all, 95):.2f}; "
        f"random {n_sub}-model sub-grid mean {np.mean(null_sub):.2f}, 95th percentile {np.percentile(null_sub, 95):.2f}",
    ]
    predictors = [r for r in rows if r["measure"] not in REFERENCES and r["n"]["cmi"] is not None and r["s24"]["cmi"] is not None]
    if len(predictors) > 2:
        at81 = np.array([r["n"]["cmi"] for r in predictors])
        at24 = np.array([r["s24"]["cmi"] for r in predictors])
        med = np.array([r["cmi_med"] for r in predictors])
        top81 = [r["measure"] for r in sorted(predictors, key=lambda r: -r["n"]["cmi"])[:5]]
        top24 = [r["measure"] for r in sorted(predictors, key=lambda r: -r["s24"]["cmi"])[:5]]
        lines += [
            "",
            f"order of the {len(predictors)} predictors (noisy_gap left out) by official CMI, {n_sub} vs {n_all} models: "
            f"Kendall tau {kendall_tau(at24, at81):.3f} (random sub-grid), {kendall_tau(med, at81):.3f} (median over sub-grids)",
            f"top 5 at {n_all}: {', '.join(top81)}",
            f"top 5 at {n_sub} (random sub-grid): {', '.join(top24)}",
        ]
    totals = {}
    for per_model in seconds.values():
        for model_id, s in per_model.items():
            totals[model_id] = totals.get(model_id, 0.0) + s
    if totals:
        worst = max(r["s_model"] or 0.0 for r in rows)
        lines += [
            "",
            f"seconds per model (measure time, shared 2-core CPU): all {len(seconds)} measures together mean "
            f"{np.mean(list(totals.values())):.1f}, max {max(totals.values()):.1f} over {len(totals)} models; "
            f"slowest single measure {worst:.1f} s/model; budget 300 s per model for each measure",
        ]
    emit(lines, args.results)


if __name__ == "__main__":
    main()
