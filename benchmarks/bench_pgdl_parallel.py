"""CPU and wall time of ``fitaudit pgdl score`` with the PAC-Bayes measures at ``--n-jobs N``, before and after.

Runs the same command as fresh processes: with the fitaudit source named
by ``--baseline-src`` first on ``PYTHONPATH`` (e.g. ``git archive <commit>
src | tar -x -C /tmp/before``, then ``--baseline-src /tmp/before/src``),
with this tree, and with this tree at ``--n-jobs 1``; prints them side by
side: wall seconds, CPU seconds of the command and of every worker process
it waited for (user + sys, ``resource.getrusage(RUSAGE_CHILDREN)``), the
CPU seconds the rest of the machine used meanwhile (``/proc/stat``: the
contention), the load average at the start, and whether every value is bitwise the same in
the three runs. No checkpoint folder and no budget, so every (measure,
model) unit is computed in each run. The PAC-Bayes measures share a
noise-scale search per model and noise kind (isotropic:
``pacbayes_init/orig/flatness``; magnitude-aware: ``pacbayes_mag_*``);
before commit bd7bd73, a worker process searched again for every
(measure, model) unit it ran.

Run (under the shared timing lock):
``flock /work/notes/bench.lock env OMP_NUM_THREADS=1 python benchmarks/bench_pgdl_parallel.py --task TASK
--baseline-src /tmp/before/src [--n-jobs 2] [--results benchmarks/results/pgdl_parallel.txt]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

PACBAYES = "pacbayes_init,pacbayes_orig,pacbayes_flatness,pacbayes_mag_init,pacbayes_mag_orig,pacbayes_mag_flatness"


def busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (every process; ``/proc/stat``)."""
    with open("/proc/stat") as handle:
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in handle.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def run(task: str, measures: str, n_jobs: int, src: str | None) -> dict[str, object]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    command = [sys.executable, "-m", "fitaudit", "pgdl", "score", "--task", task, "--measure", measures,
               "--n-jobs", str(n_jobs), "--no-budget", "--quiet", "--json"]  # fmt: skip
    origin = subprocess.run([sys.executable, "-c", "import fitaudit; print(fitaudit.__file__)"], env=env,
                            capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    load = os.getloadavg()[0]
    before, busy = resource.getrusage(resource.RUSAGE_CHILDREN), busy_seconds()
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after, busy = resource.getrusage(resource.RUSAGE_CHILDREN), busy_seconds() - busy
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    result = json.loads(done.stdout)
    values = {s["measure"]: s["values"] for s in result["scores"]}
    return {"origin": origin, "wall": wall, "cpu": cpu, "others": busy - cpu, "load": load, "values": values}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", required=True, help="a PGDL task folder (e.g. a digits-quick zoo)")
    parser.add_argument("--baseline-src", required=True, help="the `src` folder of the baseline fitaudit")
    parser.add_argument("--measures", default=PACBAYES)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--results", default=None, help="also append the table to this file")
    args = parser.parse_args()

    rows = [("baseline", run(args.task, args.measures, args.n_jobs, args.baseline_src)),
            ("this tree", run(args.task, args.measures, args.n_jobs, None)),
            ("n_jobs=1", run(args.task, args.measures, 1, None))]  # fmt: skip
    same = all(r["values"] == rows[0][1]["values"] for _, r in rows)
    n_values = sum(len(v) for v in rows[0][1]["values"].values())  # type: ignore[union-attr]
    lines = [
        f"fitaudit pgdl score --task {args.task} --measure {args.measures} --n-jobs {args.n_jobs} --no-budget "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')})",
        "'CPU s' = user + sys of the command and the worker processes it waited for; 'others CPU s' = CPU seconds the rest "
        "of the machine used meanwhile (/proc/stat; 0 = quiet); 'load' = 1-min load average at the start (it includes "
        "the previous run's own load)",
        f"{'run':<10} {'wall s':>7} {'CPU s':>7} {'others CPU s':>12} {'load':>5}  fitaudit imported from",
    ]
    for label, r in rows:
        lines.append(f"{label:<10} {r['wall']:>7.1f} {r['cpu']:>7.1f} {r['others']:>12.1f} {r['load']:>5.2f}  {r['origin']}")
    lines.append(f"all {n_values} (measure, model) values bitwise identical in the three runs: {'yes' if same else 'NO'}")
    text = "\n".join(lines)
    print(text)
    if args.results:
        with Path(args.results).open("a") as handle:
            handle.write(text + "\n\n")


if __name__ == "__main__":
    main()
