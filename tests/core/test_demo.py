"""`fitaudit demo --quick` runs all instruments end to end and writes demo.json."""

from __future__ import annotations

import json

import pytest

from fitaudit.cli import main

pytest.importorskip("torch")


def test_demo_quick_writes_json_and_known_answers(tmp_path, capsys):
    assert main(["demo", "--quick", "--quiet", "--json", "--out", str(tmp_path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    written = json.loads((tmp_path / "demo.json").read_text())
    assert printed == written
    synthetic = written["overfit_synthetic"]["models"]
    # an independent model is not rejected; p-values are probabilities
    assert synthetic["independent"]["reject"] is False
    for entry in [*synthetic.values(), *written["overfit_shapes"]["samples"].values()]:
        assert 0.0 <= entry["pvalue"] <= 1.0
    # PMV: a learner that memorises flipped labels keeps training accuracy 1, so |k_S| ~ 0
    scores = written["pmv"]["scores"]
    assert scores["tree, unbounded"] < 0.05
    assert written["pmv"]["best"] != "tree, unbounded"
    assert (tmp_path / "shapes-cnn").is_dir()
