"""The examination loop (Algorithm 1 of Shu et al. 2020) on a toy world with a known failure region."""

from __future__ import annotations

import json

import numpy as np
import pytest
from examine_toys import (
    LABELS,
    SPACE,
    TOLD,
    CountingGenerator,
    HillClimber,
    RecordingExaminer,
    classify,
    expected_true_probability,
    render,
)

from fitaudit.examine import ExaminationResult, examine, get_examiner
from fitaudit.examine.examination import _chunk_seeds
from fitaudit.examine.losses import score_queries
from fitaudit.random import spawn_seeds
from fitaudit.results import Result


def run(**kwargs):
    options = {"examiner": "random", "steps": 12, "random_state": 3, "factor_space": SPACE, "labels": LABELS,
               "class_names": ["zero", "one", "two"]}
    options.update(kwargs)
    return examine(classify, render, **options)


def test_result_shapes_counts_and_query_log():
    result = run(examiner_options={"queries_per_step": 3}, n_reference=5)
    n, t, q = 4, 12, 3
    assert isinstance(result, ExaminationResult)
    assert result.n_model_queries == n * t * q and result.n_reference_queries == n * 5
    assert len(result.queries["loss"]) == n * t * q
    assert set(result.queries) == {"instance", "label", "step", "query", "a", "b", "c", "loss", "predicted",
                                   "true_class_probability"}
    assert result.queries["step"].min() == 1 and result.queries["step"].max() == t
    assert result.curves["loss"]["current"].shape == (n, t)
    # every logged probability is the toy's closed form, every loss its negative
    expected = expected_true_probability(result.queries["a"], result.queries["b"])
    np.testing.assert_allclose(result.queries["true_class_probability"], expected, rtol=1e-12)
    np.testing.assert_allclose(result.queries["loss"], -expected, rtol=1e-12)
    assert np.array_equal(result.queries["label"], LABELS[result.queries["instance"]])


def test_final_and_worst_loss_follow_their_definitions():
    result = run(examiner_options={"queries_per_step": 2})
    q = result.queries
    for i, inst in enumerate(result.instances):
        rows = q["instance"] == inst
        last = rows & (q["step"] == result.steps)
        assert result.final_loss[i] == pytest.approx(q["loss"][last].mean())
        assert result.worst_loss[i] == pytest.approx(q["loss"][rows].max())
        assert result.best_loss[i] == pytest.approx(q["loss"][rows].min())
        assert result.min_true_class_probability[i] == pytest.approx(q["true_class_probability"][rows].min())
        best_row = np.flatnonzero(rows)[np.argmax(q["loss"][rows])]
        np.testing.assert_allclose(result.extreme_factors[i], [q[f][best_row] for f in "abc"])
        assert result.extreme_step[i] == q["step"][best_row]
    running = result.curve("loss", "running", by="instance")
    assert np.all(np.diff(running, axis=1) >= 0)
    np.testing.assert_allclose(running[:, -1], result.worst_loss)
    assert result.e_examiner == pytest.approx(result.final_loss.mean())
    assert result.mean_final_true_class_probability == pytest.approx(-result.e_examiner)


def test_matches_a_plain_per_query_loop():
    """Independent reference: Algorithm 1 written out, one model call per query."""
    result = examine(classify, render, factor_space=SPACE, labels=LABELS, examiner=HillClimber(step=0.3),
                     steps=15, random_state=11, chunk_size=None, n_reference=0, weakness=False)
    examiner_seed, _ = _chunk_seeds(spawn_seeds(11, 1)[0])
    ex = HillClimber(random_state=examiner_seed, step=0.3)
    ex.start(SPACE, len(LABELS))
    final = None
    for _ in range(15):
        s = ex.ask()
        losses = np.array([[-expected_true_probability(s[i, 0, 0:1], s[i, 0, 1:2])[0]] for i in range(len(LABELS))])
        ex.tell(s, losses)
        final = losses[:, 0]
    np.testing.assert_allclose(result.final_loss, final, rtol=1e-12)


def test_same_seed_same_numbers_and_another_seed_differs():
    a, b, c = run(random_state=5), run(random_state=5), run(random_state=6)
    np.testing.assert_array_equal(a.queries["loss"], b.queries["loss"])
    assert not np.array_equal(a.queries["loss"], c.queries["loss"])


def test_none_seed_is_recorded_and_repeats():
    first = run(random_state=None)
    again = run(random_state=first.random_state)
    np.testing.assert_array_equal(first.queries["a"], again.queries["a"])


def test_a_generator_seeds_the_run_like_the_int_it_draws():
    """The one seed contract: a numpy Generator is valid, draws the run's recorded seed and is advanced."""
    drawn = run(random_state=np.random.default_rng(8))
    assert drawn.random_state == int(np.random.default_rng(8).integers(0, 2**31 - 1))
    again = run(random_state=drawn.random_state)
    np.testing.assert_array_equal(drawn.queries["loss"], again.queries["loss"])


def test_searching_examiner_beats_random_on_the_toy():
    hill = run(examiner=HillClimber(step=0.15), steps=60, n_reference=0)
    rand = run(steps=60, n_reference=0)
    assert hill.mean_final_true_class_probability < rand.mean_final_true_class_probability


