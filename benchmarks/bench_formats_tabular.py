"""Load and first-run times of every tabular model format fitaudit reads, side by side.

For each format a small model is trained on scikit-learn's breast cancer
table (398 training rows, 171 scored, 30 features; the scikit-learn pipeline
gets a text column and 10% missing values, as a CSV holds them) and saved
the framework's own way. Per format, three numbers (the best of ``--repeats``
runs in one process, after a first warm-up that imports the libraries):

* ``load``: :func:`fitaudit.models.load_model` on the file;
* ``first run``: the first ``predict`` of the loaded model on the 171 scored
  rows (what ``inspect`` and ``audit`` do first);
* ``inspect``: :func:`fitaudit.models.inspection.inspect_model` end to end
  on the scored data (file read, labels encoded, checked against chance).

The accuracy fitaudit reports is printed beside the framework's own on the
same rows. Run: ``python benchmarks/bench_formats_tabular.py``; results in
``benchmarks/results/formats_tabular.txt``. No assertion on times: the
machine is shared, numbers vary run to run.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def _load_and_first_run(model: Path, x: Any, repeats: int) -> tuple[float, float]:
    """Best-of-``repeats`` seconds of :func:`load_model` and of the loaded model's first ``predict`` on ``x``."""
    from fitaudit.models import load_model

    loads, firsts = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        adapter = load_model(model)
        loaded = time.perf_counter()
        adapter.predict(x)
        loads.append(loaded - start)
        firsts.append(time.perf_counter() - loaded)
    return min(loads), min(firsts)


def _build(folder: Path) -> list[tuple[str, Path, Path, str | None, float]]:
    """(format, model file, data file, label column, the framework's own accuracy) of every format."""
    import lightgbm
    import pandas as pd
    import skops.io
    import xgboost
    from onnxmltools import convert_lightgbm, convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType
    from skl2onnx import to_onnx
    from sklearn.compose import ColumnTransformer
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    bundled = load_breast_cancer(as_frame=True)
    frame = bundled.frame.copy()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(frame))
    frame = frame.iloc[order].reset_index(drop=True)
    x = frame.drop(columns="target").to_numpy(np.float32)
    y = frame["target"].to_numpy()
    cut = 398
    x_train, y_train, x_test, y_test = x[:cut], y[:cut], x[cut:], y[cut:]
    np.savez(folder / "test.npz", x=x_test, y=y_test)
    rows = []
    table = frame.copy()
    table["size"] = pd.cut(table["mean area"], [0, 500, 900, 1e9], labels=["small", "medium", "large"]).astype(str)
    table.loc[rng.random(len(table)) < 0.1, "mean texture"] = np.nan
    table.iloc[:cut].to_csv(folder / "train.csv", index=False)
    table.iloc[cut:].to_csv(folder / "test.csv", index=False)
    table.iloc[cut:].to_parquet(folder / "test.parquet")
    train, test = pd.read_csv(folder / "train.csv"), pd.read_csv(folder / "test.csv")
    numeric = [c for c in train.columns if c not in ("size", "target")]
    pipeline = make_pipeline(
        ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"), ["size"]), ("numbers", "passthrough", numeric)]),
        HistGradientBoostingClassifier(max_iter=50, random_state=0),
    ).fit(train.drop(columns="target"), train["target"])
    skops.io.dump(pipeline, folder / "pipeline.skops")
    own = pipeline.score(test.drop(columns="target"), test["target"])
    rows.append(("skops pipeline, CSV (text, NaN)", folder / "pipeline.skops", folder / "test.csv", "target", own))
    rows.append(("skops pipeline, parquet", folder / "pipeline.skops", folder / "test.parquet", "target", own))
    booster = xgboost.XGBClassifier(n_estimators=50, max_depth=4).fit(x_train, y_train)
    for suffix in (".json", ".ubj"):
        booster.save_model(folder / f"xgboost{suffix}")
        rows.append((f"XGBoost {suffix}", folder / f"xgboost{suffix}", folder / "test.npz", None,
                     booster.score(x_test, y_test)))
    light = lightgbm.LGBMClassifier(n_estimators=50, num_leaves=15, verbose=-1).fit(x_train, y_train)
    light.booster_.save_model(str(folder / "lightgbm.txt"))
    rows.append(("LightGBM .txt", folder / "lightgbm.txt", folder / "test.npz", None, light.score(x_test, y_test)))
    forest = RandomForestClassifier(n_estimators=50, max_depth=6, random_state=0).fit(x_train, y_train)
    for zipmap in (True, False):
        name = f"skl2onnx forest ({'ZipMap' if zipmap else 'tensor'})"
        path = folder / f"forest_{zipmap}.onnx"
        path.write_bytes(to_onnx(forest, x_train[:1], options={"zipmap": zipmap}).SerializeToString())
        rows.append((name, path, folder / "test.npz", None, forest.score(x_test, y_test)))
    kinds = [("input", FloatTensorType([None, x.shape[1]]))]
    (folder / "xgb.onnx").write_bytes(convert_xgboost(booster, initial_types=kinds).SerializeToString())
    rows.append(("onnxmltools XGBoost", folder / "xgb.onnx", folder / "test.npz", None, booster.score(x_test, y_test)))
    (folder / "lgbm.onnx").write_bytes(convert_lightgbm(light, initial_types=kinds, zipmap=True).SerializeToString())
    rows.append(("onnxmltools LightGBM", folder / "lgbm.onnx", folder / "test.npz", None, light.score(x_test, y_test)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from fitaudit.auditing.inputs import load_data
    from fitaudit.models import load_model
    from fitaudit.models.inspection import inspect_model
    from fitaudit.models.labels import label_set

    with tempfile.TemporaryDirectory() as tmp:
        rows = _build(Path(tmp))
        lines = [f"{'format':34s} {'load ms':>8s} {'first run ms':>13s} {'inspect ms':>11s} {'fitaudit':>9s} "
                 f"{'framework':>9s}"]
        for name, model, data, label, own in rows:
            adapter = load_model(model)  # imports the format's libraries once, outside the timings
            table = load_data(str(data), "data", labels=label_set(adapter, model), label=label)
            loaded, first = _load_and_first_run(model, table.x, args.repeats)
            inspected = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                result = inspect_model(str(model), str(data), label=label)
                inspected.append(time.perf_counter() - start)
            lines.append(f"{name:34s} {loaded * 1e3:8.1f} {first * 1e3:13.1f} {min(inspected) * 1e3:11.1f} "
                         f"{result.accuracy:9.4f} {own:9.4f}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
