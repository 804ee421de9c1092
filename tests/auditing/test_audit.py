"""fitaudit.audit: parts that apply run, the others are skipped with a reason; verdicts; pure data (save_audit writes
the report files)."""

from __future__ import annotations

import html
import json
import os
import tempfile

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

import fitaudit
from fitaudit import InputError
from fitaudit.auditing import AuditResult, load_data, model_fingerprint
from fitaudit.data import GaussianMargin
from fitaudit.options import RunOptions
from fitaudit.overfit import LinearGradientAEG, overfit_test, train_logistic_models
from fitaudit.report import audit_page, load_audit, save_audit

#: this module's audits run without progress bars
QUIET = RunOptions(progress=False)


def _fine_part(part_id):
    """A part with a real (tiny) result: a part's verdict is always decided from its result."""
    from fitaudit.auditing.parts import part_from_result
    from fitaudit.stats import accuracy

    return part_from_result(part_id, "first", "a part", accuracy([0, 1, 1], [0, 1, 1]))


@pytest.fixture(scope="module")
def moons():
    x, y = make_moons(240, noise=0.3, random_state=0)
    return (x[:160], y[:160]), (x[160:], y[160:])


@pytest.fixture(scope="module")
def margin_problem():
    """A logistic model trained on half of its test set (dependent) on the Gaussian-margin data."""
    dist = GaussianMargin(d=50)
    x, y = dist.sample(800, random_state=1)
    x_train, y_train = dist.sample(400, random_state=2)
    dependent = train_logistic_models(x[:400], y[:400], steps=600, first_coordinate_penalty=1e4, random_state=0)[0]
    return dist, (x, y), (x_train, y_train), dependent


@pytest.mark.slow
def test_import_fitaudit_is_light_and_audit_is_callable():
    import subprocess
    import sys

    code = ("import sys, fitaudit; assert 'torch' not in sys.modules and 'fitaudit.auditing' not in sys.modules; "
            "import fitaudit.auditing as m; from fitaudit import audit; "
            "assert fitaudit.audit is audit and audit.__wrapped__ is m.run_audit and callable(audit); "
            "assert type(sys.modules['fitaudit.auditing']).__name__ == 'module'; print('ok')")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "ok"


@pytest.mark.slow
def test_tabular_sklearn_model_runs_pmv_and_skips_the_rest_with_reasons(moons, tmp_path, monkeypatch):
    train, test = moons
    model = DecisionTreeClassifier(random_state=0).fit(*train)
    monkeypatch.chdir(tmp_path)  # the old default output folder was fitaudit-out/audit, here
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the working folder of an audit without checkpoints
    result = fitaudit.audit(model, test, train_data=train, options=QUIET)
    assert not list(tmp_path.iterdir())  # pure data: no report, no checkpoints left behind
    assert isinstance(result, AuditResult)
    statuses = result.verdicts()
    assert statuses["overfit-test"] == "skipped" and "AEG" in result.part("overfit-test").sentence
    assert statuses["examine"] == "skipped" and "generator" in result.part("examine").sentence
    assert statuses["pgdl"] == "skipped"
    # an unbounded tree memorises flipped labels: |k_S| ~ 0, and PMV cannot tell whether it generalises
    pmv = result.part("pmv")
    assert pmv.status == "inconclusive" and pmv.result.score < 0.05 and "memorises" in pmv.sentence
    assert result.subject["accuracy"] == pytest.approx(model.score(*test)) and result.subject["train_accuracy"] == 1.0
    assert result.settings["checkpoint_dir"] is None and "out" not in result.settings
    assert save_audit(result, tmp_path) == {"json": tmp_path / "audit.json", "html": tmp_path / "report.html"}
    assert (tmp_path / "audit.json").is_file() and (tmp_path / "report.html").is_file()
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "report.html").stat().st_mode & 0o777 == 0o666 & ~umask  # not the temporary file's 0600


def test_pmv_passes_a_learner_that_fits(moons, tmp_path):
    train, test = moons
    result = fitaudit.audit(LogisticRegression().fit(*train), test, train_data=train, options=QUIET)
    pmv = result.part("pmv")
    assert pmv.status == "pass" and pmv.result.score >= 0.3


