"""`fitaudit audit`, `fitaudit report` and `--fail-on` on the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.tree import DecisionTreeClassifier

from fitaudit.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    skops_io = pytest.importorskip("skops.io")
    folder = tmp_path_factory.mktemp("audit-cli")
    x, y = make_moons(200, noise=0.3, random_state=0)
    np.savez(folder / "train.npz", x=x[:140], y=y[:140])
    np.savez(folder / "test.npz", x=x[140:], y=y[140:])
    model = DecisionTreeClassifier(random_state=0).fit(x[:140], y[:140])
    skops_io.dump(model, folder / "tree.skops")
    return folder


def _audit(files, out, *extra):
    return main(["audit", "--model", str(files / "tree.skops"), "--data", str(files / "test.npz"),
                 "--train-data", str(files / "train.npz"), "--out", str(out), "--quiet", *extra])


@pytest.mark.slow
def test_audit_writes_report_and_summary(files, tmp_path, capsys):
    assert _audit(files, tmp_path) == 0
    text = capsys.readouterr().out
    assert "[????] Perturbed model validation" in text and "memorises" in text  # inconclusive: PMV cannot tell
    assert "[skip] Overfitting test" in text and "report.html" in text
    page = (tmp_path / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "Perturbed model validation" in page


@pytest.mark.slow
def test_json_output_is_the_written_json(files, tmp_path, capsys):
    assert _audit(files, tmp_path, "--json") == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((tmp_path / "audit.json").read_text())
    assert {p["id"]: p["verdict"]["status"] for p in printed["parts"]}["pmv"] == "inconclusive"


@pytest.mark.slow
def test_fail_on_exit_codes(files, tmp_path, capsys):
    # PMV cannot conclude on the unbounded tree (it memorises): --fail-on pmv exits 1 after the summary
    assert _audit(files, tmp_path, "--fail-on", "pmv") == 1
    captured = capsys.readouterr()
    assert "[????]" in captured.out and "pmv could not conclude" in captured.err
    # a chosen check that could not run also fails the pipeline
    assert _audit(files, tmp_path, "--fail-on", "examine") == 1
    assert "examine did not run" in capsys.readouterr().err
    assert _audit(files, tmp_path, "--fail-on", "nonsense") == 2
    assert "not an instrument or part" in capsys.readouterr().err


@pytest.mark.slow
def test_a_misspelt_fail_on_leaves_the_earlier_report(files, tmp_path, capsys):
    # checked before any work: the audit does not run, so the earlier audit.json and report.html stay
    assert _audit(files, tmp_path) == 0
    before = {name: (tmp_path / name).read_bytes() for name in ("audit.json", "report.html")}
    capsys.readouterr()
    assert main(["audit", "--model", str(files / "tree.skops"), "--data", str(files / "test.npz"),
                 "--out", str(tmp_path), "--quiet", "--fail-on", "pmvv"]) == 2  # no --train-data: other data
    err = capsys.readouterr().err
    assert "`--fail-on` names 'pmvv'" in err and "pmv" in err.split("use some of", 1)[1]
    assert {name: (tmp_path / name).read_bytes() for name in before} == before


def test_bad_input_is_one_line(files, tmp_path, capsys):
    assert main(["audit", "--model", str(tmp_path / "none.onnx"), "--data", str(files / "test.npz"),
                 "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "`--model`" in err and "does not exist" in err
    assert main(["audit", "--model", str(files / "tree.skops"), "--data", str(files / "test.npz"),
                 "--instruments", "pmv", "--out", str(tmp_path), "--quiet"]) == 2
    assert "PMV needs" in capsys.readouterr().err


@pytest.mark.slow
def test_report_rebuilds_the_page(files, tmp_path, capsys):
    assert _audit(files, tmp_path) == 0
    original = (tmp_path / "report.html").read_text()
    (tmp_path / "report.html").unlink()
    capsys.readouterr()
    assert main(["report", str(tmp_path / "audit.json")]) == 0
    assert "Report written to" in capsys.readouterr().out
    assert (tmp_path / "report.html").read_text() == original
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["report", str(tmp_path / "bad.json")]) == 2
    assert "is not JSON" in capsys.readouterr().err
    (tmp_path / "other.json").write_text(json.dumps({"type": "PMVResult"}))
    assert main(["report", str(tmp_path / "other.json")]) == 2
    assert "is not an audit" in capsys.readouterr().err


def test_an_unknown_factor_stops_the_audit_before_any_work(files, tmp_path, capsys):
    out = tmp_path / "factor"
    assert _audit(files, out, "--factor", "rotaton=-10:10") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "`--factor` names unknown factor 'rotaton'" in err
    assert not any(out.rglob("*"))  # nothing was run or written
    assert _audit(files, out, "--factor", "rotation=10:-10") == 2
    assert "inverted" in capsys.readouterr().err and not any(out.rglob("*"))
