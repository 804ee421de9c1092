"""Validity of the leakage question on real tables, beside cleanlab's near-duplicate finder.

Tables that ship with packages (nothing downloaded): palmerpenguins (also
with an identifier column ``penguin_id``, unique text), vega_datasets'
``cars`` and ``seattle-weather`` (dates and names kept as text), and
statsmodels' ``anes96``, ``star98``, ``modechoice``, ``randhie`` (nearly
every row repeats another), ``grunfeld`` and ``fair`` (many repeats). Each
is written to CSV and read back with :func:`fitaudit.data.tables.read_table`
as a user's file would be; the label column is dropped (the question does
not use labels).

1. **Clean splits**: ``--splits`` random splits per table (test share drawn
   from 0.2-0.4); the verdicts (``fitaudit.report.verdicts.read``). Under
   the null the question fails at most at its level (1%).
2. **Planted copies**: on the first ``--planted-splits`` splits, 1%, 5% and
   10% of the training rows copied into the scored set, exactly, or with
   Gaussian noise of 1% of each numeric column's standard deviation added
   to every numeric column (``noisy``). A planted leak must fail, or be
   ``inconclusive`` with the detectable share stated; never ``pass``.
   Recall: planted rows found *and* paired with their source (or a training
   row with the source's exact values).
3. **cleanlab** (``Datalab``'s ``near_duplicate`` issue manager, default
   settings) on the same rows in the same space (the standardised columns
   the search compares, identifier-like columns left out): scored rows it
   flags with a training row in their near-duplicate set (clean: the share
   flagged; planted: recall as above). cleanlab gives no verdict.

Every finished unit (table, split, condition) is appended to
``--units`` (JSON lines) and reused by a rerun; ``--out`` gets the table.

Run: ``nice -n 10 python benchmarks/validity/leakage_tables.py [--splits 5]
[--planted-splits 2] [--out benchmarks/validity/results/leakage_tables.txt]``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fitaudit.data.tables import comparable_features, identifier_columns, read_table
from fitaudit.leakage import standardise, tabular_leakage
from fitaudit.report.verdicts import read

#: planted shares of the training rows
SHARES = (0.01, 0.05, 0.10)


def _penguins() -> pd.DataFrame:
    import palmerpenguins

    return palmerpenguins.load_penguins()


def _penguins_with_id() -> pd.DataFrame:
    frame = _penguins()
    frame.insert(0, "penguin_id", [f"P{i:04d}" for i in range(len(frame))])
    return frame


def _vega(name: str) -> Callable[[], pd.DataFrame]:
    def load() -> pd.DataFrame:
        from vega_datasets import data

        return getattr(data, name)()

    return load


def _statsmodels(name: str) -> Callable[[], pd.DataFrame]:
    def load() -> pd.DataFrame:
        import statsmodels.api as sm

        return getattr(sm.datasets, name).load_pandas().data

    return load


#: name -> (loader, label column)
TABLES: dict[str, tuple[Callable[[], pd.DataFrame], str]] = {
    "penguins": (_penguins, "species"),
    "penguins + penguin_id": (_penguins_with_id, "species"),
    "cars (vega)": (_vega("cars"), "Origin"),
    "seattle-weather (vega)": (_vega("seattle_weather"), "weather"),
    "anes96": (_statsmodels("anes96"), "vote"),
    "star98": (_statsmodels("star98"), "NABOVE"),
    "modechoice": (_statsmodels("modechoice"), "choice"),
    "randhie": (_statsmodels("randhie"), "mdvis"),
    "grunfeld": (_statsmodels("grunfeld"), "firm"),
    "fair": (_statsmodels("fair"), "affairs"),
}


def as_csv(frame: pd.DataFrame, folder: Path, name: str) -> pd.DataFrame:
    """The frame written as CSV and read back as fitaudit reads a user's file."""
    path = folder / f"{name}.csv"
    frame.to_csv(path, index=False)
    return read_table(path, name=name)