def test_overfit_on_test_and_train_data_side_by_side(margin_problem, tmp_path):
    dist, test, train, dependent = margin_problem
    aeg = LinearGradientAEG(10.0, dist)
    result = fitaudit.audit(dependent, test, train_data=(test[0][:400], test[1][:400]), aeg=aeg,
                            instruments=["overfit"], options=QUIET)
    assert [p.id for p in result.parts if p.instrument == "overfit"] == ["overfit-test", "overfit-train"]
    part = result.part("overfit-test")
    direct = overfit_test(dependent, *test, aeg)
    # the audit's numbers are the instrument's numbers
    assert part.result.pvalue == pytest.approx(direct.pvalue) and part.result.statistic == pytest.approx(direct.statistic)
    control = result.part("overfit-train")
    assert control.status == "info"
    # the test on the training data is the scored test's control: not rejected there, no pass here
    assert part.status == ("fail" if direct.reject else "pass" if control.result.reject else "inconclusive")
    assert part.numbers["p-value (pairwise test)"] == pytest.approx(direct.pvalue)


def test_fail_on_names_failed_and_unrun_verdicts(moons, tmp_path):
    train, test = moons
    result = fitaudit.audit(DecisionTreeClassifier(random_state=0).fit(*train), test, train_data=train,
                            options=QUIET)
    messages = result.failing(["pmv"])
    assert len(messages) == 1 and messages[0].startswith("pmv could not conclude")  # a memorising tree
    assert result.failing(["overfit"]) and "did not run" in result.failing(["overfit"])[0]
    with pytest.raises(InputError, match="`fail_on` names 'bogus'"):
        result.failing(["bogus"])


@pytest.mark.slow
def test_json_rebuilds_the_same_result_and_page(moons, tmp_path):
    train, test = moons
    result = fitaudit.audit(DecisionTreeClassifier(max_depth=3, random_state=0).fit(*train), test,
                            train_data=train, options=QUIET)
    save_audit(result, tmp_path)
    data = json.loads((tmp_path / "audit.json").read_text())
    rebuilt = load_audit(data)
    assert isinstance(rebuilt, AuditResult)
    assert rebuilt.to_dict() == result.to_dict()
    assert audit_page(rebuilt) == (tmp_path / "report.html").read_text()
    # in a notebook: the same page in a frame (its style sheet stays out of the notebook's)
    frame = result._repr_html_()
    assert frame.startswith("<iframe") and html.unescape(frame.split('srcdoc="')[1].split('" title')[0]) == audit_page(result)


def test_bad_input_is_one_clear_error(moons, tmp_path):
    train, test = moons
    model = LogisticRegression().fit(*train)
    with pytest.raises(InputError, match="`data` is required"):
        fitaudit.audit(model, checkpoint_dir=tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        fitaudit.audit(model, tmp_path / "missing.npz", checkpoint_dir=tmp_path)
    with pytest.raises(InputError, match="`instruments` asks for pmv, but PMV needs"):
        fitaudit.audit(model, test, instruments=["pmv"], checkpoint_dir=tmp_path, options=QUIET)
    with pytest.raises(InputError, match="`instruments` must name"):
        fitaudit.audit(model, test, instruments=["magic"], checkpoint_dir=tmp_path)
    with pytest.raises(InputError, match="the model does not accept `data`"):
        fitaudit.audit(model, (np.zeros((5, 7)), np.zeros(5, dtype=int)), checkpoint_dir=tmp_path, options=QUIET)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="`checkpoint_dir` must be a folder"):
        fitaudit.audit(model, test, checkpoint_dir=tmp_path / "file")
    assert not (tmp_path / "parts").exists()


def test_npz_margin_is_read(tmp_path):
    path = tmp_path / "d.npz"
    np.savez(path, x=np.zeros((4, 3, 14, 14), np.float32), y=np.array([0, 1, 0, 1]), margin=np.int64(3))
    data = load_data(str(path), "data")
    assert data.margin == 3 and data.x.shape == (4, 3, 14, 14)


