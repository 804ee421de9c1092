"""ONNX graphs with one input per table column (skl2onnx's ``initial_types`` for a ``ColumnTransformer``,
issue 37): the table's columns are matched to the inputs by name, whatever their order in the file, each fed in
the type its input declares; missing and extra columns are refused, each named; a one-input graph still takes
the columns by position and says so."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.cli import main

pytest.importorskip("skl2onnx")

#: the penguins' columns as the graph's inputs: three float, one int64, one string
_NUMBERS = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm"]


def _one_line_error(err: str, *fragments: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fitaudit: error: ") and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def penguins(tmp_path_factory):
    """A scikit-learn pipeline on palmerpenguins exported with one input per column, its test table written as
    CSV (and with two columns swapped), and scikit-learn's own probabilities on the test rows."""
    from palmerpenguins import load_penguins
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, Int64TensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    table = load_penguins().dropna()[[*_NUMBERS, "body_mass_g", "island", "species"]]
    table = table.astype({"body_mass_g": np.int64}).sample(frac=1.0, random_state=0).reset_index(drop=True)
    train, test = table.iloc[:160], table.iloc[160:]
    features = [*_NUMBERS, "body_mass_g", "island"]
    encode = ColumnTransformer([("numbers", StandardScaler(), [*_NUMBERS, "body_mass_g"]),
                                ("island", OneHotEncoder(), ["island"])])
    pipeline = Pipeline([("encode", encode), ("fit", LogisticRegression(C=0.05, max_iter=500))])
    pipeline.fit(train[features], train["species"])
    types = [(n, FloatTensorType([None, 1])) for n in _NUMBERS]
    types += [("body_mass_g", Int64TensorType([None, 1])), ("island", StringTensorType([None, 1]))]
    folder = tmp_path_factory.mktemp("penguins")
    (folder / "model.onnx").write_bytes(convert_sklearn(pipeline, initial_types=types).SerializeToString())
    test.to_csv(folder / "test.csv", index=False)
    swapped = ["bill_depth_mm", "bill_length_mm", "flipper_length_mm", "island", "body_mass_g", "species"]
    test[swapped].to_csv(folder / "swapped.csv", index=False)
    return folder, test, pipeline.predict_proba(test[features])


def _accuracy(capsys, *args: str) -> float:
    assert main(["inspect", *args, "--label", "species", "--json"]) == 0
    import json

    return json.loads(capsys.readouterr().out)["accuracy"]


def test_swapped_columns_give_the_same_accuracy(penguins, capsys):
    folder, test, expected = penguins
    model = str(folder / "model.onnx")
    ordered = _accuracy(capsys, "--model", model, "--data", str(folder / "test.csv"))
    swapped = _accuracy(capsys, "--model", model, "--data", str(folder / "swapped.csv"))
    reference = np.mean(np.array(["Adelie", "Chinstrap", "Gentoo"])[expected.argmax(axis=1)] == test["species"])
    assert ordered == swapped == pytest.approx(reference) and reference > 0.9


def test_the_inputs_are_fed_in_their_types_by_name(penguins):
    from fitaudit.models import load_model
    from fitaudit.models.io import read_model_metadata

    folder, test, expected = penguins
    model = load_model(folder / "model.onnx")
    assert model.feature_names == [*_NUMBERS, "body_mass_g", "island"]
    assert model.input_shape is None and read_model_metadata(folder / "model.onnx").input_shape is None
    features = test.drop(columns="species")
    reordered = features[["island", "body_mass_g", *reversed(_NUMBERS)]]
    np.testing.assert_allclose(model.predict_proba(reordered), expected, atol=1e-5)  # float32 inside the graph
    np.testing.assert_allclose(pickle.loads(pickle.dumps(model)).logits(reordered), model.logits(features))


def test_a_missing_column_is_refused_naming_it(penguins, tmp_path, capsys):
    folder, test, _ = penguins
    test.drop(columns="bill_depth_mm").assign(year=2009).to_csv(tmp_path / "missing.csv", index=False)
    assert main(["inspect", "--model", str(folder / "model.onnx"), "--data", str(tmp_path / "missing.csv"),
                 "--label", "species"]) == 2
    _one_line_error(capsys.readouterr().err, "missing 'bill_depth_mm'", "not taken by it 'year'")


