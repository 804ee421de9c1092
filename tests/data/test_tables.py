"""Tables as practitioners hold them (CSV, parquet, DataFrames) through inspect, audit, leakage and pmv.

The done-when of the tabular half of "models and data as practitioners hold
them": a CSV with string categoricals and NaN audits a skops
ColumnTransformer + HistGradientBoostingClassifier pipeline, and the accuracy
fitaudit reports is the one scikit-learn computes on the same rows.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.cli import main
from fitaudit.options import RunOptions

#: this module's audits run without progress bars
QUIET = RunOptions(progress=False)

pd = pytest.importorskip("pandas")
skops_io = pytest.importorskip("skops.io")

LABEL = "diagnosis"


def _frame() -> pd.DataFrame:
    """scikit-learn's breast cancer table (six columns), a text column binned from the area, 10% NaN, string classes."""
    from sklearn.datasets import load_breast_cancer

    bundled = load_breast_cancer(as_frame=True).frame
    frame = bundled.iloc[:, :6].copy()
    rng = np.random.default_rng(0)
    frame["size"] = pd.cut(frame["mean area"], [0, 500, 900, 1e9], labels=["small", "medium", "large"]).astype(str)
    frame.loc[rng.random(len(frame)) < 0.1, "mean texture"] = np.nan
    frame.loc[rng.random(len(frame)) < 0.05, "size"] = np.nan
    frame[LABEL] = np.where(bundled["target"] == 1, "benign", "malignant")
    return frame


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """train.csv / test.csv (and parquet copies) and a skops ColumnTransformer + HistGradientBoosting pipeline."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    folder = tmp_path_factory.mktemp("tables")
    frame = _frame()
    frame.iloc[:400].to_csv(folder / "train.csv", index=False)
    frame.iloc[400:].to_csv(folder / "test.csv", index=False)
    train, test = pd.read_csv(folder / "train.csv"), pd.read_csv(folder / "test.csv")  # as a user's script reads them
    numeric = [c for c in train.columns if c not in ("size", LABEL)]
    pipeline = make_pipeline(
        ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"), ["size"]), ("numbers", "passthrough", numeric)]),
        HistGradientBoostingClassifier(max_iter=20, random_state=0),
    ).fit(train.drop(columns=LABEL), train[LABEL])
    skops_io.dump(pipeline, folder / "pipeline.skops")
    return folder, pipeline, train, test


@pytest.mark.slow
def test_csv_with_text_and_nan_audits_a_skops_column_transformer_pipeline(tables, tmp_path, capsys):
    folder, pipeline, train, test = tables
    expected = pipeline.score(test.drop(columns=LABEL), test[LABEL])
    model, data, train_data = (str(folder / f) for f in ("pipeline.skops", "test.csv", "train.csv"))
    assert main(["inspect", "--model", model, "--data", data, "--train-data", train_data, "--label", LABEL,
                 "--json", "--quiet"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["accuracy"] == pytest.approx(expected) and report["classes"] == ["benign", "malignant"]
    assert [p["id"] for p in report["first_questions"]] == ["accuracy", "baseline", "calibration", "slices", "labels",
                                                            "leakage", "agreement"]
    assert main(["audit", "--model", model, "--data", data, "--train-data", train_data, "--label", LABEL,
                 "--out", str(tmp_path / "audit"), "--instruments", "pmv", "--quiet", "--json"]) == 0
    audited = json.loads(capsys.readouterr().out)
    parts = {p["id"]: p for p in audited["parts"]}
    assert audited["subject"]["accuracy"] == pytest.approx(expected)
    assert parts["accuracy"]["numbers"]["accuracy"] == pytest.approx(expected)
    assert parts["leakage"]["verdict"]["status"] != "skipped" and parts["pmv"]["verdict"]["status"] != "skipped"
    assert audited["subject"]["data"]["columns"] == [c for c in test.columns if c != LABEL]


@pytest.mark.slow
def test_parquet_and_dataframes_give_the_same_accuracy(tables, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    from fitaudit import audit
    from fitaudit.models.inspection import inspect_model

    folder, pipeline, train, test = tables
    expected = pipeline.score(test.drop(columns=LABEL), test[LABEL])
    test.to_parquet(tmp_path / "test.parquet")
    assert main(["inspect", "--model", str(folder / "pipeline.skops"), "--data", str(tmp_path / "test.parquet"),
                 "--label", LABEL, "--json", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] == pytest.approx(expected)
    assert inspect_model(str(folder / "pipeline.skops"), test, label=LABEL).accuracy == pytest.approx(expected)
    model = str(folder / "pipeline.skops")  # (an in-memory pipeline cannot be fingerprinted yet: issue 32, item 6)
    result = audit(model, (test.drop(columns=LABEL), test[LABEL].to_numpy()), train_data=train, label=LABEL,
                   instruments=["pmv"], options=QUIET)
    assert result.subject["accuracy"] == pytest.approx(expected)
    assert result.part("pmv").status != "skipped"
    with pytest.raises(InputError, match=r"`label` is needed with a table \(`data`\): the name of the column"):
        audit(model, test, options=QUIET)


@pytest.mark.slow
def test_features_select_and_order_the_columns(tables, capsys):
    from sklearn.linear_model import LogisticRegression

    folder, _, train, test = tables
    columns = ["mean area", "mean radius"]
    model = LogisticRegression(max_iter=2000).fit(train[columns].to_numpy(), train[LABEL])  # fitted on arrays
    skops_io.dump(model, folder / "two.skops")
    assert main(["inspect", "--model", str(folder / "two.skops"), "--data", str(folder / "test.csv"), "--label",
                 LABEL, "--features", *columns, "--json", "--quiet"]) == 0
    expected = model.score(test[columns].to_numpy(), test[LABEL])
    assert json.loads(capsys.readouterr().out)["accuracy"] == pytest.approx(expected)
    assert main(["inspect", "--model", str(folder / "two.skops"), "--data", str(folder / "test.csv"), "--label",
                 LABEL, "--features", "mean area", "no such"]) == 2
    assert "`--features`: `--data` has no column(s) 'no such'; its columns are" in capsys.readouterr().err
    assert main(["inspect", "--model", str(folder / "two.skops"), "--data", str(folder / "test.csv")]) == 2
    assert "`--label` is needed with a table (`--data`)" in capsys.readouterr().err
    np.savez(folder / "arrays.npz", x=test[columns].to_numpy(), y=test[LABEL].to_numpy())
    for command in (["inspect"], ["audit", "--out", str(folder / "out")], ["leakage", "--train-data",
                                                                         str(folder / "arrays.npz")]):
        assert main([*command, "--model", str(folder / "two.skops"), "--data", str(folder / "arrays.npz"),
                     "--features", *columns]) == 2
        assert "`--features` goes with a table" in capsys.readouterr().err


@pytest.mark.slow
def test_a_header_that_repeats_a_column_name_is_named(tables, tmp_path, capsys):
    """Issue 46: a repeated header name said "missing 'mean texture'; not taken by it 'mean radius.1'", a name
    pandas made up; the header, the file and its option are named instead."""
    from fitaudit import audit
    from fitaudit.data.tables import read_table

    folder, _, _, test = tables
    lines = (folder / "test.csv").read_text().splitlines(keepends=True)
    assert lines[0].startswith("mean radius,mean texture,")
    (tmp_path / "repeats.csv").write_text(lines[0].replace("mean texture", "mean radius", 1) + "".join(lines[1:]))
    repeats = str(tmp_path / "repeats.csv")
    said = "repeats the column name 'mean radius' (columns 1 and 2); each column needs its own name."
    with pytest.raises(InputError, match=r"^`--data`: .*repeats\.csv': its header repeats the column name"):
        read_table(repeats, name="--data")
    model = str(folder / "pipeline.skops")
    for argv, option in ((["inspect", "--data", repeats], "--data"),
                         (["leakage", "--data", str(folder / "test.csv"), "--train-data", repeats], "--train-data")):
        assert main([*argv, "--model", model, "--label", LABEL]) == 2
        err = capsys.readouterr().err
        assert f"`{option}`: {repeats!r}: its header {said}" in err, err
        assert ".1" not in err
    frame = test.set_axis(["mean radius", "mean radius", *test.columns[2:]], axis=1)
    with pytest.raises(InputError, match=r"^`data` repeats the column name 'mean radius' \(columns 1 and 2\)"):
        audit(model, frame, label=LABEL, options=QUIET)
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    parquet.write_table(pyarrow.table([test[c] for c in test.columns], names=list(frame.columns)),
                        tmp_path / "repeats.parquet")
    with pytest.raises(InputError, match=r"repeats\.parquet' repeats the column name 'mean radius'"):
        read_table(tmp_path / "repeats.parquet")


def test_missing_values_meet_a_one_line_hint_where_the_model_refuses_them(tables, capsys):
    from sklearn.linear_model import LogisticRegression

    folder, _, train, _ = tables
    numeric = [c for c in train.columns if c not in ("size", LABEL)]
    rows = train.dropna(subset=numeric)
    skops_io.dump(LogisticRegression(max_iter=2000).fit(rows[numeric], rows[LABEL]), folder / "plain.skops")
    assert main(["inspect", "--model", str(folder / "plain.skops"), "--data", str(folder / "test.csv"), "--label",
                 LABEL, "--features", *numeric]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "impute first" in err and "Traceback" not in err


@pytest.mark.slow
def test_leakage_on_csv_finds_copied_rows_with_text_and_nan(tables, tmp_path, capsys):
    folder, _, train, test = tables
    copied = pd.concat([train, test.iloc[:5]], ignore_index=True)  # five scored rows copied into training
    copied.to_csv(tmp_path / "train.csv", index=False)
    assert bool(test.iloc[:5].isna().any(axis=None))  # the copies hold missing values
    assert main(["leakage", "--data", str(folder / "test.csv"), "--train-data", str(tmp_path / "train.csv"),
                 "--label", LABEL, "--json", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(range(5)) <= set(result["exact_scored"])
    assert main(["leakage", "--data", str(folder / "test.csv"), "--train-data", str(tmp_path / "train.csv"),
                 "--label", LABEL, "--model", str(folder / "pipeline.skops"), "--json", "--quiet"]) == 0


@pytest.mark.slow
def test_pmv_takes_a_table(tables, capsys):
    folder, _, _, _ = tables
    assert main(["pmv", "--data", str(folder / "train.csv"), "--label", LABEL, "--model",
                 str(folder / "pipeline.skops"), "--n-repeats", "1", "--rates", "0.1,0.3,0.5", "--quiet",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["score"] >= 0


def test_comparable_features_one_space():
    from fitaudit.data.tables import comparable_features

    scored = pd.DataFrame({"a": [1.0, np.nan], "b": ["x", None]})
    train = pd.DataFrame({"a": [3.0, 5.0, np.nan], "b": ["y", "x", "x"]})
    left, right = comparable_features(scored, train)
    # a (NaN -> the training median 4), a-missing, b one-hot over {missing, x, y}
    np.testing.assert_array_equal(left, [[1, 0, 0, 1, 0], [4, 1, 1, 0, 0]])
    np.testing.assert_array_equal(right, [[3, 0, 0, 0, 1], [5, 0, 0, 1, 0], [4, 1, 0, 1, 0]])
    with pytest.raises(InputError, match="must have the same features"):
        comparable_features(scored, train.rename(columns={"b": "c"}))


def test_tabular_leakage_takes_tables_in_the_api(tables):
    from fitaudit.leakage import tabular_leakage

    _, _, train, test = tables
    features = [c for c in test.columns if c != LABEL]
    copied = pd.concat([train[features], test[features].iloc[:5]], ignore_index=True)
    result = tabular_leakage(test[features], copied)
    assert set(range(5)) <= set(result.exact_scored.tolist())
    with pytest.raises(InputError, match="`x_train` has columns"):
        tabular_leakage(test[features], copied.drop(columns="size"))


class _ArrowTable:
    """Another library's table as far as fitaudit can see: only the Arrow PyCapsule stream."""

    def __init__(self, frame):
        import pyarrow

        self._table = pyarrow.Table.from_pandas(frame, preserve_index=False)

    def __arrow_c_stream__(self, requested_schema=None):
        return self._table.__arrow_c_stream__(requested_schema)


