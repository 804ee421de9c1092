"""Weakness report: the planted failure region (a > 0.8 and b < 0.5) is what the rules name."""

from __future__ import annotations

import re

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
    assert re.search(r"a > 0\.(79|8)", top["text"]) and re.search(r"b <= 0\.(4[89]|5)", top["text"])
    assert top["confirmed"] and top["lift_low"] > 1 and report.headline is top


def test_precision_and_support_by_hand(result):
    """Precision over the examiner's queries; the random queries' numbers over the half that confirms: the first,
    third, ... reference query of each instance (the others taught the random queries' tree)."""
    q, r = result.queries, result.reference_queries
    top = result.weakness.rules[0]
    confirming = np.zeros(len(r["label"]), dtype=bool)
    for instance in np.unique(r["instance"]):
        confirming[np.flatnonzero(r["instance"] == instance)[::2]] = True
    half = {k: np.asarray(v)[confirming] for k, v in r.items()}
    assert result.weakness.n_reference == len(r["label"]) and confirming.sum() == len(r["label"]) // 2
    for table, support, precision in ((q, "support", "precision"), (half, "reference_support", "reference_precision")):
        x = np.column_stack([table[f] for f in "abc"])
        wrong = table["predicted"] != table["label"]
        inside = np.ones(len(x), dtype=bool)
        for name, op, threshold in top["conditions"]:
            column = x[:, "abc".index(name)]
            inside &= column > threshold if op == ">" else column <= threshold
        assert top[support] == inside.sum()
        assert top[precision] == pytest.approx(wrong[inside].mean())


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


@pytest.mark.slow
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

    def world(n: int) -> tuple[np.ndarray, np.ndarray]:
        x = rng.random((n, 2))
        return x, (x[:, 1] > 0.7) & (rng.random(n) < 0.8) | (x[:, 0] > 0.98)

    reference, reference_failing = world(400)
    spread, spread_failing = world(400)
    corner = np.column_stack([0.98 + 0.02 * rng.random(300), 0.7 * rng.random(300)])  # all wrong, few random there
    x = np.concatenate([corner, spread])
    failing = np.concatenate([np.ones(300, dtype=bool), spread_failing])
    rules, _ = failure_rules(x, failing, ["u", "v"], reference_x=reference, reference_failing=reference_failing)
    assert len(rules) == 2
    first, second = rules
    assert re.search(r"v > 0\.(69|7)", first["text"]) and first["confirmed"] and not second["supported"]
    assert second["precision"] > first["precision"]  # yet it is ranked second
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


def test_lift_interval_is_katz_interval_of_the_risk_ratio_mapped_to_the_lift():
    """Against scipy's relative_risk (Katz) of inside vs outside, mapped through lift = RR / (w RR + 1 - w)."""
    from scipy.stats.contingency import relative_risk

    from fitaudit.examine.weakness import lift_interval

    for wrong_in, n_in, wrong_out, n_out in ((12, 40, 30, 360), (3, 25, 50, 500), (20, 20, 5, 80)):
        ci = relative_risk(wrong_in, n_in, wrong_out, n_out).confidence_interval(0.9)
        w = n_in / (n_in + n_out)
        expected = [r / (w * r + 1 - w) for r in (ci.low, ci.high)]
        low, high = lift_interval(wrong_in, n_in, wrong_in + wrong_out, n_in + n_out, 0.9)
        assert (low, high) == pytest.approx(expected, rel=1e-9)
        lift = wrong_in / n_in / ((wrong_in + wrong_out) / (n_in + n_out))
        assert low < lift < high
    assert lift_interval(5, 100, 5, 100) == (1.0, 1.0)  # the region is everything
    low, high = lift_interval(0, 30, 40, 400)  # no failure inside: Haldane's correction, finite ends
    assert 0 < low < 1 < high  # wide: no failure among 30 random queries says little


@pytest.mark.slow
def test_lift_interval_covers_the_true_lift():
    """Simulated regions: the 95% interval holds the true lift in about 95% of draws (at least 93%)."""
    from fitaudit.examine.weakness import lift_interval

    rng = np.random.default_rng(3)
    n_in, n_out, p_in, p_out = 40, 360, 0.3, 0.1
    true_lift = p_in / ((n_in * p_in + n_out * p_out) / (n_in + n_out))
    covered = 0
    for _ in range(2000):
        a, c = rng.binomial(n_in, p_in), rng.binomial(n_out, p_out)
        low, high = lift_interval(int(a), n_in, int(a + c), n_in + n_out, 0.95)
        covered += low <= true_lift <= high
    assert covered / 2000 >= 0.93