@pytest.mark.parametrize(("column", "values", "said"), [
    ("bill_length_mm", "long", "the 1st row of column 'bill_length_mm' holds the text 'long', and the onnx model's "
                               "input 'bill_length_mm' (tensor(float)) reads it as a number: write it as a number"),
    ("body_mass_g", 3750.5, "column 'body_mass_g' holds numbers with a decimal part"),
    ("island", None, "column 'island' has missing values"),
])
def test_a_column_that_does_not_fit_its_input_is_named(penguins, column, values, said):
    from fitaudit.models import load_model

    folder, test, _ = penguins
    features = test.drop(columns="species")
    features = features.astype({column: object if isinstance(values, str) else features[column].dtype})
    if isinstance(values, float):
        features = features.astype({column: np.float64})
    features.loc[features.index[0], column] = values
    with pytest.raises(InputError, match=f"^`x`: {said}".replace("(", r"\(").replace(")", r"\)")):
        load_model(folder / "model.onnx").logits(features)


def test_an_array_goes_to_the_inputs_by_position_with_a_note(penguins, capsys):
    from fitaudit.models import load_model

    folder, test, expected = penguins
    model = load_model(folder / "model.onnx")
    array = test.drop(columns="species").to_numpy(dtype=object)
    np.testing.assert_allclose(model.predict_proba(array), expected, atol=1e-5)
    model.logits(array)
    err = capsys.readouterr().err
    assert err.count("fitaudit: note:") == 1 and "by position (bill_length_mm, bill_depth_mm" in err
    with pytest.raises(InputError, match=r"`x` must be a table with the columns 'bill_length_mm', .* got an array "
                                         r"of shape \(3, 4\)"):
        model.logits(array[:3, :4])


def test_an_input_of_several_values_per_row_is_refused(tmp_path, capsys):
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    pandas = pytest.importorskip("pandas")
    x = pandas.DataFrame(np.random.default_rng(0).normal(size=(40, 3)), columns=["a", "b", "c"])
    encode = ColumnTransformer([("ab", StandardScaler(), [0, 1]), ("c", StandardScaler(), [2])])
    pipeline = Pipeline([("encode", encode), ("fit", LogisticRegression())]).fit(x.to_numpy(), x["a"] > 0)
    types = [("ab", FloatTensorType([None, 2])), ("c", FloatTensorType([None, 1]))]
    (tmp_path / "m.onnx").write_bytes(convert_sklearn(pipeline, initial_types=types).SerializeToString())
    assert main(["inspect", "--model", str(tmp_path / "m.onnx")]) == 2
    _one_line_error(capsys.readouterr().err, "input 'ab' is tensor(float) of shape [None, 2]", "one table column")


def test_a_one_input_graph_takes_the_columns_by_position_with_a_note(penguins, tmp_path, capsys):
    from skl2onnx import to_onnx
    from sklearn.linear_model import LogisticRegression

    folder, test, _ = penguins
    x = test[_NUMBERS].to_numpy(dtype=np.float32)
    model = LogisticRegression(max_iter=5000).fit(x, test["species"])
    (tmp_path / "one.onnx").write_bytes(to_onnx(model, x[:1], options={"zipmap": False}).SerializeToString())
    test[[*_NUMBERS, "species"]].to_csv(tmp_path / "test.csv", index=False)
    assert main(["inspect", "--model", str(tmp_path / "one.onnx"), "--data", str(tmp_path / "test.csv"),
                 "--label", "species"]) == 0
    err = capsys.readouterr().err
    assert err.count("fitaudit: note:") == 1 and "records no feature names" in err and "by position" in err


def test_the_audit_scores_the_swapped_table_by_name(penguins, tmp_path, capsys):
    import json

    folder, test, expected = penguins
    reference = np.mean(np.array(["Adelie", "Chinstrap", "Gentoo"])[expected.argmax(axis=1)] == test["species"])
    argv = ["audit", "--model", str(folder / "model.onnx"), "--data", str(folder / "swapped.csv"), "--label",
            "species", "--out", str(tmp_path / "out"), "--quiet", "--json"]
    assert main(argv) == 0, capsys.readouterr().err
    accuracy = next(p for p in json.loads(capsys.readouterr().out)["parts"] if p["id"] == "accuracy")
    assert accuracy["verdict"]["numbers"]["accuracy"] == pytest.approx(reference)
