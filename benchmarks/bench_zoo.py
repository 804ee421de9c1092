"""Build time and on-disk size of the default model zoos (issue 10: "document size and build time").

For each default zoo (digits and shapes, quick and default sizes) this
builds the zoo, writes it in the PGDL competition's format and reports:
members, how many were reused from an earlier run's checkpoints (0 in a
fresh folder), how many reached the training cross-entropy target, wall time of training
(``n_jobs`` workers, one torch thread each) and of writing, the sum of the
members' own training wall times and CPU times (the CPU time does not grow
with the machine's load: a quiet 2-core machine builds the zoo in about
half of it), the task's size on disk (checkpoints excluded), the mean
train/test accuracy and the range of generalization gaps. The machine's
load average is printed: it is shared, so wall times are upper bounds of a
quiet machine's.

Output: without ``--out`` the tasks go to a temporary folder that the
script creates and removes at the end. With ``--out DIR`` each zoo is
written to ``DIR/<zoo>-<size>`` and kept, with the builder's member
checkpoints (``DIR/<zoo>-<size>/.zoo-checkpoints``,
:func:`fitaudit.pgdl.zoo_task.build_zoo_task`): nothing there is deleted,
so a killed run resumes where it stopped and a finished zoo is reused (by
``fitaudit pgdl score --task DIR/<zoo>-<size>``, or by a rerun, which then
trains nothing). 'reused' counts the members read back from those
checkpoints: the build time of a run that reused members is not a
from-scratch time (use a new folder for that), while '1-core s' and 'CPU s'
are always the members' own training times, recorded when they were
trained.

Run: ``OMP_NUM_THREADS=1 nice -n 10 python benchmarks/bench_zoo.py [--zoos digits-quick,shapes-quick] [--n-jobs 2] [--out DIR]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from _results import emit, timed
from fitaudit.options import RunOptions


def folder_size(path: Path, skip: str) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and skip not in p.parts)


def bench(name: str, size: str, n_jobs: int, out_root: Path) -> dict[str, object]:
    from fitaudit.checkpoint import CheckpointStore
    from fitaudit.pgdl import load_task
    from fitaudit.pgdl.zoo_task import CHECKPOINT_SUBDIR, build_zoo_task, write_zoo_task

    out = out_root / f"{name}-{size}"  # kept: a rerun resumes from its member checkpoints
    store = CheckpointStore(out / CHECKPOINT_SUBDIR)
    stored_before = set(store.keys())
    load = os.getloadavg()[0]
    total, (_, zoo) = timed(build_zoo_task, out, name, size=size,
                            options=RunOptions(n_jobs=n_jobs, progress=False, random_state=0))
    write_seconds, _ = timed(write_zoo_task, zoo, out)  # written a second time to time the writer alone
    task = load_task(out)
    gaps = [task.gap(i) for i in task.model_ids]
    members = zoo.members
    trained = len(set(store.keys()) - stored_before)  # a member trained in this run adds its checkpoint
    return {
        "zoo": f"{name}-{size}",
        "grid": " x ".join(f"{k}{v}" for k, v in zoo.spec.grid.items()),
        "members": len(members),
        "reused": len(members) - trained,
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
    parser.add_argument("--out", default=None, help="write the tasks to DIR/<zoo>-<size> and keep them with their member "
                        "checkpoints, so a rerun resumes (default: a temporary folder, removed)")
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
        if args.out is None:  # only the temporary folder made above; a folder the user named is kept
            shutil.rmtree(root, ignore_errors=True)
    header = (
        f"{'zoo':<15} {'members':>7} {'reused':>6} {'conv.':>5} {'train/test n':>12} {'build s':>8} {'1-core s':>8} {'CPU s':>7} "
        f"{'write s':>7} {'epochs':>7} {'train acc':>9} {'test acc':>8} {'gap range':>14} {'MB':>6} {'load':>5}"
    )
    lines = [
        f"Default zoos built with n_jobs={args.n_jobs} (one torch thread per member), "
        "written in the PGDL format (checkpoints excluded from MB)",
        "'reused' = members read from an earlier run's checkpoints in --out (0: built from scratch; "
        "otherwise 'build s' is not a from-scratch time)",
        "'build s' = train + write wall time; '1-core s' = sum of the members' training wall times; "
        "'CPU s' = sum of their training threads' CPU times (a quiet 2-core machine builds in about CPU s / 2); "
        "'load' = 1-min load average at the start (a shared 2-core machine)",
        header,
    ]
    for r in rows:
        lines.append(
            f"{r['zoo']:<15} {r['members']:>7} {r['reused']:>6} {r['converged']:>5} {str(r['train_n']) + '/' + str(r['test_n']):>12} "
            f"{r['build_s']:>8.1f} {r['one_core_s']:>8.1f} {r['cpu_s']:>7.1f} {r['write_s']:>7.1f} {r['epochs']:>7} "
            f"{r['train_acc']:>9.3f} {r['test_acc']:>8.3f} {r['gap']:>14} {r['mb']:>6.2f} {r['load']:>5.1f}"
        )
    lines += ["grids:"] + [f"  {r['zoo']}: {r['grid']}" for r in rows]
    emit(lines, args.results)


if __name__ == "__main__":
    main()
