"""Time of every registered complexity measure on one default-zoo model, against the 300 s budget.

The PGDL competition allowed 5 minutes per model (on a GPU); fitaudit
asks every measure to fit that budget on this CPU (docs/pgdl.md#budget). The model is a member of
a default zoo written as a PGDL task (by default the last of the grid: the
widest, with weight decay and the larger batch), read back with
:func:`fitaudit.pgdl.load_task` exactly as ``fitaudit pgdl score`` reads
it; every measure runs with its default settings (the full searches) and
one torch thread. The PAC-Bayes measures sharing a sigma search reuse it
within a process; here the cache is cleared before each measure so that
every line is the measure's full cost.

Build the tasks first, e.g. ``fitaudit pgdl zoo build --zoo digits --out zoos/digits-default``
(or ``benchmarks/bench_zoo.py --out zoos``).

Run: ``python benchmarks/bench_measures.py --task zoos/digits-default --task zoos/shapes-default [--out FILE]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from fitaudit.measures import ModelRecord, get_measure, list_measures
from fitaudit.measures.base import WorkCache
from fitaudit.pgdl import load_task

BUDGET_S = 300.0


def member_record(task_dir: str, model_id: str | None) -> tuple[ModelRecord, str]:
    """One model of a PGDL task (default: the last id) as a ModelRecord, and its description."""
    task = load_task(task_dir)
    model_id = model_id or task.model_ids[-1]
    x, y = task.train_data()
    entry = task.configs[model_id]
    model = task.model(model_id)
    record = ModelRecord(
        model=model,
        train_x=x,
        train_y=y,
        initial_model=task.model(model_id, initial=True),
        hparams={k: v["current_value"] for k, v in entry["hparams"].items()},
        metrics=dict(entry["metrics"]),
        model_id=model_id,
    )
    n_params = sum(p.numel() for p in model.parameters())
    text = (
        f"task {task_dir}, model {model_id}: {record.hparams} ({n_params} parameters), "
        f"{len(x)} training images of shape {x.shape[1:]}: "
        f"train acc {record.metrics['train_acc']:.3f}, test acc {record.metrics['test_acc']:.3f}"
    )
    return record, text


def time_measures(task_dir: str, model_id: str | None) -> list[str]:
    """Time every measure on one model of a task; the printed lines."""
    record, description = member_record(task_dir, model_id)
    lines = [
        f"Per-measure time on one default-zoo model, budget {BUDGET_S:.0f} s per model (PGDL), 1 torch thread",
        description,
        f"  {'measure':32s} {'family':13s} {'cost':10s} {'seconds':>9s} {'value':>14s}  within budget",
    ]
    print("\n".join(lines), flush=True)
    total, over = 0.0, []
    for name in list_measures():
        measure = get_measure(name, random_state=0)
        start = time.perf_counter()
        value = measure(dataclasses.replace(record, cache=WorkCache()))  # its own sigma search: a fresh cache
        seconds = time.perf_counter() - start
        total += seconds
        if seconds > BUDGET_S:
            over.append(name)
        meta = measure.metadata()
        line = (
            f"  {name:32s} {meta['family']:13s} {meta['cost']:10s} {seconds:9.2f} {value:14.6g}  "
            f"{'yes' if seconds <= BUDGET_S else 'NO'}"
        )
        print(line, flush=True)
        lines.append(line)
    summary = f"  all {len(list_measures())} measures: {total:.1f} s in total; over the budget: {', '.join(over) or 'none'}"
    print(summary, flush=True)
    return lines + [summary]


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", action="append", required=True, help="PGDL task directory (repeatable)")
    parser.add_argument("--model-id", default=None, help="model of each task (default: its last)")
    parser.add_argument("--out", default=None, help="also write the tables to this file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    lines: list[str] = []
    for task_dir in args.task:
        lines += time_measures(task_dir, args.model_id) + [""]
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines))


if __name__ == "__main__":
    main()
