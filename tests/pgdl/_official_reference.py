"""A straightforward per-pair transcription of the official PGDL scorer (test reference only).

Written from the protocol as docs/pgdl.md#conditional-mutual-information-official-metric-2
states it and the description of the competition's
``scoring_program/mutual_information.py``: string-keyed bins, Python loops
over every ordered pair of models, one 2x2 table per bin. Slow on purpose.
"""

from __future__ import annotations

import itertools
import math
from typing import Any


def _entropy(counts: list[float]) -> float:
    total = sum(counts)
    return -sum((c / total) * math.log2(c / total + 1e-12) for c in counts)


def _bin_information(table: list[list[float]]) -> tuple[float, float]:
    total = sum(sum(row) for row in table)
    gap_marginal = [sum(row) for row in table]
    measure_marginal = [table[0][j] + table[1][j] for j in range(2)]
    information = 0.0
    for i in range(2):
        for j in range(2):
            joint = table[i][j] / total
            if joint == 0:
                continue
            information += joint * math.log2(joint / ((gap_marginal[i] / total) * (measure_marginal[j] / total)))
    return information, _entropy(gap_marginal)


def reference_official_cmi(model_configs: dict[str, Any], measure: dict[str, float]) -> float:
    specs = {(k if "model" in k else f"model_{k}"): v for k, v in model_configs.items()}
    prediction = {(k if "model" in k else f"model_{k}"): v for k, v in measure.items()}
    gap = {k: v["metrics"]["train_acc"] - v["metrics"]["test_acc"] for k, v in specs.items()}
    first = next(iter(specs.values()))["hparams"]
    names = list(first)
    best = math.inf
    for h1, h2 in itertools.permutations(names, 2):
        keys = [
            str(a) + str(b) + str(c) + str(d)
            for a, b in itertools.product(first[h1]["possible_values"], repeat=2)
            for c, d in itertools.product(first[h2]["possible_values"], repeat=2)
        ]
        tables = {key: [[0.0, 0.0], [0.0, 0.0]] for key in keys}
        for m1, s1 in specs.items():
            for m2, s2 in specs.items():
                row = 0 if gap[m1] > gap[m2] else 1
                column = 0 if prediction[m1] > prediction[m2] else 1
                key = (
                    str(s1["hparams"][h1]["current_value"])
                    + str(s2["hparams"][h1]["current_value"])
                    + str(s1["hparams"][h2]["current_value"])
                    + str(s2["hparams"][h2]["current_value"])
                )
                tables[key][row][column] += 1
        parts = [_bin_information(tables[key]) for key in keys]
        score = (sum(p[0] for p in parts) / len(parts)) / (sum(p[1] for p in parts) / len(parts))
        best = min(best, score)
    return best
