"""The examination's evidence in the audit page: rules with their random support, space check, profile, pairs."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from scipy.stats import beta

from fitaudit.data.factors import Factor, FactorSpace
from fitaudit.examine.profile import sensitivity_profile
from fitaudit.examine.weakness import rule_sentence
from fitaudit.options import RunOptions
from fitaudit.report.audit_evidence import changed_factors, space_check_html
from fitaudit.report.examine import sensitivity_figure


def test_rule_sentence_states_the_region_against_all_random_queries():
    rule = {"precision": 0.64, "support": 212, "reference_support": 50, "reference_precision": 0.4, "lift": 5.0}
    region = "rotation > 21 and contrast <= 0.7"
    assert rule_sentence(region, rule, base=0.08, n_base=1800, base_is_random=True) == (
        "rotation > 21 and contrast <= 0.7: 64% wrong (n = 212) vs 8% of random queries (n = 1,800); "
        "random queries in the region: 20 of 50 wrong, lift 5.0")
    empty = {**rule, "reference_support": 0, "reference_precision": None, "lift": None}
    assert rule_sentence(region, empty, base=0.08, n_base=1800, base_is_random=True).endswith(
        "(n = 1,800); no random query falls in the region")
    # without reference queries the baseline is the examiner's own queries
    alone = {**rule, "reference_support": None}
    assert rule_sentence(region, alone, base=0.3, n_base=900, base_is_random=False).endswith(
        "vs 30% of all examiner queries (n = 900)")


def test_rule_sentence_counts_match_the_query_logs():
    from fitaudit.examine.weakness import failure_rules

    rng = np.random.default_rng(0)
    names = ["rotation", "contrast"]
    x = np.column_stack([rng.uniform(-30, 30, 600), rng.uniform(0.5, 1.5, 600)])
    failing = (x[:, 0] > 20) & (rng.random(600) < 0.9)
    ref_x = np.column_stack([rng.uniform(-30, 30, 400), rng.uniform(0.5, 1.5, 400)])
    ref_failing = (ref_x[:, 0] > 20) & (rng.random(400) < 0.9)
    rules, _ = failure_rules(x, failing, names, reference_x=ref_x, reference_failing=ref_failing)
    assert rules
    rule = rules[0]
    text = rule["text"]
    # the region recomputed by hand from its conditions
    inside = np.ones(600, bool)
    ref_inside = np.ones(400, bool)
    for name, op, threshold in rule["conditions"]:
        col = names.index(name)
        inside &= (x[:, col] <= threshold) if op == "<=" else (x[:, col] > threshold)
        ref_inside &= (ref_x[:, col] <= threshold) if op == "<=" else (ref_x[:, col] > threshold)
    assert "rotation" in text
    assert f"{failing[inside].mean():.0%} wrong (n = {inside.sum():,})" in text
    assert f"vs {ref_failing.mean():.0%} of random queries (n = 400)" in text
    assert f"{ref_failing[ref_inside].sum():,} of {ref_inside.sum():,} wrong" in text


def test_space_check_warns_with_both_numbers_only_when_foreign():
    check = {"clean_accuracy": 0.95, "random_accuracy": 0.40, "n_clean": 120, "n_random": 256, "drop": 0.55,
             "threshold": 0.25, "foreign": True, "reference": "120 untouched images of data"}
    warning = space_check_html(check)
    assert "class='warn'" in warning and "Foreign space" in warning
    assert "0.40" in warning and "0.95" in warning and "0.55" in warning and "256 random queries" in warning
    fine = space_check_html({**check, "random_accuracy": 0.85, "drop": 0.10, "foreign": False})
    assert "warn" not in fine and "0.85" in fine and "0.95" in fine and "within the 0.25" in fine
    assert space_check_html(None) == ""


def test_changed_factors_lists_only_the_factors_away_from_their_defaults():
    space = {"rotation": {"default": 0.0}, "contrast": {"default": 1.0}, "noise": {"default": 0.0}}
    assert changed_factors({"rotation": 23.456, "contrast": 1.0, "noise": 0.0}, space) == "rotation 23.5"
    assert changed_factors({"rotation": 0.0, "contrast": 1.0, "noise": 0.0}, space) == "every factor at its default"


def test_sensitivity_figure_plots_each_bin_with_its_exact_interval():
    rng = np.random.default_rng(1)
    space = FactorSpace([Factor("rotation", -30.0, 30.0, 0.0, "deg"), Factor("noise", 0.0, 0.1, 0.0, "")])
    factors = np.column_stack([rng.uniform(-30, 30, 500), rng.uniform(0, 0.1, 500)])
    correct = np.abs(factors[:, 0]) < 15 + rng.normal(0, 3, 500)
    profile = sensitivity_profile(factors, correct, space, n_bins=5)
    fig = sensitivity_figure(profile)
    ax = fig.axes[0]
    assert ax.get_title().startswith("rotation")  # the factor with the largest spread first
    # accuracy per bin by hand, and Clopper-Pearson intervals from beta quantiles
    edges = np.linspace(-30, 30, 6)
    which = np.clip(np.digitize(factors[:, 0], edges) - 1, 0, 4)
    by_hand = np.array([correct[which == b].mean() for b in range(5)])
    np.testing.assert_allclose(ax.lines[0].get_ydata(), by_hand)
    segments = ax.collections[0].get_segments()
    for b, segment in enumerate(segments):
        k, n = int(correct[which == b].sum()), int((which == b).sum())
        low = 0.0 if k == 0 else beta.ppf(0.025, k, n - k + 1)
        high = 1.0 if k == n else beta.ppf(0.975, k + 1, n - k)
        assert sorted(segment[:, 1]) == pytest.approx([low, high], abs=1e-9)


@pytest.mark.slow
def test_the_page_shows_every_piece_of_an_image_examination(tiny_torch_net, shapes_tiny, tmp_path):
    import fitaudit
    from fitaudit.report import audit_page, load_audit

    result = fitaudit.audit(tiny_torch_net, (shapes_tiny.images, shapes_tiny.labels), instruments=["examine"],
                            examiner="random", examine_steps=4, options=RunOptions(progress=False))
    part = result.part("examine")
    examined = part.result
    # every worst case comes with its untouched original: the instance with every factor at its default
    for case in part.images:
        assert np.shape(case["original"]) == np.shape(case["pixels"]) == (3, 32, 32)
        untouched = np.round(shapes_tiny.images[shapes_tiny.labels == int(case["label"])] * 255)
        assert any(np.array_equal(np.asarray(case["original"]), image) for image in untouched)
    first = part.images[0]
    for page in (audit_page(result), audit_page(load_audit(json.loads(result.to_json())))):
        section = page[page.index("id='evidence-examine'"):]
        assert section.count("<figure><div style='display:flex;gap:3px'>") == len(part.images)
        check = examined.space_check
        assert (f"{check['random_accuracy']:.2f}" in section) and (f"{check['clean_accuracy']:.2f}" in section)
        assert ("Foreign space" in section) == check["foreign"]
        assert "Sensitivity profile" in section and "t-SNE of the inputs" in section
        rules = examined.weakness.rules
        n_reference = f"of random queries (n = {examined.weakness.n_confirming:,})"
        assert section.count(n_reference) == len(rules)
        caption = re.search(r"<figcaption>([^<]*p\(true\)[^<]*)</figcaption>", section).group(1)
        assert caption.startswith(f"{first['label']}: p(true) {first['p_true']:.2f}; ")
