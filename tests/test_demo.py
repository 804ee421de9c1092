"""`fitaudit demo --quick`: every instrument runs and finds the answer known in advance; the report is written.

The demo exists to show what each instrument says when a score can and
cannot be trusted, so this test asserts those answers (a quick demo that got
them wrong would teach users the wrong thing).
"""

from __future__ import annotations

import json

import pytest

from fitaudit.cli import main

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["demo", "--quick", "--quiet", "--json", "--out", str(out)])
    assert code == 0
    return out, json.loads(buffer.getvalue())


def _parts(written):
    return {p["id"]: p for p in written["parts"]}


def test_printed_json_is_the_written_json_and_the_report_exists(demo):
    out, printed = demo
    assert printed == json.loads((out / "audit.json").read_text())
    page = (out / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "http://" not in page and "https://" not in page


def test_overfitting_test_catches_the_model_tuned_on_its_test_set(demo):
    parts = _parts(demo[1])
    dependent, independent = parts["overfit-synthetic-dependent"], parts["overfit-synthetic-independent"]
    assert dependent["result"]["reject"] is True and dependent["status"] == "fail"
    assert independent["result"]["reject"] is False and independent["status"] == "pass"
    assert dependent["result"]["pvalue"] < 0.05 <= independent["result"]["pvalue"]


def test_shapes_cnn_is_rejected_on_its_training_set_only(demo):
    parts = _parts(demo[1])
    assert parts["overfit-shapes-train"]["result"]["reject"] is True
    assert parts["overfit-shapes-heldout"]["result"]["reject"] is False


def test_examiner_finds_the_planted_elevation_weakness(demo):
    part = _parts(demo[1])["examine-planted"]
    numbers = part["numbers"]
    outside = numbers["failure rate, random factors with |elevation| > 30"]
    inside = numbers["failure rate, random factors with |elevation| <= 30"]
    assert outside > 2 * inside
    rules = part["result"]["weakness"]["rules"]
    # the headline (the best-supported rule, by lift among regions with enough random queries) names the elevation
    assert any(condition[0] == "camera_elevation" for condition in rules[0]["conditions"])
    assert rules[0]["supported"] and "random queries there:" in rules[0]["text"]
    assert rules[0]["text"] in part["verdict"]
    assert numbers["worst-case accuracy (examined)"] < numbers["average accuracy (random factors)"]
    assert part["images"] and all(len(image["pixels"]) == 3 for image in part["images"])
    assert [item["type"] for item in part["evidence"]] == ["QueryEmbedding"]  # the t-SNE picture's data
    page = (demo[0] / "report.html").read_text()
    assert "t-SNE of the inputs" in page


def test_zoo_leaderboard_ranks_the_noisy_true_gap_above_the_baselines(demo):
    part = _parts(demo[1])["pgdl-zoo"]
    rows = {row["measure"]: row for row in part["result"]["rows"]}
    assert set(rows) >= {"noisy_gap", "parameter_count", "vc_dim"}
    order = [row["measure"] for row in part["result"]["rows"]]
    assert order.index("noisy_gap") < min(order.index("parameter_count"), order.index("vc_dim"))
    assert rows["noisy_gap"]["final_score"] > max(rows["parameter_count"]["final_score"], rows["vc_dim"]["final_score"])
    assert rows["noisy_gap"]["kendall"] > 0


def test_memorising_tree_gets_the_worst_pmv_score(demo):
    parts = _parts(demo[1])
    scores = {pid: p["result"]["score"] for pid, p in parts.items() if p["instrument"] == "pmv"}
    assert len(scores) == 4
    assert min(scores, key=scores.get) == "pmv-tree" and scores["pmv-tree"] < 0.05
    assert parts["pmv-tree"]["status"] == "fail"


def test_every_known_answer_is_found_and_recorded(demo):
    known = [p for p in demo[1]["parts"] if p["expected"] is not None]
    assert len(known) >= 7
    assert all(p["expected"]["met"] for p in known), [p["id"] for p in known if not p["expected"]["met"]]


def test_the_demo_counts_only_wrong_answers_as_problems(demo):
    """A part whose failure is the known right answer is shown as found, as expected: no red badge, no problem."""
    from fitaudit.auditing import load_audit
    from fitaudit.report.verdicts import read, read_part

    out, written = demo
    result = load_audit(written)
    failed = [p for p in result.parts if p.status == "fail"]
    assert {"overfit-synthetic-dependent", "pmv-tree"} <= {p.id for p in failed}  # failures that are the answer
    known = [p for p in result.parts if p.expected is not None]
    assert read(result) == ("pass", f"{len(known)} of {len(known)} known answers found.")
    page = (out / "report.html").read_text()
    assert "class='pill fail'" not in page and "problems found" not in page
    assert "found, as expected" in page
    # every part says what the one reading says (tests/report/test_verdicts.py checks the other places)
    for part, saved in zip(result.parts, written["parts"]):
        assert (saved["status"], saved["verdict"]) == tuple(read_part(part)), part.id


def test_second_run_reuses_every_part_and_says_so(demo, capsys):
    out, first = demo
    assert main(["demo", "--quick", "--quiet", "--json", "--out", str(out)]) == 0
    second = json.loads(capsys.readouterr().out)
    assert [p["id"] for p in second["parts"] if not p["resumed"]] == []
    assert [p["numbers"] for p in second["parts"]] == [p["numbers"] for p in first["parts"]]
    assert main(["demo", "--quick", "--quiet", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    parts = len(first["parts"])
    assert f"Reused {parts} of {parts} parts from {out / 'parts'}" in text
    assert f"{parts} of {parts} parts reused" in text.splitlines()[0]
