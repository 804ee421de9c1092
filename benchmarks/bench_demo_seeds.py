"""``fitaudit demo`` in fresh processes, seeds x torch threads: every known answer, and the planted weakness's margin.

A new user runs the demo in a fresh process, with whatever thread count
torch takes on their machine; the demo must find its known answers for any
seed. Each unit runs ``python -m fitaudit demo [--quick] --seed S --json``
in its own process and empty folder, with ``OMP_NUM_THREADS`` = 1 or 2
(torch's thread count at start), and records: the known answers found, the
ones missed, the wall seconds, a digest of every part's numbers (equal for
both thread counts when the demo's numbers do not follow the process's
count: every part runs on ``fitaudit.demo.DEMO_TORCH_THREADS``) and the
margin of each known answer that missed at some seed: the planted elevation
weakness (examine-planted: the headline rule, the lower end of its lift
interval, must be > 1, and the random queries in its region, >= 20), the
overfitting test's p-values on the model trained on half of its test set
and on the Shapes CNN's training folder (must be < 0.05), and the plain
digit CNN's headline rule (must name rotation; its lift interval's lower
end) and accuracy drop from small to large rotations (must be > 0.1).

Run: ``nice -n 10 python benchmarks/bench_demo_seeds.py [--units quick:0:1 quick:0:2 ...]``. Each finished unit
is appended to ``benchmarks/results/demo_seeds.jsonl`` (a unit already there is not run again); the table of
all recorded units is printed and written to ``benchmarks/results/demo_seeds.txt``, followed by the tables of the
earlier runs (:data:`BEFORE`): before the planted weakness's part was enlarged (``demo_seeds_before_planted.jsonl``,
2026-11-28, and quick seed 0 at 2 threads rerun on 2026-11-29 in a newly installed environment, where it missed),
and before the demo's other effects were strengthened (``demo_seeds_before.jsonl``: planted elevation margin only).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
RECORD, TABLE = RESULTS / "demo_seeds.jsonl", RESULTS / "demo_seeds.txt"
#: the earlier records, newest first, each with the title of its table
BEFORE = [
    (RESULTS / "demo_seeds_before_planted.jsonl",
     "before the planted weakness's part was enlarged (quick: 30 objects x 8 renders, 15 epochs, 3 instances per class, "
     "20 steps; both: 96 random queries per instance; default: 6 instances per class); 2026-11-28, quick:0:2 "
     "2026-11-29 in a newly installed environment (numpy 2.4.6, scipy 1.17.1, scikit-learn 1.9.1, torch 2.13.0)"),
    (RESULTS / "demo_seeds_before.jsonl", "before the demo's effects were strengthened"),
]

#: the units in the order they run: quick seeds 0-4 at 1 thread, then at 2, then the full demo likewise
UNITS = [f"{mode}:{seed}:{threads}" for mode in ("quick", "default") for threads in (1, 2) for seed in range(5)]


def _margin(parts: dict) -> dict:
    part = parts["examine-planted"]
    rules = part["result"]["weakness"]["rules"]
    head = rules[0] if rules and rules[0]["confirmed"] else None
    numbers = part["numbers"]
    return {
        "headline": head["text"].split(":")[0] if head else None,
        "lift_low": head["lift_low"] if head else None,
        "reference_support": head["reference_support"] if head else None,
        "failure_outside": numbers["failure rate, random factors with |elevation| > 30"],
        "failure_inside": numbers["failure rate, random factors with |elevation| <= 30"],
        "p_dependent": parts["overfit-synthetic-dependent"]["result"]["pvalue"],
        "p_shapes_train": parts["overfit-shapes-train"]["result"]["pvalue"],
        **_digits(parts["examine-digits-plain"]),
    }


def _digits(part: dict) -> dict:
    rules = part["result"]["weakness"]["rules"]
    head = rules[0] if rules and rules[0]["confirmed"] else None
    numbers = part["numbers"]
    return {"digits_headline": head["text"].split(":")[0] if head else None,
            "digits_lift_low": head["lift_low"] if head else None,
            "digits_drop": numbers["accuracy at |rotation| <= 10 (grid, no translation)"]
            - numbers["accuracy at |rotation| >= 20 (grid, no translation)"]}


def run_unit(unit: str) -> dict | None:
    """One demo in a fresh process and folder (``mode:seed:threads``); None (its stderr's end printed) if it failed."""
    mode, seed, threads = unit.split(":")
    env = {**os.environ, "OMP_NUM_THREADS": threads}
    with tempfile.TemporaryDirectory(prefix="bench-demo-seeds-") as out:
        command = [sys.executable, "-m", "fitaudit", "demo", "--seed", seed, "--quiet", "--json", "--out", out]
        start = time.perf_counter()
        done = subprocess.run(command + (["--quick"] if mode == "quick" else []), capture_output=True, text=True,
                              env=env)
        wall = time.perf_counter() - start
    if done.returncode != 0:
        print(f"{unit} exited {done.returncode}:\n{done.stderr[-3000:]}", file=sys.stderr, flush=True)
        return None
    written = json.loads(done.stdout)
    parts = {p["id"]: p for p in written["parts"]}
    known = written["known_answers"]
    numbers = json.dumps({pid: p["numbers"] for pid, p in parts.items()}, sort_keys=True)
    return {"unit": unit, "mode": mode, "seed": int(seed), "threads": int(threads), "wall": wall,
            "found": sum(a["met"] for a in known.values()), "known": len(known),
            "missed": sorted(pid for pid, a in known.items() if not a["met"]),
            "digest": hashlib.sha256(numbers.encode()).hexdigest()[:12],
            "load": os.getloadavg()[0], **_margin(parts)}


def _low(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else "-"


def table(rows: list[dict]) -> str:
    later = "p_dependent" in rows[0]
    head = (f"{'mode':8s} {'seed':>4s} {'thr':>3s} {'found':>7s} {'wall s':>7s} {'load':>5s} {'digest':12s} "
            f"{'lift_low':>8s} {'n_ref':>5s} {'fail>30':>7s} {'fail<=30':>8s}")
    if later:
        head += f" {'p_dep':>8s} {'p_train':>8s} {'dig_low':>7s} {'dig_drop':>8s}"
    lines = [head + "  headline" + (" / digits' headline" if later else "") + " / missed"]
    for r in sorted(rows, key=lambda r: (r["mode"] != "quick", r["seed"], r["threads"])):
        line = (f"{r['mode']:8s} {r['seed']:4d} {r['threads']:3d} {r['found']:3d}/{r['known']:<3d} {r['wall']:7.0f} "
                f"{r['load']:5.1f} {r['digest']:12s} {_low(r['lift_low']):>8s} {r['reference_support'] or 0:5d} "
                f"{r['failure_outside']:7.2f} {r['failure_inside']:8.2f}")
        if later:
            line += (f" {r['p_dependent']:8.1e} {r['p_shapes_train']:8.1e} {_low(r['digits_lift_low']):>7s} "
                     f"{r['digits_drop']:8.2f}")
        lines.append(line + f"  {r['headline']}" + (f" / {r['digits_headline']}" if later else "")
                     + (f" / MISSED {', '.join(r['missed'])}" if r["missed"] else ""))
    return "\n".join(lines)


def write_table() -> str:
    """The table of every recorded unit (and of the runs before), written to :data:`TABLE`."""
    rows = [json.loads(line) for line in RECORD.read_text().splitlines()] if RECORD.exists() else []
    text = ("# now: quick Shapes CNN 100 epochs, quick synthetic d = 500 and m = 2,000, digit CNNs trained on shifts "
            "of up to 0.1 and 20 quick test digits examined; planted weakness (both modes): 40 objects x 10 renders, "
            "20 epochs, 10 instances per class, 40 steps, 384 random queries per instance\n"
            + (table(rows) if rows else "(none yet)") + "\n")
    for path, title in BEFORE:
        if path.exists():
            text += f"\n# {title} ({path.name})\n" + table([json.loads(line) for line in path.read_text().splitlines()]) + "\n"
    TABLE.write_text("# python benchmarks/bench_demo_seeds.py: each demo in a fresh process and folder, "
                     "OMP_NUM_THREADS = thr; 2 shared cores (load: 1-minute load average at the end)\n" + text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", nargs="+", default=UNITS, help="mode:seed:threads (default: all, in order)")
    parser.add_argument("--table", action="store_true", help="only write the table of the recorded units")
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    done = {json.loads(line)["unit"] for line in RECORD.read_text().splitlines()} if RECORD.exists() else set()
    for unit in [] if args.table else args.units:
        if unit in done:
            continue
        row = run_unit(unit)
        if row is None:
            continue
        with RECORD.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)
        write_table()  # after every unit: the results so far survive a kill
    print(write_table())


if __name__ == "__main__":
    main()