class _InterchangeTable:
    """Another library's table offering only the dataframe interchange protocol."""

    def __init__(self, frame):
        self._frame = frame

    def __dataframe__(self, nan_as_null=False, allow_copy=True):
        return self._frame.__dataframe__(nan_as_null=nan_as_null, allow_copy=allow_copy)


@pytest.mark.parametrize("wrap", [_ArrowTable, _InterchangeTable])
def test_other_libraries_tables_are_read(wrap, tables):
    pytest.importorskip("pyarrow")
    from fitaudit.models.inspection import inspect_model

    folder, pipeline, _, test = tables
    expected = pipeline.score(test.drop(columns=LABEL), test[LABEL])
    result = inspect_model(str(folder / "pipeline.skops"), wrap(test), label=LABEL)
    assert result.accuracy == pytest.approx(expected)


def _with_cell(frame: pd.DataFrame, column: str, row: int, value: object) -> pd.DataFrame:
    changed = frame.astype({column: object})
    changed.loc[changed.index[row], column] = value
    return changed


@pytest.mark.slow
def test_a_cell_a_model_cannot_read_as_a_number_is_named(tables, tmp_path, capsys):
    """Issue 46: the text `abc` in a numeric column, or a 20 MB digit string, gave scikit-learn's raw "could not
    convert string to float" / "contains infinity" with no column named; each names its column, row and value."""
    from sklearn.linear_model import LogisticRegression

    from fitaudit import audit
    from fitaudit.data.tables import numeric_matrix
    from fitaudit.models import as_classifier
    from fitaudit.pmv import pmv_score

    folder, _, train, test = tables
    said = "the 301st row of column 'mean texture' holds the text 'abc', and the sklearn model reads it as a number"
    _with_cell(train, "mean texture", 300, "abc").to_csv(tmp_path / "abc.csv", index=False)  # in the second batch
    model, abc = str(folder / "pipeline.skops"), str(tmp_path / "abc.csv")
    for argv in (["inspect"], ["audit", "--out", str(tmp_path / "out"), "--quiet"]):
        assert main([*argv, "--model", model, "--data", abc, "--label", LABEL]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and err.startswith("fitaudit: error: "), err
        assert f"`--data['x']`: {said} (ValueError: could not convert string to float: 'abc'): write it" in err, err
    with pytest.raises(InputError, match=rf"^the model does not accept `data`: `x`: {said} "):
        audit(model, abc, label=LABEL, options=QUIET)
    numeric = [c for c in train.columns if c not in ("size", LABEL)]
    rows = train.dropna()
    plain = as_classifier(LogisticRegression(max_iter=2000).fit(rows[numeric].to_numpy(), rows[LABEL]))
    na = _with_cell(test[numeric].dropna(), "mean area", 2, "n/a")
    with pytest.raises(InputError, match=r"^`x`: the 3rd row of column 'mean area' holds the text 'n/a', and the "
                                         r"sklearn model reads it as a number \(ValueError: could not convert"):
        plain.predict(na)  # fitted on arrays: it is given an array, its cells named from the table
    with pytest.raises(InputError, match=r"^`x`: the 3rd row of column 'mean area' holds the text 'n/a', and this "
                                         r"xgboost model reads it as a number: write it as a number, or remove"):
        numeric_matrix(na, "x", "this xgboost model")  # what a model that takes only numbers is given
    with pytest.raises(InputError, match=r"^`x`: column\(s\) 'size' hold text or categories"):
        numeric_matrix(test[["size"]], "x", "this xgboost model")  # a column of categories is no stray cell
    with pytest.raises(InputError, match=r"^`X`: the 2nd row of column 'mean area' holds the text 'abc', and the "
                                         r"learner LogisticRegression reads it as a number"):
        pmv_score(LogisticRegression(), _with_cell(rows[numeric], "mean area", 1, "abc"), rows[LABEL], progress=False)
    assert main(["pmv", "--estimator", "logistic_regression", "--data", abc, "--label", LABEL, "--features",
                 "mean radius", "mean texture", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "`--data['x']`: the 301st row of column 'mean texture' holds the text 'abc', and the learner " in err, err
    assert "could not be trained with these parameters" not in err

    digits = "9" * 20_000_000
    big = _with_cell(test, "mean perimeter", 7, digits)
    with pytest.raises(InputError, match=r"the 8th row of column 'mean perimeter' holds '9{24}\.\.\.' \(20,000,000 "
                                         r"characters\), a number too large for a float \(it reads as infinity\)") as hit:
        plain.predict(big[numeric].fillna(0.0))
    assert len(str(hit.value)) < 500
    big.to_csv(tmp_path / "big.csv", index=False)  # pandas reads the cell as inf
    assert main(["inspect", "--model", model, "--data", str(tmp_path / "big.csv"), "--label", LABEL]) == 2
    err = capsys.readouterr().err
    assert "`--data`: the 8th row of column 'mean perimeter' holds an infinite value ('inf', or a number beyond" in err
    assert len(err) < 500


def test_text_in_one_file_only_is_shown_by_its_cell(tables, tmp_path, capsys):
    """The leakage search's example of a column of text in one table was its first cell, itself a number."""
    folder, _, _, test = tables
    _with_cell(test, "mean texture", 4, "abc").to_csv(tmp_path / "abc.csv", index=False)
    assert main(["leakage", "--data", str(tmp_path / "abc.csv"), "--train-data", str(folder / "train.csv"),
                 "--label", LABEL]) == 2
    err = capsys.readouterr().err
    assert "(its 5th row in `--data` holds 'abc')" in err, err


def test_cells_are_named_by_ordinal_row_and_the_column_of_numbers_first():
    from fitaudit.data.table_cells import (
        cell_holding,
        infinite_cell,
        row_name,
        shown_text,
        unreadable_cell,
    )

    assert [row_name(n - 1) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111, 112, 1001)] == [
        "1st row", "2nd row", "3rd row", "4th row", "11th row", "12th row", "13th row", "21st row", "22nd row",
        "23rd row", "101st row", "111th row", "112th row", "1,001st row"]
    assert shown_text("x" * 24) == repr("x" * 24)
    assert shown_text("x" * 25) == repr("x" * 24 + "...") + " (25 characters)"
    frame = pd.DataFrame({"name": ["a", "abc", "c"], "b": [1.0, np.inf, -np.inf], "d": ["1", " 2 ", "abc"],
                          "e": ["1", "1e400", "2"]})
    assert cell_holding(frame, "abc") == ("d", 2, "abc", "text")  # 'name' is a column of text, 'd' of numbers
    assert infinite_cell(frame) == ("b", 1, 2)
    assert unreadable_cell(frame) == ("d", 2, "abc", "text")  # ' 2 ' is a number, as float reads it
    assert unreadable_cell(frame, problems=("infinite",)) == ("e", 1, "1e400", "infinite")
    assert unreadable_cell(frame[["name"]]) is None
    assert unreadable_cell(frame[["name"]], among_numbers=False) == ("name", 0, "a", "text")
