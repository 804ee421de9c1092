"""``fitaudit measures list``: the registered complexity measures and what each needs.

::

    fitaudit measures list [--json]

One line per measure: name, family (baseline, starting_kit, fantastic,
winners, fitaudit), direction, whether it reads the training data, the
network at initialisation or gradients, its rough cost, the model formats
it reads (torch; onnx for measures of outputs or weights, see
``fitaudit pgdl import``), and the first line of its docstring. Every measure is oriented so that a larger value predicts
a larger generalization gap.
"""

from __future__ import annotations

import argparse
from typing import Any

from fitaudit.cli._common import examples

#: every registered measure's orientation (fitaudit.measures.base)
DIRECTION = "larger = larger gap"


def run_list(args: argparse.Namespace) -> Any:
    """Handler: the metadata of every registered measure."""
    from fitaudit.measures import list_measures, measure_class

    entries = []
    for name in list_measures():
        meta = measure_class(name).metadata()
        entries.append({"direction": meta.get("direction", DIRECTION), **meta})
    return {"measures": entries}


def _yes(flag: bool) -> str:
    return "yes" if flag else "-"


def list_summary(result: dict[str, Any]) -> str:
    """An aligned table of the measures."""
    entries = result["measures"]
    rows = [
        [m["name"], m["family"], m["direction"], _yes(m["needs_data"]), _yes(m["needs_init"]), _yes(m["needs_grad"]),
         m["cost"], ",".join(m["formats"]), m["summary"]]
        for m in entries
    ]
    header = ["name", "family", "direction", "data", "init", "grad", "cost", "formats", "summary"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    lines = ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in [header, *rows]]
    by_family: dict[str, int] = {}
    for m in entries:
        by_family[m["family"]] = by_family.get(m["family"], 0) + 1
    counts = ", ".join(f"{n} {f}" for f, n in sorted(by_family.items()))
    return f"{len(entries)} registered measures ({counts}); larger values predict larger gaps.\n" + "\n".join(lines)


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit measures list``."""
    parser = subparsers.add_parser(
        "measures",
        **examples("fitaudit measures list", "fitaudit measures list --json"),
        help="the registered generalization measures",
        description="Complexity measures that predict the generalization gap (fitaudit.measures).",
    )
    commands = parser.add_subparsers(dest="measures_command", metavar="SUBCOMMAND", parser_class=type(parser), required=True)
    listing = commands.add_parser(
        "list", parents=parents, **examples("fitaudit measures list", "fitaudit measures list --json"), help="name, family, needs and cost of every measure",
        description="List every registered measure with its metadata.",
    )
    listing.set_defaults(handler=run_list, summary=list_summary)
