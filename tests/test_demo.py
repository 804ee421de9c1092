"""`fitaudit demo --quick`: every instrument runs and finds the answer known in advance; the report is written.

The demo exists to show what each instrument says when a score can and
cannot be trusted, so this test asserts those answers (a quick demo that got
them wrong would teach users the wrong thing).
"""

from __future__ import annotations

import json

import pytest

from fitaudit.cli import main

#: every test here takes seconds (README.md: the fast command leaves them out)
pytestmark = pytest.mark.slow

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """``fitaudit demo --quick`` in a fresh process, as a user runs it: nothing run before it in this process (other
    tests, their torch thread count) can change what it computes."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("demo")
    done = subprocess.run([sys.executable, "-m", "fitaudit", "demo", "--quick", "--quiet", "--json", "--out", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return out, json.loads(done.stdout)


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
    assert dependent["result"]["reject"] is True and dependent["verdict"]["status"] == "fail"
    assert independent["result"]["reject"] is False and independent["verdict"]["status"] == "pass"
    assert dependent["result"]["pvalue"] < 0.05 <= independent["result"]["pvalue"]


def test_shapes_cnn_is_rejected_on_its_training_folder_only(demo):
    """The Shapes parts go through image folders written in the output folder and the evaluation pipeline."""
    out, written = demo
    parts = _parts(written)
    train, heldout = parts["overfit-shapes-train"], parts["overfit-shapes-heldout"]
    assert train["result"]["reject"] is True and heldout["result"]["reject"] is False
    for part in (train, heldout):
        assert part["settings"]["pipeline"]["resize"] == 44 and part["settings"]["pipeline"]["crop"] == 32
        assert part["settings"]["pipeline"]["margin"] == 6 and "eps=2" in part["settings"]["aeg"]
        folder = part["settings"]["images"]
        assert folder.startswith(str(out / "shapes-images"))
        assert part["settings"]["classes"] == sorted(part["settings"]["classes"])  # the folder's class order
    root = out / "shapes-images"
    assert list(root.rglob("*.jpg")) and list(root.rglob("*.png"))
    assert train["result"]["m"] == 320


def test_planted_twins_are_caught(demo):
    part = _parts(demo[1])["leakage-planted"]
    assert part["instrument"] == "first" and part["verdict"]["status"] == "fail"
    assert all(part["numbers"][f"recall, {kind}"] == 1.0 for kind in ("copy", "jpeg", "shift", "brightness"))
    assert part["numbers"]["clean test images flagged"] <= 0.02
    assert demo[1]["known_answers"]["leakage-planted"]["met"] is True


def test_agreement_sees_a_choice_on_the_test_labels_strong_enough_to_see(demo):
    """The assembly chosen region by region on the test labels gains more over its accuracy on fresh digits than
    the check's detectable gain, and fails; the same assembly chosen on validation data does not fail."""
    from fitaudit.demo.selection import FRESH, GAIN

    parts = _parts(demo[1])
    by_test, by_validation = parts["agreement-chosen-on-test"], parts["agreement-chosen-on-validation"]
    numbers = by_test["numbers"]
    assert numbers[GAIN] == pytest.approx(numbers["measured accuracy"] - numbers[FRESH])
    detectable = by_test["verdict"]["numbers"]["detectable_gain"]
    assert numbers[GAIN] > detectable  # the planted gain is one the check can see at this n
    assert by_test["verdict"]["status"] == "fail" and by_test["verdict"]["reason"] == "measured_above_estimate"
    assert by_validation["verdict"]["status"] != "fail"
    for part in (by_test, by_validation):
        assert part["settings"]["runs"] == 40 and part["settings"]["regions"] == 160 and part["result"]["n"] == 797
        assert part["numbers"]["measured minus estimate"] == pytest.approx(
            part["numbers"]["measured accuracy"] - part["numbers"]["agreement estimate"])
    known = demo[1]["known_answers"]
    assert known["agreement-chosen-on-test"]["met"] is True and f"{detectable:.3f}" in known[
        "agreement-chosen-on-test"]["text"]
    assert known["agreement-chosen-on-validation"]["met"] is True


def test_examiner_finds_the_planted_elevation_weakness(demo):
    part = _parts(demo[1])["examine-planted"]
    numbers = part["numbers"]
    outside = numbers["failure rate, random factors with |elevation| > 30"]
    inside = numbers["failure rate, random factors with |elevation| <= 30"]
    assert outside > 2 * inside
    rules = part["result"]["weakness"]["rules"]
    # the headline (a confirmed rule: >= 20 random queries in its region, lift interval above 1) names the elevation
    assert any(condition[0] == "camera_elevation" for condition in rules[0]["conditions"])
    assert rules[0]["confirmed"] and rules[0]["lift_low"] > 1 and rules[0]["reference_support"] >= 20
    assert "random queries in the region:" in rules[0]["text"]
    region, _, shown = rules[0]["text"].partition(": ")  # the sentence: "Failures concentrate where REGION ...", then it
    assert f"Failures concentrate where {region}" in part["verdict"]["sentence"] and shown in part["verdict"]["sentence"]
    assert numbers["worst-case accuracy (examined)"] < numbers["average accuracy (random factors)"]
    assert part["images"] and all(len(image["pixels"]) == 3 for image in part["images"])
    assert [item["type"] for item in part["evidence"]] == ["QueryEmbedding"]  # the t-SNE picture's data
    page = (demo[0] / "report.html").read_text()
    assert "t-SNE of the inputs" in page