def test_model_fingerprint_follows_weights_not_identity(moons):
    train, _ = moons
    a = DecisionTreeClassifier(random_state=0).fit(*train)
    b = DecisionTreeClassifier(random_state=0).fit(*train)
    c = DecisionTreeClassifier(random_state=0, max_depth=2).fit(*train)
    assert model_fingerprint(a) == model_fingerprint(b) != model_fingerprint(c)


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_numbers(moons, tmp_path):
    """The documented scale-out: a Dask scheduler address runs the heavy parts on the cluster."""
    distributed = pytest.importorskip("distributed")
    train, test = moons
    model = DecisionTreeClassifier(max_depth=4, random_state=0).fit(*train)
    local = fitaudit.audit(model, test, train_data=train, options=QUIET)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        remote = fitaudit.audit(model, test, train_data=train, options=RunOptions(n_jobs=2, dask_scheduler=cluster.scheduler_address, progress=False))
    assert remote.settings["dask_scheduler"] == cluster.scheduler_address
    assert remote.part("pmv").result.score == pytest.approx(local.part("pmv").result.score)
    with pytest.raises(InputError, match="`dask_scheduler`"):
        fitaudit.audit(model, test, train_data=train, options=RunOptions(dask_scheduler=3, progress=False))


def test_other_runs_add_the_n_model_test(margin_problem, tmp_path):
    from fitaudit.overfit import n_model_test

    dist, test, _, dependent = margin_problem
    others = [train_logistic_models(test[0][:400], test[1][:400], steps=600, first_coordinate_penalty=1e4,
                                    random_state=seed)[0] for seed in (1, 2)]
    aeg = LinearGradientAEG(10.0, dist)
    result = fitaudit.audit(dependent, test, models=others, aeg=aeg, instruments=["overfit"], options=QUIET)
    part = result.part("overfit-nmodel")
    direct = n_model_test([dependent, *others], *test, aeg)
    assert part.result.n_models == 3 and part.result.pvalue == pytest.approx(direct.pvalue)
    assert part.verdict.status == direct.verdict().status and part.verdict.reason == direct.verdict().reason
    # one run scores 0.5225 against a chance of 0.4996: kappa 0.046, its 95% lower bound -0.012
    assert part.verdict.reason == ("pvalue_below_level" if direct.reject else "accuracy_not_shown_above_chance")


def test_a_part_computed_by_edited_code_is_not_reused(tmp_path, monkeypatch):
    """A part's key holds the source behind its compute function, not only its inputs."""
    import inspect

    from fitaudit.auditing import PartSpec, run_parts
    from fitaudit.checkpoint import CheckpointStore

    calls = []

    def compute():
        calls.append(1)
        return _fine_part("p")

    spec = PartSpec(id="p", instrument="pmv", title="a part", inputs={"x": 1}, compute=compute)
    store = CheckpointStore(tmp_path)
    run_parts([spec], store, progress=False)
    assert run_parts([spec], store, progress=False)[0].resumed and len(calls) == 1
    original = inspect.getsource
    monkeypatch.setattr(inspect, "getsource", lambda obj: original(obj) + ("\n# edited" if obj.__name__ == __name__ else ""))
    again = run_parts([spec], store, progress=False)[0]
    assert not again.resumed and len(calls) == 2


@pytest.fixture(scope="module")
def saved_audit(moons, tmp_path_factory):
    """An audit whose PMV part fails (an unbounded tree), saved as audit.json."""
    train, test = moons
    out = tmp_path_factory.mktemp("saved-audit")
    save_audit(fitaudit.audit(DecisionTreeClassifier(random_state=0).fit(*train), test, train_data=train,
                              options=QUIET), out)
    data = json.loads((out / "audit.json").read_text())
    index = next(i for i, p in enumerate(data["parts"]) if p["id"] == "pmv")
    return data, index


def _edited(data, tmp_path, edit):
    copy = json.loads(json.dumps(data))
    edit(copy)
    (tmp_path / "audit.json").write_text(json.dumps(copy))
    return tmp_path / "audit.json"


