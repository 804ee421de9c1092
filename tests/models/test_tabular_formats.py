"""XGBoost and LightGBM native files and the ONNX exports of skl2onnx/onnxmltools, built as their users build them.

For each format: a small model trained on a bundled table, saved the
framework's own way; ``inspect`` and ``audit`` load it as a classifier with
its class count (and names where recorded) and give the accuracy the
framework itself computes on the same rows.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris

from fitaudit import InputError, audit
from fitaudit.cli import main
from fitaudit.models import load_model
from fitaudit.options import RunOptions


def _split(loader, seed: int = 0):
    x, y = loader(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order].astype(np.float32), y[order]
    cut = int(0.7 * len(y))
    return x[:cut], y[:cut], x[cut:], y[cut:]


def _inspect_and_audit(model, data, tmp_path, capsys, train=None):
    """(inspect's report, audit's accuracy part) of ``model`` on ``data`` (.npz)."""
    argv = ["inspect", "--model", str(model), "--data", str(data), "--json", "--quiet"]
    assert main(argv + (["--train-data", str(train)] if train else [])) == 0, capsys.readouterr().err
    report = json.loads(capsys.readouterr().out)
    result = audit(str(model), str(data), options=RunOptions(progress=False))
    return report, result


@pytest.fixture(scope="module")
def cancer():
    return _split(load_breast_cancer)


@pytest.fixture(scope="module")
def iris():
    return _split(load_iris)


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".json", ".ubj"])
def test_xgboost_native_file(suffix, cancer, tmp_path, capsys):
    xgboost = pytest.importorskip("xgboost")
    x_train, y_train, x_test, y_test = cancer
    x_test = x_test.copy()
    x_test[::7, 3] = np.nan  # XGBoost handles missing values itself
    model = xgboost.XGBClassifier(n_estimators=20, max_depth=3).fit(x_train, y_train)
    model.save_model(tmp_path / f"model{suffix}")
    np.savez(tmp_path / "test.npz", x=np.nan_to_num(x_test, nan=0.0), y=y_test)  # .npz arrays are finite
    expected = model.score(np.nan_to_num(x_test, nan=0.0), y_test)
    report, result = _inspect_and_audit(tmp_path / f"model{suffix}", tmp_path / "test.npz", tmp_path, capsys)
    assert (report["kind"], report["n_classes"]) == ("xgboost", 2)
    assert report["accuracy"] == pytest.approx(expected)
    assert result.subject["accuracy"] == pytest.approx(expected)
    adapter = load_model(tmp_path / f"model{suffix}")
    np.testing.assert_allclose(adapter.predict_proba(x_test), model.predict_proba(x_test), atol=1e-6)  # NaN as is
    # a table model scores a memory-bounded chunk a call (all these rows): the same scores as 7 rows a call
    assert adapter.batch_size is None and adapter.rows_per_call(x_test) >= len(x_test)
    np.testing.assert_array_equal(adapter.logits(x_test), load_model(tmp_path / f"model{suffix}", batch_size=7)
                                  .logits(x_test))


@pytest.mark.slow
def test_xgboost_multiclass_with_recorded_classes_and_a_table(iris, tmp_path, capsys):
    xgboost = pytest.importorskip("xgboost")
    pd = pytest.importorskip("pandas")
    x_train, y_train, x_test, y_test = iris
    names = np.array(["setosa", "versicolor", "virginica"])
    columns = ["sepal length", "sepal width", "petal length", "petal width"]
    model = xgboost.XGBClassifier(n_estimators=10, max_depth=2).fit(pd.DataFrame(x_train, columns=columns), y_train)
    booster = model.get_booster()
    booster.set_attr(classes=json.dumps(list(names)))  # the names the docs tell users to record
    booster.save_model(tmp_path / "model.json")
    table = pd.DataFrame(x_test, columns=columns)[columns[::-1]]  # columns in another order: matched by name
    table["species"] = names[y_test]
    table.to_csv(tmp_path / "test.csv", index=False)
    assert main(["inspect", "--model", str(tmp_path / "model.json"), "--data", str(tmp_path / "test.csv"),
                 "--label", "species", "--json", "--quiet"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["classes"] == list(names) and report["n_classes"] == 3
    assert report["accuracy"] == pytest.approx(model.score(pd.DataFrame(x_test, columns=columns), y_test))


@pytest.mark.slow
def test_lightgbm_native_file(iris, tmp_path, capsys):
    lightgbm = pytest.importorskip("lightgbm")
    x_train, y_train, x_test, y_test = iris
    model = lightgbm.LGBMClassifier(n_estimators=10, num_leaves=4, min_child_samples=5, verbose=-1)
    model.fit(x_train, y_train)
    model.booster_.save_model(str(tmp_path / "model.txt"))
    np.savez(tmp_path / "test.npz", x=x_test, y=y_test)
    report, result = _inspect_and_audit(tmp_path / "model.txt", tmp_path / "test.npz", tmp_path, capsys)
    assert (report["kind"], report["n_classes"], report["classes"]) == ("lightgbm", 3, None)
    assert report["accuracy"] == pytest.approx(model.score(x_test, y_test))
    assert result.subject["accuracy"] == pytest.approx(model.score(x_test, y_test))
    np.testing.assert_allclose(load_model(tmp_path / "model.txt").predict_proba(x_test), model.predict_proba(x_test),
                               atol=1e-9)
    np.testing.assert_array_equal(load_model(tmp_path / "model.txt").logits(x_test),
                                  load_model(tmp_path / "model.txt", batch_size=7).logits(x_test))


def test_a_regression_booster_is_refused(tmp_path):
    xgboost = pytest.importorskip("xgboost")
    x = np.random.default_rng(0).normal(size=(40, 3))
    xgboost.XGBRegressor(n_estimators=2).fit(x, x[:, 0]).save_model(tmp_path / "reg.json")
    with pytest.raises(InputError, match="XGBoost model's objective is 'reg:squarederror', not a classification objective"):
        load_model(tmp_path / "reg.json")


@pytest.mark.parametrize("zipmap", [True, False])
def test_skl2onnx_export_reads_as_a_classifier(zipmap, iris, tmp_path, capsys):
    """A label output and a probability output (ZipMap or tensor): classes and count from the graph, no hint needed."""
    pytest.importorskip("skl2onnx")
    import onnxruntime
    from skl2onnx import to_onnx
    from sklearn.ensemble import RandomForestClassifier

    x_train, y_train, x_test, y_test = iris
    names = np.array(["setosa", "versicolor", "virginica"])
    model = RandomForestClassifier(n_estimators=10, max_depth=3, random_state=0).fit(x_train, names[y_train])
    (tmp_path / "model.onnx").write_bytes(to_onnx(model, x_train[:1], options={"zipmap": zipmap}).SerializeToString())
    np.savez(tmp_path / "test.npz", x=x_test, y=names[y_test])
    report, result = _inspect_and_audit(tmp_path / "model.onnx", tmp_path / "test.npz", tmp_path, capsys)
    assert (report["kind"], report["n_classes"], report["classes"]) == ("onnx", 3, list(names))
    session = onnxruntime.InferenceSession(str(tmp_path / "model.onnx"))
    onnx_labels = session.run(None, {session.get_inputs()[0].name: x_test})[0]
    assert report["accuracy"] == pytest.approx(np.mean(onnx_labels == names[y_test]))  # onnxruntime's own labels
    assert report["accuracy"] == pytest.approx(model.score(x_test, names[y_test]), abs=0.03)  # float32 thresholds
    assert result.subject["accuracy"] == pytest.approx(report["accuracy"])


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["xgboost", "lightgbm"])
def test_onnxmltools_exports_read_as_classifiers(framework, cancer, tmp_path, capsys):
    pytest.importorskip("onnxmltools")
    booster = pytest.importorskip(framework)
    import onnxruntime
    from onnxmltools import convert_lightgbm, convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    x_train, y_train, x_test, y_test = cancer
    kinds = [("input", FloatTensorType([None, x_train.shape[1]]))]
    if framework == "xgboost":
        model = booster.XGBClassifier(n_estimators=10, max_depth=3).fit(x_train, y_train)
        proto = convert_xgboost(model, initial_types=kinds)
    else:
        model = booster.LGBMClassifier(n_estimators=10, num_leaves=8, verbose=-1).fit(x_train, y_train)
        proto = convert_lightgbm(model, initial_types=kinds, zipmap=True)
    (tmp_path / "model.onnx").write_bytes(proto.SerializeToString())
    np.savez(tmp_path / "test.npz", x=x_test, y=y_test)
    report, result = _inspect_and_audit(tmp_path / "model.onnx", tmp_path / "test.npz", tmp_path, capsys)
    assert (report["n_classes"], report["classes"]) == (2, [0, 1])
    session = onnxruntime.InferenceSession(str(tmp_path / "model.onnx"))
    onnx_labels = session.run(None, {"input": x_test})[0]
    assert report["accuracy"] == pytest.approx(np.mean(onnx_labels == y_test))
    assert report["accuracy"] == pytest.approx(model.score(x_test, y_test), abs=0.02)
    assert result.subject["accuracy"] == pytest.approx(report["accuracy"])