def plant(train: pd.DataFrame, share: float, noisy: bool, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    """Copies of ``share`` of the training rows (distinct sources), with 1%-of-std noise on numeric columns if noisy."""
    sources = rng.choice(len(train), size=max(1, int(round(share * len(train)))), replace=False)
    copies = train.iloc[sources].copy()
    if noisy:
        for column in copies.columns:
            if pd.api.types.is_numeric_dtype(copies[column]) and not pd.api.types.is_bool_dtype(copies[column]):
                scale = 0.01 * float(train[column].std())
                copies[column] = copies[column].astype(float) + rng.normal(0.0, 1.0, len(copies)) * scale
    return copies.reset_index(drop=True), sources


def paired(pairs: dict[int, int], offset: int, sources: np.ndarray, train_rows: np.ndarray) -> float:
    """Share of planted rows (offset, offset + 1, ...) paired with their source or a row of equal values."""
    hits = [pairs.get(offset + i) is not None and np.array_equal(train_rows[pairs[offset + i]], train_rows[s])
            for i, s in enumerate(sources)]
    return float(np.mean(hits)) if hits else float("nan")


def cleanlab_pairs(scored: np.ndarray, train: np.ndarray) -> dict[int, int]:
    """Scored rows cleanlab's near_duplicate issue manager flags with a training row in their set: row -> training row."""
    from cleanlab import Datalab

    features = np.concatenate([scored, train]).astype(np.float64)
    lab = Datalab(data={"y": np.zeros(len(features), dtype=int)}, label_name="y", verbosity=0)
    lab.find_issues(features=features, issue_types={"near_duplicate": {}})
    issues = lab.get_issues("near_duplicate")
    found = {}
    for i in np.flatnonzero(issues["is_near_duplicate_issue"].to_numpy()[: len(scored)]):
        partners = [int(p) - len(scored) for p in issues["near_duplicate_sets"].iloc[int(i)] if p >= len(scored)]
        if partners:
            found[int(i)] = partners[0]
    return found


def run_unit(scored: pd.DataFrame, train: pd.DataFrame, sources: np.ndarray | None, n_clean: int,
             cleanlab: bool = True) -> dict[str, Any]:
    """fitaudit's verdict and recall, and (``cleanlab``) cleanlab's flags, on one scored set."""
    start = time.perf_counter()
    result = tabular_leakage(scored, train, scored_name="--data", train_name="--train-data")
    reading, verdict = read(result), result.verdict()
    seconds = time.perf_counter() - start
    left_out = identifier_columns(scored, train)
    x_scored, x_train = comparable_features(scored, train, leave_out=list(left_out))
    unit = {"status": reading.status, "reason": verdict.reason, "sentence": reading.sentence,
            "detectable_share": verdict.numbers.get("detectable_share"),
            "detectable_share_near": verdict.numbers.get("detectable_share_near"),
            "detectable_share_exact": verdict.numbers.get("detectable_share_exact"), "n_scored": len(scored),
            "n_train": len(train), "n_near": result.n_near, "n_exact": result.n_exact,
            "left_out": result.left_out_columns, "seconds": seconds}
    if sources is not None:
        ours = dict(zip(result.near_scored.tolist(), result.near_train.tolist()))
        unit["recall"] = paired(ours, n_clean, sources, x_train)
    if cleanlab:
        z_train, z_scored = standardise(x_train, x_scored)
        start = time.perf_counter()
        flagged = cleanlab_pairs(z_scored, z_train)
        unit.update(cleanlab_seconds=time.perf_counter() - start,
                    cleanlab_flagged=sum(1 for i in flagged if i < n_clean) / max(1, n_clean))
        if sources is not None:
            unit["cleanlab_recall"] = paired(flagged, n_clean, sources, x_train)
    return unit


#: a unit's fields that come from cleanlab (kept when only fitaudit's part is recomputed)
CLEANLAB_FIELDS = ("cleanlab_seconds", "cleanlab_flagged", "cleanlab_recall")


def units_of(name: str, splits: int, planted_splits: int, seed: int, folder: Path,
             done: dict[str, dict[str, Any]], write: Callable[[str, dict[str, Any]], None],
             recompute: bool = False) -> None:
    """Every unit of one table not yet in ``done`` (``recompute``: fitaudit's part of the done ones again, with
    their cleanlab fields kept: the same splits and copies, since every draw is seeded)."""
    loader, label = TABLES[name]
    frame = as_csv(loader(), folder, "table").drop(columns=[label])
    rng = np.random.default_rng([seed, list(TABLES).index(name)])
    for s in range(splits):
        order = rng.permutation(len(frame))
        k = int(round(float(rng.uniform(0.2, 0.4)) * len(frame)))
        test, train = frame.iloc[order[:k]].reset_index(drop=True), frame.iloc[order[k:]].reset_index(drop=True)
        conditions = [("clean", 0.0, False)]
        if s < planted_splits:
            conditions += [(f"{'noisy' if noisy else 'exact'} {share:.0%}", share, noisy)
                           for noisy in (False, True) for share in SHARES]
        for condition, share, noisy in conditions:
            key = f"{name}|{s}|{condition}"
            kept = {f: done[key][f] for f in CLEANLAB_FIELDS if f in done[key]} if key in done else {}
            if key in done and not recompute:
                continue
            plant_rng = np.random.default_rng([seed, list(TABLES).index(name), s, int(share * 100), int(noisy)])
            if condition == "clean":
                scored, sources = test, None
            else:
                copies, sources = plant(train, share, noisy, plant_rng)
                scored = pd.concat([test, copies], ignore_index=True)
            # both files through CSV, as a user hands them in
            unit = run_unit(as_csv(scored, folder, "scored"), as_csv(train, folder, "train"), sources, len(test),
                            cleanlab=not kept)
            unit.update(kept)
            unit.update(table=name, split=s, condition=condition, n_planted=0 if sources is None else len(sources))
            write(key, unit)


def summary(units: list[dict[str, Any]]) -> str:
    """One row per table and condition: fitaudit's verdicts, recall and detectable shares beside cleanlab's."""
    header = ["table", "condition", "runs", "fitaudit verdicts", "found+paired", "detectable share (80%)",
              "cleanlab flagged (clean)", "cleanlab found+paired"]
    rows = []
    keys = list(dict.fromkeys((u["table"], u["condition"]) for u in units))
    for table_name, condition in keys:
        group = [u for u in units if u["table"] == table_name and u["condition"] == condition]
        statuses = [u["status"] for u in group]
        counts = ", ".join(f"{s} {statuses.count(s)}" for s in ("fail", "inconclusive", "pass") if s in statuses)
        shares = [u["detectable_share"] for u in group if u["detectable_share"] is not None]
        detect = f"{min(shares):.1%}-{max(shares):.1%}" if shares else "none"
        recall = [u["recall"] for u in group if "recall" in u]
        clean_recall = [u["cleanlab_recall"] for u in group if "cleanlab_recall" in u]
        rows.append([table_name, condition, str(len(group)), counts,
                     f"{np.mean(recall):.0%}" if recall else "",
                     detect,
                     f"{np.mean([u['cleanlab_flagged'] for u in group]):.1%}" if condition == "clean" else "",
                     f"{np.mean(clean_recall):.0%}" if clean_recall else ""])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header, *rows]]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def checks(units: list[dict[str, Any]]) -> list[str]:
    """The done-when lines of issue 40 for tables, each with what was measured."""
    clean = [u for u in units if u["condition"] == "clean"]
    planted = [u for u in units if u["condition"] != "clean"]
    lines = [f"clean splits failed: {sum(u['status'] == 'fail' for u in clean)} of {len(clean)} (level 1%)",
             f"planted leaks passed: {sum(u['status'] == 'pass' for u in planted)} of {len(planted)} (must be 0)",
             "planted leaks inconclusive without a stated detectable share: "
             f"{sum(u['status'] == 'inconclusive' and u['detectable_share'] is None and u['reason'] == 'low_power' for u in planted)}"]
    for name, condition, expect in (("seattle-weather (vega)", "noisy 5%", "fail"), ("randhie", "exact 5%", "not pass"),
                                    ("penguins + penguin_id", "clean", "not fail")):
        got = [u["status"] for u in units if u["table"] == name and u["condition"] == condition]
        lines.append(f"{name}, {condition}: {', '.join(got)} (expected {expect}; "
                     f"n planted {', '.join(str(u['n_planted']) for u in units if u['table'] == name and u['condition'] == condition)})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=5, help="clean random splits per table")
    parser.add_argument("--planted-splits", type=int, default=2, help="of them, how many get the planted copies")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tables", nargs="*", default=list(TABLES), help="a subset of the tables")
    parser.add_argument("--units", default="benchmarks/validity/results/leakage_tables.jsonl")
    parser.add_argument("--recompute", nargs="*", default=[], help="tables whose fitaudit verdicts are computed "
                        "again (after a change of the decision), their cleanlab numbers kept")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args()
    units_path = Path(args.units)
    units_path.parent.mkdir(parents=True, exist_ok=True)
    done = {}
    if units_path.exists():
        for line in units_path.read_text().splitlines():
            record = json.loads(line)
            done[record["key"]] = record
    start = time.perf_counter()

    def write(key: str, unit: dict[str, Any]) -> None:
        done[key] = {"key": key, **unit}
        with units_path.open("a") as handle:
            handle.write(json.dumps(done[key]) + "\n")
        print(f"{key}: {unit['status']} ({unit['reason']})", flush=True)

    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        for name in args.tables:
            units_of(name, args.splits, args.planted_splits, args.seed, Path(folder), done, write,
                     recompute=name in args.recompute)
    units = [u for u in done.values() if u["table"] in args.tables]
    import fitaudit

    text = (f"Leakage question on real tables (CSV), clean splits and planted copies, beside cleanlab's "
            f"near_duplicate issue manager (seed {args.seed}; fitaudit from {Path(fitaudit.__file__).parent}; "
            f"this run {time.perf_counter() - start:.0f} s)\n\n{summary(units)}\n\n" + "\n".join(checks(units)))
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