@pytest.mark.parametrize("edit, field", [
    (lambda pmv: pmv["result"].update(score="0.9"), "result.score` must be a number; got str '0.9'"),
    (lambda pmv: pmv["result"].update(mean_accuracy=pmv["result"]["mean_accuracy"][:-1]),
     "`parts[PMV].result` must have one length each (one value per point); got `rates` 11, `mean_accuracy` 10"),
    (lambda pmv: pmv["verdict"].update(status="passed"),
     "field `parts[PMV].verdict.status` must be one of fail, pass, inconclusive, info, skipped; got 'passed'"),
    (lambda pmv: pmv["verdict"].update(status="banana"), "got 'banana'"),
    (lambda pmv: pmv["result"].pop("slope"), "result.slope` is missing"),
    (lambda pmv: pmv.update(result={"type": "Nope"}), "result.type` must be a known result type"),
])
@pytest.mark.slow
def test_report_on_an_edited_json_is_one_line_naming_the_field(saved_audit, tmp_path, capsys, edit, field):
    from fitaudit.cli import main

    data, index = saved_audit
    path = _edited(data, tmp_path, lambda d: edit(d["parts"][index]))
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    field = field.replace("PMV", str(index))  # the PMV part's index in the file
    assert err.startswith("fitaudit: error: `AUDIT_JSON`") and "\n" not in err and field in err, err
    assert not (tmp_path / "report.html").exists()


def test_statuses_and_verdicts_are_read_from_the_results_not_the_file(saved_audit, tmp_path):
    from fitaudit.cli import main

    data, index = saved_audit
    path = _edited(data, tmp_path, lambda d: d["parts"][index].update(
        verdict={"status": "pass", "reason": "fine", "numbers": {}, "sentence": "All good."}))
    assert main(["report", str(path)]) == 0
    page = path.with_name("report.html").read_text()
    assert "All good." not in page
    rebuilt = load_audit(json.loads(path.read_text()))
    assert rebuilt.verdict() == load_audit(data).verdict()  # the decision on the unedited file
    assert rebuilt.part("pmv").status == "inconclusive"
    assert "memorises its training labels" in rebuilt.part("pmv").sentence


def test_a_rerun_says_what_it_reused_and_from_where(moons, tmp_path):
    from fitaudit.cli.audit import summary

    train, test = moons
    model = LogisticRegression().fit(*train)
    first = fitaudit.audit(model, test, train_data=train, checkpoint_dir=tmp_path, options=QUIET)
    assert not first.reused() and "Reused" not in summary(first) and "reused" not in repr(first).splitlines()[0]
    again = fitaudit.audit(model, test, train_data=train, checkpoint_dir=tmp_path, options=QUIET)
    ran = [p.id for p in again.parts if p.status != "skipped"]
    assert "pmv" in ran and [p.id for p in again.reused()] == ran
    text = summary(again)
    assert f"Reused {len(ran)} of {len(ran)} parts from {tmp_path / 'parts'}" in text and "pmv" in text
    assert f"{len(ran)} of {len(ran)} parts reused from the checkpoint folder" in text.splitlines()[0]


def test_an_interrupted_run_says_what_it_kept(tmp_path, capsys):
    from fitaudit.auditing import PartSpec, run_parts
    from fitaudit.checkpoint import CheckpointStore

    def fine():
        return _fine_part("a")

    def interrupted():
        raise KeyboardInterrupt

    store = CheckpointStore(tmp_path)
    specs = [PartSpec("a", "pmv", "a part", {"x": 1}, fine), PartSpec("b", "pmv", "b part", {"x": 2}, interrupted)]
    with pytest.raises(KeyboardInterrupt):
        run_parts(specs, store, progress=False)
    assert f"audit interrupted: 1 finished part kept in {tmp_path}" in capsys.readouterr().err
    again = run_parts(specs[:1], store, progress=False)
    assert again[0].resumed
    with pytest.raises(KeyboardInterrupt):  # a temporary folder: nothing is kept, and the message says so
        run_parts(specs[1:], store, progress=False, kept=False)
    assert "audit interrupted: nothing kept (no checkpoint folder was given" in capsys.readouterr().err