def test_rotation_augmented_digit_cnn_is_more_robust_to_rotation(demo):
    """The examiner on image folders (as `fitaudit reproduce examiner-images`): the known answer, and the page."""
    parts = _parts(demo[1])
    plain, augmented = parts["examine-digits-plain"], parts["examine-digits-rotation-augmented"]
    key = "worst-case accuracy over the 31 rotations (no translation)"
    assert augmented["numbers"][key] > plain["numbers"][key]
    small, large = (plain["numbers"][f"accuracy at |rotation| {s} (grid, no translation)"] for s in ("<= 10", ">= 20"))
    assert large < small - 0.1
    headline = plain["result"]["weakness"]["rules"][0]
    assert headline["confirmed"] and any(c[0] == "rotation" for c in headline["conditions"])
    known = demo[1]["known_answers"]
    assert known["examine-digits-plain"]["met"] is True and known["examine-digits-rotation-augmented"]["met"] is True
    for part in (plain, augmented):
        assert part["result"]["examiner"] == "grid" and part["result"]["n_model_queries"] == 775 * 20
        assert part["images"] and all(len(image["original"]) == len(image["pixels"]) for image in part["images"])
    page = (demo[0] / "report.html").read_text()
    assert "the untouched image left, the input found right" in page and "Sensitivity profile" in page
    weakness = plain["result"]["weakness"]
    confirming = weakness["n_reference"] - weakness["tree"].get("n_random_pool", 0)
    assert 0 < confirming < weakness["n_reference"] and f"of random queries (n = {confirming:,})" in page


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
    assert parts["pmv-tree"]["verdict"]["status"] == "inconclusive"  # it memorises: PMV cannot tell more


def test_every_known_answer_is_found_and_recorded(demo):
    """Every part's right answer is known and found: the demo shows only answers it finds."""
    known = demo[1]["known_answers"]  # with the demo, not in the parts: an audit knows no answers in advance
    assert all("expected" not in p for p in demo[1]["parts"])
    assert len(known) >= 12 and set(known) <= {p["id"] for p in demo[1]["parts"]}
    assert {part_id for part_id, answer in known.items() if not answer["met"]} == set()
    assert demo[1]["verdict"]["sentence"] == f"{len(known)} of {len(known)} known answers found."


def test_the_demo_counts_only_wrong_answers_as_problems(demo):
    """A part whose failure is the known right answer keeps its status's badge, marked found beside it: no problem.

    The page's badges and chips are its audit.json's statuses (issue 51: they were not)."""
    from fitaudit.demo import DemoResult
    from fitaudit.report import load_audit
    from fitaudit.report.verdicts import read, read_part
    from page_badges import check_page_against_json

    out, written = demo
    result = load_audit(written)
    assert isinstance(result, DemoResult) and result.known_answers() == written["known_answers"]
    failed = [p for p in result.parts if p.status == "fail"]
    # failures that are the answer
    assert {"overfit-synthetic-dependent", "leakage-planted", "agreement-chosen-on-test"} <= {p.id for p in failed}
    known = result.known_answers()
    assert read(result) == ("pass", f"{len(known)} of {len(known)} known answers found.")
    page = (out / "report.html").read_text()
    check_page_against_json(page, (out / "audit.json").read_text())
    assert "problems found" not in page
    assert "class='answer met'" in page and "class='answer wrong'" not in page
    # every part says what the one reading says (tests/report/test_verdicts.py checks the other places)
    for part, saved in zip(result.parts, written["parts"]):
        assert (saved["verdict"]["status"], saved["verdict"]["sentence"]) == tuple(read_part(part)), part.id


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


def test_a_rebuilt_page_checks_the_known_answers_again(demo, tmp_path):
    """An audit.json edited to say every known answer was missed is rebuilt with what the results say: all found."""
    out, written = demo
    edited = json.loads(json.dumps(written))
    for answer in edited["known_answers"].values():
        answer["met"] = False
    source = tmp_path / "audit.json"
    source.write_text(json.dumps(edited))
    assert main(["report", str(source), "--out", str(tmp_path / "page.html")]) == 0
    page = (tmp_path / "page.html").read_text()
    assert "class='answer wrong'" not in page and "NOT found" not in page and "class='answer met'" in page
