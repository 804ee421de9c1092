"""score_task and leaderboard on a tiny task: values, metrics, budget, resuming, errors, rendering."""

from __future__ import annotations

import time
from typing import ClassVar

import joblib
import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.measures import Measure, ModelRecord, get_measure, measure_class
from fitaudit.options import RunOptions
from fitaudit.pgdl import conditional_mi, granulated_kendall, kendall_tau, load_task, official_cmi
from fitaudit.pgdl.harness import MeasureScore, TaskScores, score_task
from fitaudit.pgdl.leaderboard import Leaderboard, leaderboard
from fitaudit.report import load_result, render

CHEAP = ["weight_norm", "parameter_count", "noisy_gap"]


class CountingNorm(Measure):
    """Sum of squared parameters; counts its calls (class attribute) to see what a rerun recomputes."""

    name: ClassVar[str] = "counting_norm"
    needs_data: ClassVar[bool] = False
    calls: ClassVar[int] = 0

    def __init__(self, *, random_state=0, power: float = 2.0) -> None:
        super().__init__(random_state=random_state)
        self.power = power

    def compute(self, record: ModelRecord) -> float:
        type(self).calls += 1
        return float(sum((p.detach().abs() ** self.power).sum() for p in record.model.parameters()))


class Slow(Measure):
    """Sleeps 0.2 s per model (to exhaust a tiny budget)."""

    name: ClassVar[str] = "slow"
    needs_data: ClassVar[bool] = False

    def compute(self, record: ModelRecord) -> float:
        time.sleep(0.2)
        return 1.0


class Broken(Measure):
    """Fails on model 3."""

    name: ClassVar[str] = "broken"
    needs_data: ClassVar[bool] = False

    def compute(self, record: ModelRecord) -> float:
        if record.model_id == "3":
            raise ValueError("cannot look at model 3")
        return 1.0


def test_values_and_metrics_match_the_parts(tiny_pgdl_task) -> None:
    task = load_task(tiny_pgdl_task)
    result = score_task(task, CHEAP, options=RunOptions(progress=False))
    assert isinstance(result, TaskScores) and result.n_models == 8
    assert result.hparams == ["width", "scale", "seed"]
    x, y = task.train_data()
    ids = task.model_ids
    gap = np.array([task.gap(i) for i in ids])
    for name in CHEAP:
        score = result.score(name)
        expected = [
            get_measure(name, random_state=0)(
                ModelRecord(model=task.model(i), train_x=x, train_y=y, initial_model=task.model(i, initial=True),
                            hparams=task.hparams(i), metrics=task.metrics(i), model_id=i)
            )
            for i in ids
        ]
        assert [score.values[i] for i in ids] == pytest.approx(expected)
        assert set(score.seconds) == set(ids) and not score.over_budget and score.errors == {}
        assert score.kendall == pytest.approx(kendall_tau(expected, gap))
        assert score.psi == pytest.approx(granulated_kendall(expected, gap, [task.hparams(i) for i in ids]).psi)
        assert score.official_cmi == pytest.approx(official_cmi(task.configs, dict(zip(ids, expected))))
        assert score.official_score == score.official_cmi
        general = conditional_mi(expected, gap, [task.hparams(i) for i in ids], max_set_size=2)
        assert score.general_cmi == pytest.approx(general.score)
        assert score.budget_s == 300.0 * 8
    assert result.score("noisy_gap").kendall > 0.5  # the cheating baseline reads the gap


def test_over_budget_is_recorded_and_scores_zero(tiny_pgdl_task) -> None:
    result = score_task(tiny_pgdl_task, [Slow(), get_measure("weight_norm")], budget_s=0.01, options=RunOptions(progress=False))
    slow = result.score("slow")
    assert slow.over_budget and slow.official_score == 0.0
    assert len(slow.seconds) == 1  # stopped after the model that exhausted the pooled 0.08 s
    assert sum(v is None for v in slow.values.values()) == 7
    assert "over the time budget" in slow.note and "no value for 7 of 8 models" in slow.note
    assert slow.kendall is None
    fast = result.score("weight_norm")
    assert not fast.over_budget and fast.kendall is not None  # budgets are per measure


def test_errors_are_recorded_not_dropped(tiny_pgdl_task) -> None:
    result = score_task(tiny_pgdl_task, [Broken()], options=RunOptions(progress=False))
    score = result.score("broken")
    assert score.errors == {"3": "ValueError: cannot look at model 3"}
    assert score.values["3"] is None and score.kendall is None and score.official_score is None
    assert "no value for 1 of 8 models" in score.note and "cannot look at model 3" in score.note


