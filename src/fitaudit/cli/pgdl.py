"""``fitaudit pgdl``: score generalization measures on PGDL tasks, rank them, build model zoos.

::

    fitaudit pgdl score --task DIR --measure weight_norm,noisy_gap [--json]
    fitaudit pgdl leaderboard --task DIR [--task DIR2] [--measure ...] [--out DIR]
    fitaudit pgdl zoo build --zoo digits --size default --out DIR [--n-jobs 2]
    fitaudit pgdl import --models DIR --table runs.csv --train-data train.npz [--test-data test.npz] --out POP
    fitaudit pgdl import --models DIR --table runs.csv --train-data train/ --test-data test/ --resize 36 --crop 32 [--classes a,b,c] --out POP
    fitaudit pgdl rank --task POP [--measure NAME,...] [--n-measures 3]

``score`` computes each measure on each model of a task in the
competition's format within its budget (300 s per model, pooled over the
task; over budget is reported and scores 0) and prints Kendall's tau, the
granulated Kendall Psi, the official conditional MI (x100, the
competition's score) and the general conditional MI. ``leaderboard`` does
it for every registered measure (or those given) on one or more tasks and
writes ``leaderboard.json``, ``leaderboard.md`` and ``leaderboard.png`` to
``--out`` (checkpoints there too: a rerun resumes). ``zoo build`` trains a
built-in model zoo and writes it as a task. ``import`` reads a user's own
models (ONNX files or torch folders) with a table of their hyperparameters
and accuracies into a population folder that the other commands take as
``--task`` (:mod:`fitaudit.pgdl.population`); ``rank`` orders those models
by predicted gap with the measures that lead fitaudit's leaderboard, each
with its leaderboard score and the caveats of the method.
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit.cli._common import (
    add_classes_option,
    add_dask_option,
    add_device_option,
    add_pipeline_options,
    add_seed,
    examples,
    given_pipeline,
    option_help,
    out_folder,
    run_options,
    table,
)

DEFAULT_LEADERBOARD_OUT = Path("fitaudit-out") / "pgdl-leaderboard"
_TRUST_CODE_HELP = ("allow torch folders naming your own architecture file (runs it; only for files you trust: "
                    "a population folder never grants this itself)")


def _measure_names(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    names = [part.strip() for value in values for part in value.split(",") if part.strip()]
    if not names:
        raise InputError("`--measure` must name measures separated by commas (see `fitaudit measures list`).")
    return names


def _task_folder(path: str) -> Path:
    folder = Path(path)
    if not folder.is_dir():
        raise InputError(f"`--task`: {str(folder)!r} is not a folder (a PGDL task directory with model_configs.json).")
    return folder


def _budget(args: argparse.Namespace) -> float | None:
    return None if args.no_budget else args.budget_s


def _fmt(value: Any, digits: int = 3) -> str:
    from fitaudit.report.numbers import fixed

    return fixed(value, digits)


# ---------------------------------------------------------------------------- score
def run_score(args: argparse.Namespace) -> Any:
    """Handler of ``fitaudit pgdl score`` (saturated measures are counted and noted in their scores)."""
    from fitaudit.pgdl.harness import as_measures, as_task, score_task
    from fitaudit.pgdl.leaderboard import mark_saturation
    from fitaudit.random import as_seed

    names = _measure_names(args.measure)
    if names is None:
        raise InputError("`--measure` is required (see `fitaudit measures list`).")
    task = as_task(_task_folder(args.task), trust_code=args.trust_code)
    seed = as_seed(args.seed, "--seed")
    measures = as_measures(names, seed)
    result = score_task(task, measures, budget_s=_budget(args), checkpoint_dir=args.checkpoint_dir,
                        options=run_options(args).replace(random_state=seed))
    saturated = mark_saturation(result, measures, len(task.train_data()[1]))
    args.summary = functools.partial(score_summary, saturated=saturated)
    return result


def _score_lines(scores: list[Any], saturated: dict[str, int]) -> list[str]:
    from fitaudit.pgdl.leaderboard import row_flags

    rows = []
    for s in sorted(scores, key=lambda s: (s.official_score is None, -(s.official_score or 0.0))):
        official = None if s.official_score is None else 100 * s.official_score
        flag = row_flags({"over_budget": s.over_budget, "n_models": len(s.values), "n_errors": len(s.errors),
                          "first_error": next(iter(s.errors.values()), ""), "n_saturated": saturated.get(s.measure, 0)})
        rows.append([s.measure, _fmt(official, 2), _fmt(s.kendall), _fmt(s.psi), _fmt(s.general_cmi),
                     f"{s.seconds_per_model:.2f}", flag])
    lines = [table(rows, ["measure", "score (100 x CMI)", "Kendall tau", "Psi", "general CMI", "s / model", ""])]
    lines += [f"  note: {s.measure}: {s.note}" for s in scores if s.note]
    return lines


def score_summary(result: Any, saturated: dict[str, int] | None = None) -> str:
    """A verdict sentence and the metrics of each measure (``saturated``: models at a search's bound, per measure)."""
    from fitaudit.report.verdicts import read, said_lines

    lines = [*said_lines(read(result)), *_score_lines(result.scores, saturated or {})]
    reused = getattr(result, "reused_units", 0)
    if reused:
        lines.append(f"Reused {reused} of {result.n_models * len(result.scores)} (measure, model) units from "
                     "--checkpoint-dir (values and times of an earlier run).")  # fmt: skip
    return "\n".join(lines)


# ---------------------------------------------------------------------------- leaderboard
def run_leaderboard(args: argparse.Namespace) -> Any:
    """Handler of ``fitaudit pgdl leaderboard``: ranks measures and writes JSON, markdown and PNG."""
    from fitaudit.pgdl.leaderboard import leaderboard
    from fitaudit.report.pgdl import save_leaderboard

    out = out_folder(args.out)
    tasks = [_task_folder(t) for t in args.task]
    board = leaderboard(
        tasks,
        _measure_names(args.measure),
        budget_s=_budget(args),
        checkpoint_dir=args.checkpoint_dir if args.checkpoint_dir is not None else out / "checkpoints",
        options=run_options(args),
    )
    board_paths = save_leaderboard(board, out)
    args.written = board_paths
    return board


def leaderboard_summary(board: Any) -> str:
    """The reading, the ranked table and where the files went."""
    from fitaudit.pgdl.leaderboard import row_flags
    from fitaudit.report.verdicts import read, said_lines

    rows = []
    for rank, row in enumerate(board.rows, start=1):
        flag = row_flags(row)
        rows.append([f"{rank}. {row['measure']}", _fmt(row["final_score"], 2), _fmt(row["kendall"]), _fmt(row["psi"]),
                     _fmt(row["general_cmi"]), f"{row['seconds_per_model']:.2f}", flag])
    lines = [*said_lines(read(board)),
             table(rows, ["measure", "score (100 x CMI)", "Kendall tau", "Psi", "general CMI", "s / model", ""])]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- zoo build
def run_zoo_build(args: argparse.Namespace) -> Any:
    """Handler of ``fitaudit pgdl zoo build``: trains a built-in zoo and writes it as a task."""
    from fitaudit.pgdl.zoo_task import build_zoo_task

    out = out_folder(args.out)
    folder, zoo = build_zoo_task(out, args.zoo, size=args.size, checkpoint_dir=args.checkpoint_dir,
                                 options=run_options(args))
    return {
        "task": str(folder),
        "zoo": zoo.spec.name,
        "n_models": len(zoo.members),
        "hparams": {name: list(values) for name, values in zoo.spec.grid.items()},
        "build_seconds": zoo.build_seconds,
        "members": [
            {"model_id": m.model_id, "hparams": m.hparams, "train_acc": m.train_acc, "test_acc": m.test_acc,
             "epochs": m.epochs, "converged": m.converged, "seconds": m.seconds}
            for m in zoo.members
        ],
    }


def zoo_summary(result: dict[str, Any]) -> str:
    """What was built and its accuracies."""
    members = result["members"]
    train = [m["train_acc"] for m in members]
    test = [m["test_acc"] for m in members]
    gaps = [a - b for a, b in zip(train, test)]
    converged = sum(m["converged"] for m in members)
    grid = " x ".join(f"{k} {v}" for k, v in result["hparams"].items())
    return (
        f"Wrote the {result['zoo']} zoo as a PGDL task in {result['task']}: {result['n_models']} models over {grid}, "
        f"{converged} reached 100% training accuracy or the target loss; built in {result['build_seconds']:.0f} s.\n"
        f"  train accuracy {min(train):.3f}-{max(train):.3f}, test accuracy {min(test):.3f}-{max(test):.3f}, "
        f"gap {min(gaps):.3f}-{max(gaps):.3f}\n"
        f"  score measures on it: fitaudit pgdl score --task {result['task']} --measure NAME"
    )


# ---------------------------------------------------------------------------- import
def run_import(args: argparse.Namespace) -> Any:
    """Handler of ``fitaudit pgdl import``."""
    from fitaudit.pgdl.population_import import import_population

    population = import_population(args.models, args.table, args.train_data, out_folder(args.out), test_data=args.test_data,
                                   trust_code=args.trust_code, pipeline=given_pipeline(args), classes=args.classes,
                                   device=args.device)
    return {
        "population": str(population.directory),
        "n_models": len(population),
        "formats": {f: sum(v == f for v in population.formats.values()) for f in sorted(set(population.formats.values()))},
        "hparams": population.manifest["possible_values"],
        "metrics": {i: population.metrics(i) for i in population.model_ids},
        "disagreements": population.disagreements,
        "pipeline": population.manifest.get("pipeline"),  # the one rule: which pipeline scored, and why
        "recorded_metrics": population.manifest.get("recorded_metrics"),
    }


def import_summary(result: dict[str, Any]) -> str:
    """What was imported, and where the table and the data disagree."""
    formats = ", ".join(f"{n} {f}" for f, n in result["formats"].items())
    grid = " x ".join(f"{k} {v}" for k, v in result["hparams"].items())
    gaps = [m["train_acc"] - m["test_acc"] for m in result["metrics"].values()]
    from fitaudit.report.pipelines import population_lines

    lines = [f"Imported {result['n_models']} models ({formats}) over {grid} into {result['population']}; "
             f"gap (train - test accuracy) from {min(gaps):.3f} to {max(gaps):.3f}."]  # a dash reads badly with minus signs
    lines += [f"  {line}" for line in population_lines(result["pipeline"], result["metrics"],
                                                        result["recorded_metrics"])]
    if result["disagreements"]:
        lines.append(f"  {len(result['disagreements'])} accuracies in the table differ from those recomputed on the data "
                     "(the recomputed ones are used):")
        lines += [f"    {d}" for d in result["disagreements"]]
    lines.append(f"  rank them: fitaudit pgdl rank --task {result['population']}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- rank
def run_rank(args: argparse.Namespace) -> Any:
    """Handler of ``fitaudit pgdl rank``."""
    from fitaudit.pgdl.leaderboard import rank_models

    return rank_models(
        _task_folder(args.task),
        _measure_names(args.measure),
        n_measures=args.n_measures,
        budget_s=_budget(args),
        checkpoint_dir=args.checkpoint_dir,
        options=run_options(args),
    )


def _ordering(order: list[str], values: dict[str, float]) -> str:
    """``a > b = c > d``: model ids by decreasing value, equal values joined by ``=``."""
    text = order[0]
    for previous, model_id in zip(order, order[1:]):
        text += (" = " if values[model_id] == values[previous] else " > ") + model_id
    return text


def rank_summary(result: Any) -> str:
    """Per measure the models by predicted gap, its leaderboard score; then the caveats."""
    chosen = "the measures that lead fitaudit's leaderboard" if result.leading else "the measures asked for"
    lines = [f"{len(result.model_ids)} models of {result.task} ordered by predicted generalization gap "
             f"(largest first), by {chosen}:"]
    for entry in result.entries:
        board = ("not on the leaderboard" if entry["leaderboard_score"] is None else
                 f"leaderboard score {entry['leaderboard_score']:.2f}, Kendall tau {entry['leaderboard_kendall']:.3f}")
        here = "" if entry["kendall_here"] is None else f"; Kendall tau with your models' gaps {entry['kendall_here']:.3f}"
        lines.append(f"  {entry['measure']} ({board}{here}):")
        order = entry["order"]
        lines.append("    " + (_ordering(order, entry["values"]) if order else "no value (see the note)"))
        if len(order) > 1 and entry["values"][order[0]] == entry["values"][order[-1]]:
            lines.append(f"    every model has the same value ({entry['values'][order[0]]:.6g}): this measure does not order them")
        missing = len(result.model_ids) - len(order)
        if missing or entry["note"]:
            lines.append(f"    note: {entry['note'] or f'no value for {missing} models'}")
    lines.append("Caveats:")
    lines += [f"  - {c}" for c in result.caveats]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- parsers
def _scoring_options(parser: argparse.ArgumentParser) -> None:
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--budget-s", type=float, default=300.0,
                        help="seconds per model, pooled over the task, for each measure (default 300, the competition's)")
    budget.add_argument("--no-budget", action="store_true", help="no time budget")
    parser.add_argument("--n-jobs", type=int, default=None, help="models scored in parallel (joblib; default 1)")
    add_dask_option(parser, "the models' measures")
    add_device_option(parser)
    add_seed(parser, "the measures")
    parser.add_argument("--trust-code", action="store_true",
                        help=_TRUST_CODE_HELP)


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit pgdl`` with ``score``, ``leaderboard`` and ``zoo build``."""
    parser = subparsers.add_parser(
        "pgdl",
        **examples("fitaudit pgdl zoo build --zoo digits --size quick --out zoo/",
                   "fitaudit pgdl score --task zoo/ --measure weight_norm",
                   "fitaudit pgdl leaderboard --task zoo/ --out board/"),
        help="generalization measures scored as the PGDL competition did",
        description="Predicting generalization in deep learning: score measures on tasks, rank them, build zoos.",
    )
    commands = parser.add_subparsers(dest="pgdl_command", metavar="SUBCOMMAND", parser_class=type(parser), required=True)

    score = commands.add_parser(
        "score", parents=parents, **examples(
            "fitaudit pgdl score --task zoo/ --measure weight_norm", "fitaudit pgdl score --task zoo/ --json"), help="score measures on one task (Kendall, Psi, official and general CMI)",
        description="Compute measures on every model of a PGDL task and score them by the competition's metrics.",
    )
    score.add_argument("--task", required=True, help="PGDL task directory (model_configs.json, model_<id>/, dataset_1/)")
    score.add_argument("--measure", action="append", metavar="NAME[,NAME...]",
                       help="measures to score (see `fitaudit measures list`); repeatable")
    score.add_argument("--checkpoint-dir", default=None, help="keep finished (measure, model) units here; a rerun resumes")
    _scoring_options(score)
    score.set_defaults(handler=run_score, summary=score_summary)

    board = commands.add_parser(
        "leaderboard", parents=parents, **examples(
            "fitaudit pgdl leaderboard --task zoo/", "fitaudit pgdl leaderboard --task zoo/ --task zoo2/ --out board/"), help="rank measures over one or more tasks (table + plot)",
        description="Rank every registered measure (or those given) over tasks by the competition's score.",
    )
    board.add_argument("--task", required=True, action="append", help="PGDL task directory; repeat for several tasks")
    board.add_argument("--measure", action="append", metavar="NAME[,NAME...]", help="default: every registered measure")
    board.add_argument("--out", default=str(DEFAULT_LEADERBOARD_OUT), help=option_help(
        "--out", f"a folder: leaderboard.json/.md/.png and checkpoints; default {DEFAULT_LEADERBOARD_OUT}"))
    board.add_argument("--checkpoint-dir", default=None, help="default: OUT/checkpoints")
    _scoring_options(board)
    board.set_defaults(handler=run_leaderboard, summary=leaderboard_summary, out_is_folder=True)

    zoo = commands.add_parser("zoo", **examples("fitaudit pgdl zoo build --zoo digits --size quick --out zoo/",
                                                "fitaudit pgdl zoo build --zoo shapes --out shapes-zoo/"), help="model zoos written as PGDL tasks", description="Model zoos.")
    zoo_commands = zoo.add_subparsers(dest="zoo_command", metavar="SUBCOMMAND", parser_class=type(parser), required=True)
    build = zoo_commands.add_parser(
        "build", parents=parents, **examples(
            "fitaudit pgdl zoo build --zoo digits --size quick --out zoo/",
            "fitaudit pgdl zoo build --zoo shapes --size default --out shapes-zoo/ --n-jobs 2"), help="train a built-in zoo and write it as a PGDL task",
        description="Train a built-in model zoo over a hyperparameter grid and write it in the competition's format.",
    )
    build.add_argument("--zoo", default="digits", choices=("digits", "shapes"), help="built-in zoo (default digits)")
    build.add_argument("--size", default="default", choices=("quick", "default", "large"),
                       help="grid size: quick 8, default 24, large 81 members (default default)")
    build.add_argument("--out", required=True, help=option_help("--out", "a folder: the PGDL task"))
    build.add_argument("--n-jobs", type=int, default=None, help="members trained in parallel (joblib)")
    add_dask_option(build, "the members' training")
    add_device_option(build)
    build.add_argument("--checkpoint-dir", default=None, help="finished members (default OUT/.zoo-checkpoints)")
    add_seed(build, "the members' initialisation and training")
    build.set_defaults(handler=run_zoo_build, summary=zoo_summary, out_is_folder=True)

    imp = commands.add_parser(
        "import", parents=parents, **examples(
            "fitaudit pgdl import --models runs/ --table runs.csv --train-data train.npz --out population/",
            "fitaudit pgdl import --models runs/ --table runs.csv --train-data train/ --test-data test/ --resize 36 "
            "--crop 32 --out population/"), help="a population of your own models (ONNX or torch folders) with a runs table",
        description="Import your trained models, their hyperparameters and accuracies as a population to score and rank.",
    )
    imp.add_argument("--models", required=True, help="folder of models: NAME.onnx files or torch folders (config.json + weights.safetensors)")
    imp.add_argument("--table", required=True, help="CSV: model (file/folder name), train_acc, test_acc, one column per hyperparameter")
    imp.add_argument("--train-data", required=True, help=".npz with x (channels first) and y, or an image folder "
                     "root/<class>/<image> (or CSV path,label): the training data")
    imp.add_argument("--test-data", default=None, help=".npz or image folder: test accuracies are recomputed on it")
    add_pipeline_options(imp, "with image folders", arrays=True)
    add_classes_option(imp, "with image folders")
    imp.add_argument("--out", required=True, help=option_help("--out", "a new or empty folder: the population"))
    imp.add_argument("--trust-code", action="store_true", help=_TRUST_CODE_HELP)
    add_device_option(imp)
    imp.set_defaults(handler=run_import, summary=import_summary, out_is_folder=True)

    ranking = commands.add_parser(
        "rank", parents=parents, **examples(
            "fitaudit pgdl rank --task population/", "fitaudit pgdl rank --task population/ --n-measures 3"), help="order your models by predicted generalization gap (leading measures)",
        description="Order a population's models by predicted gap with the measures that lead fitaudit's leaderboard.",
    )
    ranking.add_argument("--task", required=True, help="population folder (fitaudit pgdl import) or PGDL task directory")
    ranking.add_argument("--measure", action="append", metavar="NAME[,NAME...]",
                         help="measures to rank by (default: the leading measures that read the models' formats)")
    ranking.add_argument("--n-measures", type=int, default=None,
                         help="how many leading measures rank the models without --measure (default 3)")
    ranking.add_argument("--checkpoint-dir", default=None, help="keep finished (measure, model) units here; a rerun resumes")
    _scoring_options(ranking)
    ranking.set_defaults(handler=run_rank, summary=rank_summary)