def test_noise_only_yields_no_headline():
    """Failures independent of the factors: across 40 worlds at most a few headlines (joint level 5%)."""
    headlines = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        x, ref_x = rng.random((1500, 3)), rng.random((400, 3))
        failing, ref_failing = rng.random(1500) < 0.3, rng.random(400) < 0.3
        rules, _ = failure_rules(x, failing, ["u", "v", "w"], reference_x=ref_x, reference_failing=ref_failing,
                                 max_depth=2)
        headlines += bool(rules and rules[0]["confirmed"])
        assert all(not r["confirmed"] or r["lift_low"] > 1 for r in rules)
    assert headlines <= 4


def test_headline_needs_the_minimum_of_random_queries():
    """A corner where every query fails, but fewer than MIN_REFERENCE_SUPPORT random queries: never the headline."""
    from fitaudit.examine.weakness import MIN_REFERENCE_SUPPORT, WeaknessReport

    rng = np.random.default_rng(1)

    def rules_with(n_reference: int) -> list[dict]:
        ref_x = rng.random((n_reference, 2))
        ref_failing = ref_x[:, 0] > 0.96
        x = np.concatenate([np.column_stack([0.96 + 0.04 * rng.random(400), rng.random(400)]), rng.random((600, 2))])
        rules, _ = failure_rules(x, x[:, 0] > 0.96, ["u", "v"], reference_x=ref_x, reference_failing=ref_failing,
                                 max_depth=1)
        return rules

    thin = rules_with(300)  # about 12 random queries in the corner
    assert thin and thin[0]["reference_support"] < MIN_REFERENCE_SUPPORT and thin[0]["reference_precision"] == 1.0
    assert not thin[0]["supported"] and not thin[0]["confirmed"]
    report = WeaknessReport(factor_names=["u", "v"], n_examined=1000, n_reference=300, failure_rate_examined=0.4,
                            failure_rate_reference=0.04, histograms={}, concentration={}, rules=thin, tree={})
    assert report.headline is None
    from fitaudit.report.verdicts import read

    sentence = read(report).sentence
    assert sentence.startswith("No factor range is shown") and str(MIN_REFERENCE_SUPPORT) in sentence
    dense = rules_with(3000)  # about 120 there
    assert dense[0]["reference_support"] >= MIN_REFERENCE_SUPPORT and dense[0]["confirmed"]


def test_queries_that_fail_together_by_instance_give_no_headline():
    """Failures set by the instance, not the factors (each image breaks in its own narrow band): Katz's interval
    alone, treating the queries as independent, confirms chance regions; the bootstrap over instances does not."""
    from fitaudit.examine.weakness import MIN_GROUPS

    katz_only = grouped = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        n_instances, per = 20, 64
        bands = rng.random(n_instances)  # instance i fails where |u - band_i| < 0.1, for a few instances
        weak = rng.random(n_instances) < 0.3

        def draw(rng=rng, weak=weak, bands=bands, n_instances=n_instances, n_per=per):
            groups = np.repeat(np.arange(n_instances), n_per)
            x = rng.random((len(groups), 2))
            return x, weak[groups] & (np.abs(x[:, 0] - bands[groups]) < 0.1), groups

        x, failing, _ = draw()
        ref_x, ref_failing, groups = draw()
        plain, _ = failure_rules(x, failing, ["u", "v"], reference_x=ref_x, reference_failing=ref_failing)
        clustered, _ = failure_rules(x, failing, ["u", "v"], reference_x=ref_x, reference_failing=ref_failing,
                                     reference_groups=groups)
        katz_only += bool(plain and plain[0]["confirmed"])
        grouped += bool(clustered and clustered[0]["confirmed"])
        same = {str(r["conditions"]): r for r in plain}
        for b in clustered:  # the bootstrap only widens (the same regions: the tree does not see the reference)
            a = same[str(b["conditions"])]
            if a["lift_low"] is not None:
                assert b["lift_low"] <= a["lift_low"] and b["lift_high"] >= a["lift_high"]
    assert n_instances >= MIN_GROUPS
    assert grouped < katz_only and grouped <= 2