def test_resume_reuses_units_and_a_changed_setting_recomputes(tiny_pgdl_task, tmp_path) -> None:
    CountingNorm.calls = 0
    first = score_task(tiny_pgdl_task, [CountingNorm()], checkpoint_dir=tmp_path, options=RunOptions(progress=False))
    assert CountingNorm.calls == 8
    again = score_task(tiny_pgdl_task, [CountingNorm()], checkpoint_dir=tmp_path, options=RunOptions(progress=False))
    assert CountingNorm.calls == 8  # nothing recomputed
    assert again.score("counting_norm").values == first.score("counting_norm").values
    assert again.score("counting_norm").seconds == first.score("counting_norm").seconds  # times come back too
    score_task(tiny_pgdl_task, [CountingNorm(power=1.0)], checkpoint_dir=tmp_path, options=RunOptions(progress=False))
    assert CountingNorm.calls == 16


class FlakyOnce(Measure):
    """Fails on model 3 the first time only (a transient failure); counts its calls."""

    name: ClassVar[str] = "flaky_once"
    needs_data: ClassVar[bool] = False
    calls: ClassVar[list[str]] = []

    def compute(self, record: ModelRecord) -> float:
        type(self).calls.append(record.model_id)
        if record.model_id == "3" and type(self).calls.count("3") == 1:
            raise RuntimeError("out of memory")
        return 1.0


def test_a_failed_unit_is_not_stored_and_a_rerun_tries_it_again(tiny_pgdl_task, tmp_path) -> None:
    FlakyOnce.calls = []
    first = score_task(tiny_pgdl_task, [FlakyOnce()], checkpoint_dir=tmp_path, options=RunOptions(progress=False))
    assert first.score("flaky_once").errors == {"3": "RuntimeError: out of memory"}
    again = score_task(tiny_pgdl_task, [FlakyOnce()], checkpoint_dir=tmp_path, options=RunOptions(progress=False))
    assert FlakyOnce.calls.count("3") == 2 and len(FlakyOnce.calls) == 9  # only the failed unit ran again
    assert again.score("flaky_once").errors == {} and again.score("flaky_once").values["3"] == 1.0


def test_measures_of_one_model_share_its_record(tiny_pgdl_task) -> None:
    """Units come model by model: every measure of a model reads one loaded record (and its cache)."""
    seen: dict[str, set[int]] = {}

    class Spy(Measure):
        name: ClassVar[str] = "spy"
        needs_data: ClassVar[bool] = False

        def compute(self, record: ModelRecord) -> float:
            seen.setdefault(record.model_id, set()).add(id(record))
            return 0.0

    class Spy2(Spy):
        name: ClassVar[str] = "spy2"

    score_task(tiny_pgdl_task, [Spy(), Spy2()], options=RunOptions(progress=False))
    assert len(seen) == 8 and all(len(ids) == 1 for ids in seen.values())


def test_parallel_gives_the_same_numbers(tiny_pgdl_task) -> None:
    serial = score_task(tiny_pgdl_task, ["weight_norm", "noisy_gap"], options=RunOptions(progress=False))
    with joblib.parallel_config(backend="threading"):  # the same code path as processes, without their start-up
        parallel = score_task(tiny_pgdl_task, ["weight_norm", "noisy_gap"], options=RunOptions(n_jobs=2, progress=False))
    for name in ("weight_norm", "noisy_gap"):
        assert parallel.score(name).values == serial.score(name).values


@pytest.mark.slow
def test_leaderboard_ranks_and_renders(tiny_pgdl_task, tmp_path) -> None:
    import shutil

    copy = shutil.copytree(tiny_pgdl_task, tmp_path / "copy")  # a second task with the same scores (a task given twice is refused)
    board = leaderboard([tiny_pgdl_task, copy], CHEAP, options=RunOptions(progress=False))
    assert isinstance(board, Leaderboard) and len(board.task_scores) == 2
    scores = [r["final_score"] for r in board.rows]
    assert scores == sorted(scores, reverse=True)
    row = board.row("weight_norm")
    single = board.task_scores[0].score("weight_norm")
    assert row["final_score"] == pytest.approx(100 * single.official_cmi)
    assert row["kendall"] == pytest.approx(single.kendall)
    assert row["family"] == "starting_kit"  # weight_norm's class attribute
    assert board.row("noisy_gap")["family"] == measure_class("noisy_gap").family != ""
    text = render(board, "markdown")
    assert "ranks first by the competition's score" in text and "| 1 | " in text
    assert "<table>" in render(board, "html")
    figure = render(board, "figure")
    assert len(figure.axes) == 3
    revived = load_result(board.to_dict())
    assert isinstance(revived, Leaderboard) and isinstance(revived.task_scores[0].scores[0], MeasureScore)
    assert render(revived, "markdown") == text
    assert "official score" in render(board.task_scores[0].scores[0], "markdown")