def test_strength_mode_negates_the_losses_told():
    TOLD.clear()
    result = run(examiner=RecordingExaminer(), maximize=False, steps=5, chunk_size=None, n_reference=0)
    told = np.stack(TOLD)[:, :, 0]  # (steps, instances)
    logged = result.queries["loss"].reshape(4, 5).T
    np.testing.assert_allclose(told, -logged)
    np.testing.assert_allclose(result.extreme_true_class_probability, result.max_true_class_probability)
    assert np.all(np.diff(result.curve("loss", "running", by="instance"), axis=1) <= 0)


def test_strength_mode_climbs_towards_confident_inputs():
    weak = run(examiner=HillClimber(step=0.15), steps=50, n_reference=0)
    strong = run(examiner=HillClimber(step=0.15), steps=50, n_reference=0, maximize=False)
    assert strong.mean_final_true_class_probability > weak.mean_final_true_class_probability


@pytest.mark.parametrize("loss", ["zero_one", "margin"])
def test_other_losses(loss):
    result = run(loss=loss, steps=20)
    q = result.queries
    wrong = q["predicted"] != q["label"]
    if loss == "zero_one":
        np.testing.assert_array_equal(q["loss"], wrong.astype(float))
    else:
        logit = np.where((q["a"] > 0.8) & (q["b"] < 0.5), -2.0, 3.0 - 2.0 * q["a"])
        np.testing.assert_allclose(q["loss"], 0.0 - logit)  # the other two logits are 0
        assert np.array_equal(q["loss"] > 0, wrong)


def test_score_queries_by_hand():
    logits = np.array([[2.0, 0.0, 1.0], [0.0, 3.0, 0.0]])
    labels = np.array([2, 1])
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    tcp = score_queries(logits, labels, "true_class_probability")
    np.testing.assert_allclose(tcp.loss, -p[[0, 1], [2, 1]])
    np.testing.assert_array_equal(score_queries(logits, labels, "zero_one").loss, [1.0, 0.0])
    np.testing.assert_allclose(score_queries(logits, labels, "margin").loss, [1.0, -3.0])
    np.testing.assert_array_equal(tcp.predicted, [0, 1])


def test_ranges_narrow_the_space_and_fix_factors():
    result = run(ranges={"a": (0.9, 1.0), "c": 0.25}, steps=10)
    assert result.queries["a"].min() >= 0.9
    assert np.all(result.queries["c"] == 0.25) and np.all(result.reference_queries["c"] == 0.25)
    assert result.factor_space["c"]["low"] == result.factor_space["c"]["high"] == 0.25


def test_examiner_objects_and_names_agree():
    by_name = run(examiner="random", examiner_options={"queries_per_step": 2})
    by_object = run(examiner=get_examiner("random", queries_per_step=2))
    np.testing.assert_array_equal(by_name.queries["a"], by_object.queries["a"])
    assert by_name.examiner_settings == {"queries_per_step": 2}


@pytest.mark.slow
def test_an_optuna_sampler_object_examines_like_its_name():
    optuna = pytest.importorskip("optuna")
    from fitaudit.examine.optuna_adapter import OptunaExaminer

    by_object = run(examiner=OptunaExaminer(sampler=optuna.samplers.RandomSampler(seed=1)))
    again = run(examiner=OptunaExaminer(sampler=optuna.samplers.RandomSampler(seed=1)))
    np.testing.assert_array_equal(by_object.queries["a"], again.queries["a"])
    assert by_object.n_model_queries == run(examiner="optuna:random").n_model_queries


def test_json_round_trip_and_rerender():
    result = run(steps=6)
    back = Result.from_dict(json.loads(result.to_json()))
    assert isinstance(back, ExaminationResult)
    np.testing.assert_allclose(back.final_loss, result.final_loss)
    np.testing.assert_allclose(back.curve(by="class", kind="running")["one"],
                               result.curve(by="class", kind="running")["one"])
    assert back.weakness is not None and back.weakness.rules == result.weakness.rules
    light = result.to_dict(include_queries=False)
    assert light["queries"] == {} and "final_loss" in light
    images = result.extreme_inputs(CountingGenerator())
    np.testing.assert_allclose(images[:, :3], result.extreme_factors)


def test_save_and_load_queries(tmp_path):
    from fitaudit.examine import load_queries

    result = run(steps=4, n_reference=3)
    path = result.save_queries(tmp_path / "q.npz")
    queries, reference = load_queries(path)
    np.testing.assert_array_equal(queries["loss"], result.queries["loss"])
    np.testing.assert_array_equal(reference["a"], result.reference_queries["a"])


def test_at_steps_reads_the_current_curve():
    result = run(steps=8)
    current = result.curve("true_class_probability", "current")
    assert result.at_steps([0, 1, 8]) == {0: current[0], 1: current[0], 8: current[7]}


def test_verdict_holds_the_worst_case_against_the_random_average():
    """Any gap fails at tolerance -1 on the toy; without reference queries there is no average: no pass."""
    with_reference = run(n_reference=8)
    numbers = with_reference.verdict().numbers
    average, worst = numbers["average_accuracy"], numbers["worst_case_accuracy"]
    assert average is not None and worst is not None and worst <= average
    assert with_reference.verdict(tolerance=-1.0).status == "fail"
    alone = run(n_reference=0)
    for tolerance in (-1.0, 0.2, 1.0):
        verdict = alone.verdict(tolerance=tolerance)
        assert (verdict.status, verdict.reason) == ("info", "no_reference_queries")
        assert verdict.numbers["average_accuracy"] is None
    from fitaudit.report.verdicts import read

    reading = read(alone)  # the words say why there is no decision
    assert reading.status == "info" and "no reference queries" in reading.sentence
