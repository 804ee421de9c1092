"""The first questions come first in every audit: accuracy with its interval, leakage, agreement."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

import fitaudit
from fitaudit import InputError
from fitaudit.options import RunOptions
from fitaudit.report import audit_page
from fitaudit.stats import binomial_interval

#: this module's audits run without progress bars
QUIET = RunOptions(progress=False)

FIRST = ["accuracy", "baseline", "calibration", "slices", "labels", "leakage", "agreement"]


@pytest.fixture(scope="module")
def rows():
    x, y = make_classification(500, n_features=6, random_state=0)
    train, test = (x[:300], y[:300]), (x[300:].copy(), y[300:].copy())
    test[0][:12], test[1][:12] = train[0][:12], train[1][:12]  # 12 scored rows copied from training
    model = LogisticRegression().fit(*train)
    other = LogisticRegression(C=0.05).fit(train[0][100:], train[1][100:])
    return train, test, model, other


def test_first_parts_come_first_with_the_numbers_of_the_library(rows, tmp_path):
    train, test, model, other = rows
    result = fitaudit.audit(model, test, train_data=train, models=[other], instruments=["pmv"],
                            options=QUIET)
    assert [p.id for p in result.parts[:len(FIRST)]] == FIRST
    hits = model.predict(test[0]) == test[1]
    accuracy = result.part("accuracy")
    assert accuracy.status == "info" and accuracy.result.correct == int(hits.sum())
    interval = binomial_interval(int(hits.sum()), len(hits))
    assert (accuracy.result.low, accuracy.result.high) == pytest.approx((interval.low, interval.high))
    assert result.subject["accuracy_interval"] == pytest.approx([interval.low, interval.high])
    leakage = result.part("leakage")
    assert leakage.status == "fail" and leakage.result.exact_scored.tolist() == list(range(12))
    keep = np.setdiff1d(np.arange(len(hits)), leakage.result.near_scored)
    assert leakage.result.accuracy_without.correct == int(hits[keep].sum())
    agreement = result.part("agreement")
    same = model.predict(test[0]) == other.predict(test[0])
    assert agreement.result.agree == int(same.sum()) and agreement.result.measured.correct == int(hits.sum())
    page = audit_page(result)
    assert "The first questions" in page and "exact)" in page  # the header's interval


def test_without_training_data_or_other_runs_the_parts_say_why(rows, tmp_path):
    _, test, model, _ = rows
    result = fitaudit.audit(model, test, options=QUIET)
    assert [p.id for p in result.parts[:len(FIRST)]] == FIRST
    assert result.part("accuracy").status == "info"
    assert result.part("leakage").status == "skipped" and "training data" in result.part("leakage").sentence
    assert result.part("agreement").status == "skipped" and "another run" in result.part("agreement").sentence


@pytest.mark.slow
def test_first_parts_are_reused_on_a_rerun(rows, tmp_path):
    train, test, model, other = rows
    fitaudit.audit(model, test, train_data=train, models=[other], checkpoint_dir=tmp_path, options=QUIET)
    again = fitaudit.audit(model, test, train_data=train, models=[other], checkpoint_dir=tmp_path, options=QUIET)
    assert {"accuracy", "leakage", "agreement"} <= {p.id for p in again.reused()}


def test_runs_with_different_class_counts_are_an_error(rows, tmp_path):
    train, test, model, _ = rows
    three = LogisticRegression().fit(train[0], np.arange(len(train[1])) % 3)
    with pytest.raises(InputError, match=r"`models\[0\]` has 3 classes but the audited model has 2"):
        fitaudit.audit(model, test, models=[three], options=QUIET)


def test_each_other_run_is_loaded_once_whatever_the_checks_that_use_it(rows, monkeypatch):
    """The agreement part (which checks the run's classes before any part runs) and the N-model test's key
    and run share one loaded model; the keys come from the runs as given."""
    import fitaudit.models as models

    train, test, model, other = rows
    loaded: list[object] = []
    load = models.as_classifier

    def counting(obj, *args, **kwargs):
        if obj is other:
            loaded.append(obj)
        return load(obj, *args, **kwargs)

    monkeypatch.setattr(models, "as_classifier", counting)
    result = fitaudit.audit(model, test, train_data=train, models=[other], instruments=["pmv"], options=QUIET)
    assert result.part("agreement").status != "skipped" and len(loaded) == 1


def test_inspect_loads_the_other_run_as_the_audit_does(rows, monkeypatch):
    """fitaudit inspect's first questions (checks.first_questions) load the other run through the audit's own
    loader (inputs.load_other_run, kept by AuditInputs.other_run): once, with the same class check."""
    import fitaudit.auditing.inputs as inputs
    from fitaudit.auditing.checks import first_questions
    from fitaudit.data.dataset import Dataset
    from fitaudit.models import as_classifier

    train, test, model, other = rows
    calls: list[object] = []
    load = inputs.load_other_run

    def counting(adapter, run, *args, **kwargs):
        calls.append(run)
        return load(adapter, run, *args, **kwargs)

    monkeypatch.setattr(inputs, "load_other_run", counting)
    parts = first_questions(as_classifier(model), test=Dataset(*test, "test"), train=Dataset(*train, "train"),
                            models=[other])
    agreement = next(p for p in parts if p.id == "agreement")
    assert agreement.status != "skipped" and calls == [other]
    three = LogisticRegression().fit(np.vstack([train[0]] * 2), np.arange(2 * len(train[1])) % 3)
    with pytest.raises(InputError, match=r"`models\[0\]` has 3 classes but the audited model has 2"):
        first_questions(as_classifier(model), test=Dataset(*test, "test"), models=[three])


@pytest.mark.slow
def test_image_arrays_show_the_pairs_as_pictures(tmp_path):
    torch = pytest.importorskip("torch")
    from fitaudit.auditing.first import leakage_parts
    from fitaudit.auditing.inputs import Dataset
    from fitaudit.auditing.result import AuditResult
    from fitaudit.data.shapes import make_splits
    from fitaudit.leakage import plant_twins
    from fitaudit.models import as_classifier
    from fitaudit.models.shapes_nets import shapes_alexnet

    splits = make_splits({"train": 6, "test": 6}, 2, classes=["sphere", "cube", "torus"], random_state=0)
    train, test = splits["train"], splits["test"]
    twins = plant_twins(train.images, 2, kinds=("copy", "shift"), random_state=0)
    x = np.concatenate([test.images, twins.images])
    y = np.concatenate([test.labels, train.labels[twins.source]])
    torch.manual_seed(0)
    adapter = as_classifier(shapes_alexnet(3, width=4))
    specs = leakage_parts(adapter, "net", data=Dataset(x, y, "arrays"), train=Dataset(train.images, train.labels, "arrays"))
    assert [s.id for s in specs] == ["leakage", "leakage-penult"]
    leakage, penultimate = (spec.compute() for spec in specs)
    found = dict(zip(leakage.result.near_scored.tolist(), leakage.result.near_train.tolist()))
    for k, source in enumerate(twins.source):
        assert found.get(len(test.images) + k) == source
    assert leakage.images and leakage.images[0]["pixels"].shape == (3, 32, 66)
    assert penultimate.result.space == "penultimate features"
    page = audit_page(AuditResult(title="t", subject={}, parts=[leakage, penultimate], settings={"out": "."},
                                  environment={}, random_state=0, seconds=0.0, created="now"))
    assert "training twin right" in page and page.count("<figure>") >= len(leakage.images)


@pytest.mark.slow
def test_the_audit_leakage_search_keeps_its_blocks(tmp_path):
    """An audit's image leakage search keeps its finished blocks (resumable inside the part) and reuses them."""
    from fitaudit.auditing.first import leakage_parts
    from fitaudit.auditing.inputs import Dataset
    from fitaudit.data.shapes import make_splits
    from fitaudit.leakage import plant_twins

    splits = make_splits({"train": 6, "test": 6}, 2, classes=["sphere", "cube", "torus"], random_state=0)
    train, test = splits["train"], splits["test"]
    twins = plant_twins(train.images, 2, kinds=("copy", "shift"), random_state=0)
    x = np.concatenate([test.images, twins.images])
    y = np.concatenate([test.labels, train.labels[twins.source]])

    def predict(images):
        return np.tile(np.eye(3)[0], (len(images), 1))

    from fitaudit.models import as_classifier

    adapter = as_classifier(predict, n_classes=3)
    blocks = tmp_path / "blocks"

    def run():
        (spec,) = leakage_parts(adapter, "model", data=Dataset(x, y, "arrays"),
                                train=Dataset(train.images, train.labels, "arrays"), checkpoint_dir=blocks)
        return spec.compute().result

    def stored():
        return {p: p.stat().st_mtime_ns for p in blocks.rglob("*") if p.is_file()}

    first = run()
    kept = stored()
    assert kept  # the features, calibration and search blocks were kept
    again = run()
    assert stored() == kept  # reused: nothing written again (an atomic rewrite would change the times)
    assert again.near_scored.tolist() == first.near_scored.tolist()
    assert again.near_train.tolist() == first.near_train.tolist()
    assert np.array_equal(again.near_distance, first.near_distance)