def test_bad_input(tiny_pgdl_task) -> None:
    with pytest.raises(InputError, match="`measures` must be a measure name"):
        score_task(tiny_pgdl_task, [], options=RunOptions(progress=False))
    with pytest.raises(InputError, match="`name` must be a registered measure"):
        score_task(tiny_pgdl_task, ["no_such_measure"], options=RunOptions(progress=False))
    with pytest.raises(InputError, match="`measures` names weight_norm more than once"):
        score_task(tiny_pgdl_task, ["weight_norm", "weight_norm"], options=RunOptions(progress=False))
    with pytest.raises(InputError, match="`budget_s`"):
        score_task(tiny_pgdl_task, ["weight_norm"], budget_s=0, options=RunOptions(progress=False))
    with pytest.raises(InputError, match="`task` must be a PGDL task folder or a loaded task"):
        score_task(42, ["weight_norm"], options=RunOptions(progress=False))
    with pytest.raises(InputError, match="`tasks` must be a task folder"):
        leaderboard([], ["weight_norm"], options=RunOptions(progress=False))


def _score(measure: str, task: str, official: float | None, *, over: bool = False,
           kendall: float | None = 0.1) -> MeasureScore:
    return MeasureScore(
        measure=measure, task=task, values={}, seconds={"1": 2.0}, total_seconds=2.0, budget_s=600.0,
        over_budget=over, errors={}, kendall=kendall, official_cmi=official,
        official_score=0.0 if over else official,
    )


def test_final_score_follows_the_competition_rules() -> None:
    from fitaudit.pgdl.leaderboard import rank

    def task(name: str, a: float | None, b: float | None, *, b_over: bool = False) -> TaskScores:
        return TaskScores(task=name, n_models=2, hparams=["x", "y", "z"], budget_per_model_s=300.0, random_state=0,
                          scores=[_score("a", name, a), _score("b", name, b, over=b_over)])

    board = rank([task("t1", 0.2, 0.5), task("t2", None, 0.3, b_over=True), task("t3", 0.4, 0.1)])
    # a: t2 cannot be scored by the official metric -> left out of the mean; b: over budget on t2 -> 0
    assert board.row("a")["final_score"] == pytest.approx(100 * (0.2 + 0.4) / 2)
    assert board.row("b")["final_score"] == 0.0 and board.row("b")["over_budget"]
    assert [r["measure"] for r in board.rows] == ["a", "b"]
    assert board.row("a")["official_cmi"] == [0.2, None, 0.4]
    with pytest.raises(InputError, match="`measure` must be one of a, b; got 'c'"):
        board.row("c")
    # the verdicts name the measure ranked first by the competition's score, never a pass or a fail
    verdict = board.verdict()
    assert (verdict.status, verdict.reason, verdict.numbers["best"]) == ("info", "measures_ranked", "a")
    assert verdict.numbers["best_score"] == pytest.approx(30.0)
    verdict = task("t1", 0.2, 0.5).verdict()
    assert (verdict.status, verdict.numbers["best"], verdict.numbers["best_score"]) == ("info", "b", pytest.approx(50.0))
    assert task("t4", None, None).verdict().reason == "no_measure_scored"
    assert rank([task("t4", None, None)]).verdict().reason == "no_measure_scored"
    assert _score("a", "t4", None, kendall=None).verdict().reason == "not_ranked"


def test_leaderboard_markdown_escapes_cells() -> None:
    """Task and measure text holding a cell separator or raw HTML stays inside its cell (issue 30 item 9)."""
    from fitaudit.report.pgdl import _markdown_table

    table = _markdown_table(["task", "score"], [["a|b", "<b>1</b>"]]).splitlines()
    assert table[2] == "| a\\|b | &lt;b&gt;1&lt;/b&gt; |"
