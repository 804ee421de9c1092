"""Weakness report: the planted failure region (a > 0.8 and b < 0.5) is what the rules name."""

from __future__ import annotations

import numpy as np
import pytest
from examine_toys import LABELS, SPACE, HillClimber, classify, render

from fitaudit.examine import QueryEmbedding, WeaknessReport, embed_queries, examine, weakness_report
from fitaudit.examine.weakness import _conditions_text, failure_rules


@pytest.fixture(scope="module")
def result():
    return examine(classify, render, factor_space=SPACE, labels=LABELS, examiner=HillClimber(step=0.2),
                   steps=80, random_state=1, n_reference=200)


def test_rules_name_the_planted_region(result):
    report = result.weakness
    assert isinstance(report, WeaknessReport)
    assert report.rules, report
    top = report.rules[0]
    factors = {c[0] for c in top["conditions"]}
    assert factors == {"a", "b"}
    a_low = max(c[2] for c in top["conditions"] if c[0] == "a" and c[1] == ">")
    b_high = min(c[2] for c in top["conditions"] if c[0] == "b" and c[1] == "<=")
    assert a_low == pytest.approx(0.8, abs=0.05) and b_high == pytest.approx(0.5, abs=0.05)
    assert top["precision"] > 0.95 and top["reference_precision"] > 0.95
    # the true failure rate of random queries is P(a > 0.8) P(b < 0.5) = 0.1
    assert report.failure_rate_reference == pytest.approx(0.1, abs=0.04)
    assert f"vs {report.failure_rate_reference:.0%} of random queries" in top["text"]
    assert top["text"].startswith("a > 0.8") or "a > 0.8" in top["text"]


def test_precision_and_support_by_hand(result):
    q, r = result.queries, result.reference_queries
    top = result.weakness.rules[0]
    x = np.concatenate([np.column_stack([q[f] for f in "abc"]), np.column_stack([r[f] for f in "abc"])])
    wrong = np.concatenate([q["predicted"] != q["label"], r["predicted"] != r["label"]])
    inside = np.ones(len(x), dtype=bool)
    for name, op, threshold in top["conditions"]:
        column = x[:, "abc".index(name)]
        inside &= column > threshold if op == ">" else column <= threshold
    assert top["support"] == inside.sum()
    assert top["precision"] == pytest.approx(wrong[inside].mean())


def test_histograms_and_concentration(result):
    report = result.weakness
    assert list(report.concentration)[:2] in (["a", "b"], ["b", "a"])
    assert report.concentration["c"] < report.concentration["a"]
    hist = report.histograms["a"]
    assert len(hist["edges"]) == 11 and sum(hist["reference"]) == report.n_reference
    assert sum(hist["reference_failing"]) == round(report.failure_rate_reference * report.n_reference)
    # every failure has a > 0.8: only the last two bins hold failing queries
    assert sum(hist["failing"][:8]) == 0 and sum(hist["failing"]) > 0


def test_examiner_concentrates_failures_more_than_random(result):
    assert result.weakness.failure_rate_examined > result.weakness.failure_rate_reference


def test_no_failures_no_rules():
    x = np.random.default_rng(0).random((200, 2))
    rules, tree = failure_rules(x, np.zeros(200, dtype=bool), ["u", "v"])
    assert rules == [] and tree["n_pool"] == 200


def test_one_factor_threshold_found_by_the_tree():
    x = np.random.default_rng(0).random((2000, 2))
    failing = x[:, 1] > 0.3
    rules, _ = failure_rules(x, failing, ["u", "v"], max_depth=1)
    assert len(rules) == 1
    assert rules[0]["conditions"][0][:2] == ["v", ">"]
    assert rules[0]["conditions"][0][2] == pytest.approx(0.3, abs=0.01)
    assert rules[0]["precision"] == 1.0
    assert rules[0]["text"].endswith(f"vs {failing.mean():.0%} of all examiner queries (n = {len(failing):,})")


def test_conditions_text_merges_bounds():
    text = _conditions_text([["a", ">", 0.2], ["b", "<=", 5.0], ["a", "<=", 0.7], ["a", ">", 0.3]])
    assert text == "0.3 < a <= 0.7 and b <= 5"


def test_conditions_text_at_the_ends_of_a_range():
    bounds = {"e": (-90.0, 90.0), "d": (3.0, 6.0)}
    assert _conditions_text([["e", ">", 89.999], ["d", "<=", 5.61]], bounds) == "e = 90 (its maximum) and d <= 5.61"
    assert _conditions_text([["e", "<=", 89.9999], ["d", "<=", 3.0001]], bounds) == "d = 3 (its minimum)"
    assert _conditions_text([["e", ">", 30.0]], bounds) == "e > 30"


def test_report_needs_the_query_log(result):
    from fitaudit._errors import InputError
    from fitaudit.results import Result

    light = Result.from_dict(result.to_dict(include_queries=False))
    with pytest.raises(InputError, match="has no query log"):
        weakness_report(light)


def test_tsne_embedding(result):
    from examine_toys import CountingGenerator

    embedding = embed_queries(result, CountingGenerator(), n_per_source=40, random_state=0)
    assert isinstance(embedding, QueryEmbedding)
    assert embedding.coordinates.shape == (80, 2)
    assert embedding.source.count("random") == 40 and embedding.source.count("examiner") == 40
    examiner_rows = np.array(embedding.source) == "examiner"
    assert embedding.failing[examiner_rows].mean() >= embedding.failing[~examiner_rows].mean()
    by_logits = embed_queries(result, CountingGenerator(), classify, n_per_source=20, features="logits")
    assert by_logits.features == "logits" and by_logits.coordinates.shape == (40, 2)


def test_rules_are_ranked_by_lift_among_regions_with_enough_random_queries():
    """An examiner that dug into a thin corner makes it look most precise; the headline is the supported rule."""
    from fitaudit.examine.weakness import MIN_REFERENCE_SUPPORT

    rng = np.random.default_rng(0)
    reference = rng.random((400, 2))
    reference_failing = (reference[:, 1] > 0.7) & (rng.random(400) < 0.8) | (reference[:, 0] > 0.98)
    corner = np.column_stack([0.98 + 0.02 * rng.random(300), 0.7 * rng.random(300)])  # all wrong, few random there
    x = np.concatenate([corner, reference])
    failing = np.concatenate([np.ones(300, dtype=bool), reference_failing])
    rules, _ = failure_rules(x, failing, ["u", "v"], reference_x=reference, reference_failing=reference_failing)
    assert len(rules) == 2
    first, second = rules
    assert "v > 0.699" in first["text"] and first["supported"] and not second["supported"]
    assert second["precision"] > first["precision"] and second["lift"] > first["lift"]  # yet it is ranked second
    base = reference_failing.mean()
    for rule in rules:
        inside = np.ones(len(reference), dtype=bool)
        for name, op, threshold in rule["conditions"]:
            column = reference[:, "uv".index(name)]
            inside &= column > threshold if op == ">" else column <= threshold
        wrong = int(reference_failing[inside].sum())
        assert rule["reference_support"] == inside.sum() and rule["supported"] == (inside.sum() >= MIN_REFERENCE_SUPPORT)
        assert rule["lift"] == pytest.approx(wrong / inside.sum() / base)
        assert f"random queries in the region: {wrong} of {inside.sum()} wrong, lift {rule['lift']:.1f}" in rule["text"]
