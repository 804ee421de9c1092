"""Build time and on-disk size of the default model zoos (issue 10: "document size and build time").

For each default zoo (digits and shapes, quick and default sizes) this
builds the zoo from scratch (a fresh checkpoint folder, so nothing is
reused), writes it in the PGDL competition's format and reports: members,
how many reached the training cross-entropy target, wall time of training
(``n_jobs`` workers, one torch thread each) and of writing, the sum of the
members' own training wall times and CPU times (the CPU time does not grow
with the machine's load: a quiet 2-core machine builds the zoo in about
half of it), the task's size on disk (checkpoints excluded), the mean
train/test accuracy and the range of generalization gaps. The machine's
load average is printed: it is shared, so wall times are upper bounds of a
quiet machine's.

Run: ``OMP_NUM_THREADS=1 nice -n 10 python benchmarks/bench_zoo.py [--zoos digits-quick,shapes-quick] [--n-jobs 2]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path


def folder_size(path: Path, skip: str) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and skip not in p.parts)


def bench(name: str, size: str, n_jobs: int, out_root: Path) -> dict[str, object]:
    from fitaudit.pgdl import load_task
    from fitaudit.pgdl.zoo_task import CHECKPOINT_SUBDIR, build_zoo_task, write_zoo_task

    out = out_root / f"{name}-{size}"
    shutil.rmtree(out, ignore_errors=True)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    _, zoo = build_zoo_task(out, name, size=size, n_jobs=n_jobs, progress=False, random_state=0)
    total = time.perf_counter() - start
    start = time.perf_counter()
    write_zoo_task(zoo, out)  # written a second time to time the writer alone
    write_seconds = time.perf_counter() - start
    task = load_task(out)
    gaps = [task.gap(i) for i in task.model_ids]
    members = zoo.members
    return {
        "zoo": f"{name}-{size}",
        "grid": " x ".join(f"{k}{v}" for k, v in zoo.spec.grid.items()),
        "members": len(members),
        "converged": sum(m.converged for m in members),
        "train_n": len(zoo.data.x_train),
        "test_n": len(zoo.data.x_test),
        "build_s": total,
        "write_s": write_seconds,
        "one_core_s": sum(m.seconds for m in members),
        "cpu_s": sum(m.cpu_seconds for m in members),
        "epochs": f"{min(m.epochs for m in members)}-{max(m.epochs for m in members)}",
        "train_acc": sum(m.train_acc for m in members) / len(members),
        "test_acc": sum(m.test_acc for m in members) / len(members),
        "gap": f"{min(gaps):.3f}..{max(gaps):.3f}",
        "mb": folder_size(out, CHECKPOINT_SUBDIR) / 2**20,
        "load": load,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zoos", default="digits-quick,digits-default,shapes-quick,shapes-default")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", default=None, help="where to write the tasks (default: a temporary folder, removed)")
    parser.add_argument("--results", default=None, help="also write the table to this file")
    args = parser.parse_args()

    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="fitaudit-zoo-bench-"))
    rows = []
    try:
        for entry in args.zoos.split(","):
            name, size = entry.rsplit("-", 1)
            row = bench(name, size, args.n_jobs, root)
            rows.append(row)
            print(row, flush=True)
    finally:
        if args.out is None:
            shutil.rmtree(root, ignore_errors=True)
    header = (
        f"{'zoo':<15} {'members':>7} {'conv.':>5} {'train/test n':>12} {'build s':>8} {'1-core s':>8} {'CPU s':>7} "
        f"{'write s':>7} {'epochs':>7} {'train acc':>9} {'test acc':>8} {'gap range':>14} {'MB':>6} {'load':>5}"
    )
    lines = [
        f"Default zoos built from scratch with n_jobs={args.n_jobs} (one torch thread per member), "
        "written in the PGDL format (checkpoints excluded from MB)",
        "'build s' = train + write wall time; '1-core s' = sum of the members' training wall times; "
        "'CPU s' = sum of their training threads' CPU times (a quiet 2-core machine builds in about CPU s / 2); "
        "'load' = 1-min load average at the start (a shared 2-core machine)",
        header,
    ]
    for r in rows:
        lines.append(
            f"{r['zoo']:<15} {r['members']:>7} {r['converged']:>5} {str(r['train_n']) + '/' + str(r['test_n']):>12} "
            f"{r['build_s']:>8.1f} {r['one_core_s']:>8.1f} {r['cpu_s']:>7.1f} {r['write_s']:>7.1f} {r['epochs']:>7} "
            f"{r['train_acc']:>9.3f} {r['test_acc']:>8.3f} {r['gap']:>14} {r['mb']:>6.2f} {r['load']:>5.1f}"
        )
    lines += ["grids:"] + [f"  {r['zoo']}: {r['grid']}" for r in rows]
    text = "\n".join(lines)
    print(text)
    if args.results:
        Path(args.results).write_text(text + "\n")


if __name__ == "__main__":
    main()
