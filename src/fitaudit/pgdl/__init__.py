"""Predicting generalization in deep learning: the PGDL protocol (docs/pgdl.md).

Ranking metrics of the NeurIPS 2020 PGDL competition and of "Fantastic
generalization measures" (Jiang et al., ICLR 2020): Kendall's tau-a, the
granulated Kendall coefficient Psi (Metric 1), the official conditional
mutual information exactly as the competition's scoring program computed
it (Metric 2, :func:`official_cmi`) and its general form
(:func:`conditional_mi`); the competition's task format; the scoring
harness.
"""

from __future__ import annotations

from fitaudit.pgdl.conditional_mi import ConditionalMI, conditional_mi
from fitaudit.pgdl.granulated import GranulatedKendall, granulated_kendall
from fitaudit.pgdl.grid import Grid, read_model_configs
from fitaudit.pgdl.harness import MeasureScore, TaskScores, score_task
from fitaudit.pgdl.kendall import kendall_tau
from fitaudit.pgdl.leaderboard import Leaderboard, ModelRanking, leaderboard, rank_models
from fitaudit.pgdl.official_cmi import official_cmi, official_cmi_pairs
from fitaudit.pgdl.population import Population
from fitaudit.pgdl.population_import import import_population
from fitaudit.pgdl.task import PGDLTask, TaskModel, load_task, write_task
from fitaudit.pgdl.zoo_task import build_zoo_task, write_zoo_task

__all__ = [
    "ConditionalMI",
    "GranulatedKendall",
    "Grid",
    "conditional_mi",
    "granulated_kendall",
    "kendall_tau",
    "official_cmi",
    "official_cmi_pairs",
    "PGDLTask",
    "TaskModel",
    "load_task",
    "write_task",
    "build_zoo_task",
    "write_zoo_task",
    "read_model_configs",
    "Leaderboard",
    "MeasureScore",
    "TaskScores",
    "leaderboard",
    "score_task",
    "ModelRanking",
    "Population",
    "import_population",
    "rank_models",
]