def _edge_world(planted: bool):
    """Twelve instances over three factors; every instance fails on a fine-grained pattern of (v, w) (a third
    of the space, as a fragile model does) and, when ``planted``, on a share of another such pattern that grows
    from none at u = 0.5 to all at u = 1, its true-class logit falling with u."""
    from fitaudit.data.factors import Factor, FactorSpace

    space = FactorSpace([Factor("u", 0.0, 1.0, 0.0, "u"), Factor("v", 0.0, 1.0, 0.0, "u"),
                         Factor("w", 0.0, 1.0, 0.0, "u")])
    labels = np.arange(12) % 3

    def render(instances, factors):
        return np.column_stack([factors, np.asarray(instances, dtype=float)])

    def classify(x):
        u, v, w, i = (np.asarray(x, dtype=float)[:, k] for k in range(4))
        graded = (np.cos(29.0 * v + 13.0 * w + 5.0 * i) + 1.0) / 2.0 < 2.0 * (u - 0.5)  # all of u = 1 fails
        true = 1.0 - 2.0 * (np.cos(41.0 * v + 17.0 * w + 3.0 * i) > 0.5) - (0.5 * u + 2.0 * graded) * planted
        out = np.zeros((len(x), 3))
        out[np.arange(len(x)), labels[i.astype(int)]] = true
        return out

    return classify, render, space, labels


@pytest.mark.slow
@pytest.mark.parametrize("planted", [True, False])
def test_bo_examination_names_a_planted_factor_and_no_rule_without_one(planted):
    """The BO examiner on a model that fails a third of the time anywhere: with a weakness growing along u, the
    headline names u; without it, no rule is confirmed."""
    classify, render, space, labels = _edge_world(planted)
    result = examine(classify, render, factor_space=space, labels=labels, examiner="bo", steps=30,
                     random_state=0, n_reference=128)
    headline = result.weakness.headline
    if not planted:
        assert headline is None, headline["text"]
        return
    assert headline is not None, result.weakness.rules
    assert {c[0] for c in headline["conditions"]} == {"u"}, headline["text"]
    assert max(c[2] for c in headline["conditions"] if c[1] == ">") > 0.5 and headline["lift_low"] > 1


def _piled_queries(weak: bool, seed: int):
    """Twelve instances, six factors; the examiner put 300 of its 360 queries on u's maximum (all wrong there, as a
    BO examiner does at blur's maximum on a photo CNN) and spread the rest. Every query fails a third of the time
    anywhere and, when ``weak``, besides with a probability rising from 0 at u = 0.5 to 0.5 at u = 1 (a weakness as
    mild and spread as the CNN's)."""
    rng = np.random.default_rng(seed)

    def fails(x: np.ndarray) -> np.ndarray:
        return (rng.random(len(x)) < 1 / 3) | (weak & (rng.random(len(x)) < x[:, 0] - 0.5))

    spread = rng.random((60, 6))
    x = np.concatenate([np.column_stack([np.ones(300), rng.random((300, 5))]), spread])
    failing = np.concatenate([np.ones(300, dtype=bool), fails(spread)])
    groups = np.repeat(np.arange(12), 128)
    reference = rng.random((len(groups), 6))
    return x, failing, reference, fails(reference), groups


NAMES = ["u", "v", "w", "s", "t", "z"]


@pytest.mark.parametrize("seed", range(5))
def test_random_queries_tree_names_a_weakness_the_examiner_piled_on_the_edge(seed):
    """Half the random queries teach a second tree, the other half confirm: the headline names u; each instance
    gives half its random queries to either side."""
    from fitaudit.examine.weakness import fitting_half

    x, failing, reference, reference_failing, groups = _piled_queries(True, seed)
    fit = fitting_half(groups)
    assert fit.sum() == len(groups) // 2 and all(fit[groups == g].sum() == 64 for g in range(12))
    rules, settings = failure_rules(x, failing, NAMES, reference_x=reference[~fit],
                                    reference_failing=reference_failing[~fit], reference_groups=groups[~fit],
                                    random_fit=(reference[fit], reference_failing[fit]),
                                    bounds={name: (0.0, 1.0) for name in NAMES})
    top = rules[0]
    assert settings["n_random_pool"] == 768 and {r["tree"] for r in rules} <= {"examiner", "random"}
    assert top["confirmed"] and "u" in {c[0] for c in top["conditions"]}, top["text"]
    assert top["reference_support"] >= 20


def test_random_queries_tree_confirms_nothing_without_a_weakness():
    """The same pile on the edge, failures independent of the factors: across 20 worlds at most 2 headlines."""
    from fitaudit.examine.weakness import fitting_half

    headlines = 0
    for seed in range(20):
        x, failing, reference, reference_failing, groups = _piled_queries(False, seed)
        fit = fitting_half(groups)
        rules, _ = failure_rules(x, failing, NAMES, reference_x=reference[~fit],
                                 reference_failing=reference_failing[~fit], reference_groups=groups[~fit],
                                 random_fit=(reference[fit], reference_failing[fit]))
        headlines += bool(rules and rules[0]["confirmed"])
    assert headlines <= 2
