"""The cases of issue 37 (items 2, 3 and 8), swept: a malformed native model file, a size bomb or an ordinary
mistake ends in one line naming the file and what is wrong (exit code 2), never in a native crash (exit 134 or
139, checked in a child process) or a silent wrong number. The bombs are generated here, small, against
lowered bounds (``--limit``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.cli import main


def assert_one_line_error(err: str, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fitaudit: error: ") and "Traceback" not in err, lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def _lightgbm_text(tmp_path: Path) -> str:
    lightgbm = pytest.importorskip("lightgbm")
    x = np.random.default_rng(0).normal(size=(120, 3))
    booster = lightgbm.train({"objective": "binary", "verbose": -1, "num_leaves": 4},
                             lightgbm.Dataset(x, (x[:, 0] > 0).astype(int)), num_boost_round=3)
    return str(booster.model_to_string())


def _edits(text: str) -> dict[str, str]:
    """The malformed LightGBM files of the issue, each of which crashed LightGBM's reader."""
    first = re.search(r"tree_sizes=(\d+)", text)
    assert first is not None
    leaf = re.search(r"leaf_value=(\S+) ", text)
    assert leaf is not None
    dropped = text[:leaf.start(1)] + text[leaf.end(0):]  # one leaf value fewer, tree_sizes kept consistent
    size = int(first.group(1)) - (leaf.end(0) - leaf.start(1))
    return {
        "truncated": text[: len(text) * 3 // 4],
        "tree_sizes": text.replace(f"tree_sizes={first.group(1)}", f"tree_sizes={int(first.group(1)) + 1000}", 1),
        "leaf": dropped.replace(f"tree_sizes={first.group(1)}", f"tree_sizes={size}", 1),
        "num_class": text.replace("num_class=1", "num_class=2000000000", 1),
    }


_CHILD = """
import sys
from fitaudit.cli import main
sys.exit(main(["inspect", "--model", sys.argv[1]]))
"""


@pytest.mark.parametrize("edit", ["truncated", "tree_sizes", "leaf", "num_class"])
def test_a_malformed_lightgbm_file_is_refused_before_lightgbm_reads_it(tmp_path, edit, capsys):
    from fitaudit.models import load_model

    path = tmp_path / "model.txt"
    path.write_text(_edits(_lightgbm_text(tmp_path))[edit])
    with pytest.raises(InputError, match=r"`--model`: .*model.txt.* not a well-formed LightGBM model file"):
        load_model(path, name="--model")
    assert main(["inspect", "--model", str(path)]) == 2
    captured = capsys.readouterr()
    assert_one_line_error(captured.err, "`--model`", "LightGBM")
    assert "[LightGBM]" not in captured.out + captured.err


@pytest.mark.slow
def test_the_malformed_files_did_not_crash_a_process(tmp_path):
    """One child process for the worst case (a truncated file, which segfaulted): exit 2, not 139."""
    path = tmp_path / "model.txt"
    path.write_text(_edits(_lightgbm_text(tmp_path))["truncated"])
    done = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert_one_line_error(done.stderr, "LightGBM")


def test_a_good_lightgbm_file_still_loads(tmp_path):
    from fitaudit.models import load_model

    path = tmp_path / "model.txt"
    path.write_text(_lightgbm_text(tmp_path))
    assert load_model(path).n_classes == 2


@pytest.mark.parametrize("suffix", [".json", ".ubj"])
def test_an_xgboost_file_nested_too_deep_is_refused(tmp_path, suffix, capsys):
    pytest.importorskip("xgboost")
    path = tmp_path / f"deep{suffix}"
    depth = 200_000
    if suffix == ".json":
        path.write_bytes(b'{"learner":' + b'{"a":' * depth + b"1" + b"}" * depth + b"}")
    else:
        path.write_bytes(b"{U\x07learner" + b"[" * depth + b"]" * depth + b"}")
    assert main(["inspect", "--model", str(path)]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--model`", "nests more than 64 levels")


def test_good_xgboost_files_pass_the_depth_check(tmp_path):
    xgboost = pytest.importorskip("xgboost")
    from fitaudit.models import load_model

    x = np.random.default_rng(0).normal(size=(90, 3))
    model = xgboost.XGBClassifier(n_estimators=3, max_depth=2).fit(x, np.arange(90) % 3)
    for suffix in (".json", ".ubj"):
        model.save_model(tmp_path / f"m{suffix}")
        assert load_model(tmp_path / f"m{suffix}").n_classes == 3


# ----------------------------------------------------------------------------- item 3: bombs
def test_a_csv_with_too_many_header_columns_is_refused_from_its_header(tmp_path):
    from fitaudit.data.limits import using_limits
    from fitaudit.data.tables import read_table

    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(500)) + "\n" + ",".join("1" * 500) + "\n")
    with using_limits(table_columns=2), pytest.raises(InputError, match=r"header line is longer than 512 bytes"):
        read_table(path, name="--data")
    with using_limits(table_columns=400), pytest.raises(InputError, match=r"500 is more than the 400.*table-columns"):
        read_table(path, name="--data")
    assert read_table(path).shape == (1, 500)


def test_a_parquet_file_is_bounded_by_its_metadata(tmp_path, capsys):
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    from fitaudit.data.limits import using_limits
    from fitaudit.data.tables import read_table

    path = tmp_path / "long.parquet"
    parquet.write_table(pyarrow.table({"a": np.zeros(5000), "label": np.zeros(5000, dtype=np.int64)}), path,
                        compression="zstd", row_group_size=5000)
    assert path.stat().st_size < 5000
    with using_limits(table_rows=1000), pytest.raises(InputError, match=r"more rows .* 5,000 is more than the 1,000"):
        read_table(path, name="--data")
    with using_limits(table_bytes=10_000), pytest.raises(InputError, match=r"once decoded .* 80,000 is more than the 10,000"):
        read_table(path, name="--data")
    argv = ["pmv", "--estimator", "logistic_regression", "--data", str(path), "--label", "label", "--limit",
            "table-rows=1000", "--quiet"]
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, "`--data`", "--limit table-rows=5000")


def test_a_csv_longer_than_the_row_bound_is_refused(tmp_path):
    from fitaudit.data.limits import using_limits
    from fitaudit.data.tables import read_table

    path = tmp_path / "long.csv"
    path.write_text("a,label\n" + "1,0\n" * 50)
    with using_limits(table_rows=20), pytest.raises(InputError, match=r"more rows than allowed"):
        read_table(path, name="--data")
    assert len(read_table(path)) == 50


def test_the_row_bound_names_the_rows_there_are(tmp_path, capsys):
    """Issue 46: "11 is more than the 10 ... raise it with `--limit table-rows=11`", one row at a time; the
    message counts the rows (a quoted newline is no row) so that the limit it suggests reads the file."""
    from fitaudit.data.limits import using_limits
    from fitaudit.data.tables import read_table

    path = tmp_path / "long.csv"
    path.write_text('a,note,label\n' + '1,"two\nlines",0\n' * 8 + "1,x,1\n" * 220)
    with using_limits(table_rows=10), pytest.raises(InputError, match=r": 228 is more than the 10 fitaudit reads "
                                                                      r"\(raise it with `--limit table-rows=228`"):
        read_table(path, name="--data")
    with using_limits(table_rows=228):
        assert len(read_table(path)) == 228
    argv = ["pmv", "--estimator", "logistic_regression", "--data", str(path), "--label", "label", "--limit",
            "table-rows=10", "--quiet"]
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, "`--data`", "228 is more than the 10", "table-rows=228`")


def test_a_limit_option_must_be_a_known_bound(capsys):
    assert main(["pmv", "--data", "x.csv", "--limit", "rows=5"]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--limit`", "table-rows")


def test_an_image_with_too_many_pixels_is_refused_from_its_header(tmp_path):
    from PIL import Image

    from fitaudit.data.decode import load_image
    from fitaudit.data.image_files import image_problem
    from fitaudit.data.limits import using_limits

    path = tmp_path / "big.png"
    Image.new("RGB", (120, 100)).save(path)
    with using_limits(image_pixels=10_000):
        with pytest.raises(InputError, match=r"120 x 100 pixels, more than the 10,000 .*image-pixels=12000"):
            load_image(path)
        assert "120 x 100 pixels" in (image_problem(path) or "")
    assert load_image(path).size == (120, 100)


# ----------------------------------------------------------------------------- item 8: a semicolon CSV
def test_a_semicolon_csv_with_decimal_commas_is_read_as_numbers(tmp_path):
    from fitaudit.data.tables import read_table

    path = tmp_path / "eu.csv"
    path.write_text("a;b;label\n1,5;2;x\n-0,25;3;y\n", encoding="utf-8")
    frame = read_table(path)
    assert list(frame.columns) == ["a", "b", "label"]
    np.testing.assert_allclose(frame["a"].to_numpy(), [1.5, -0.25])
    assert frame["label"].tolist() == ["x", "y"]


def test_an_unrelated_file_in_a_model_folder_is_not_fingerprinted(tmp_path):
    """A sparse 8 GB file beside a torch model's config.json and weights: the fingerprint reads only the model's
    files (it is the same as without it), so it neither takes minutes nor changes when the data set does."""
    pytest.importorskip("torch")
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture
    from fitaudit.models.fingerprint import model_fingerprint, run_digest

    config = {"architecture": "mlp", "kwargs": {"in_features": 4, "hidden_sizes": [], "n_classes": 2}}
    folder = save_torch_model(build_architecture(config), config, tmp_path / "model")
    before, run_before = model_fingerprint(folder), run_digest(folder)
    with open(folder / "train_data.bin", "wb") as handle:
        handle.truncate(8 * 2**30)
    assert model_fingerprint(folder) == before and run_digest(folder) == run_before
    (folder / "config.json").write_text((folder / "config.json").read_text() + " ")
    assert model_fingerprint(folder) != before  # the model's own files still count


# ----------------------------------------------------------------------------- item 6: the NaN rule
def _nan_table() -> tuple[object, np.ndarray]:
    pandas = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    x = pandas.DataFrame({"a": rng.normal(size=60), "b": rng.normal(size=60)})
    x.loc[::7, "a"] = np.nan
    return x, (np.arange(60) % 2)


@pytest.mark.parametrize("head", ["hgb", "logistic"])
def test_the_standard_nan_pipeline_is_accepted_as_a_whole(head):
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from fitaudit.pmv._engine import check_problem

    x, y = _nan_table()
    prepare = ColumnTransformer([("num", SimpleImputer(), ["a"]), ("cat", OneHotEncoder(), ["b"])])
    model = HistGradientBoostingClassifier() if head == "hgb" else LogisticRegression()
    check_problem(make_pipeline(prepare, model), x, y)  # refused before: only the first step's tag was read
    with pytest.raises(InputError, match="impute them first"):  # a scaler passes NaN on to the regression
        check_problem(make_pipeline(StandardScaler(), LogisticRegression()), x, y)
    with pytest.raises(InputError, match="impute them first"):  # a branch passes NaN through
        check_problem(make_pipeline(ColumnTransformer([("a", "passthrough", ["a"])]), LogisticRegression()), x, y)


def test_no_impute_hint_for_a_model_that_takes_missing_values():
    from fitaudit.models.base import _model_error

    x, _ = _nan_table()
    failure = RuntimeError("feature_names mismatch")
    assert "impute first" in str(_model_error(failure, "sklearn", x))
    assert "impute first" not in str(_model_error(failure, "xgboost", x, takes_missing=True))


def test_a_thousands_separator_column_is_named_as_such():
    pandas = pytest.importorskip("pandas")
    from fitaudit.data.tables import numeric_matrix

    frame = pandas.DataFrame({"income": ["1,234", "56", None], "age": [1.0, 2.0, 3.0]})
    with pytest.raises(InputError, match=r"'income' hold text: numbers written with thousands separators"):
        numeric_matrix(frame)
    with pytest.raises(InputError, match="thousands separators") as caught:
        from fitaudit.models.base import _model_error

        raise _model_error(ValueError("could not convert string to float: '1,234'"), "sklearn", frame)
    assert "impute" not in str(caught.value)


# ----------------------------------------------------------------------------- item 7: columns by name
def _named_table():
    pandas = pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    x = pandas.DataFrame({"a": rng.normal(size=80), "b": rng.normal(size=80), "c": rng.normal(size=80)})
    return x, (x["a"] + 0.3 * x["b"] > 0).astype(int).to_numpy()


@pytest.mark.parametrize("library", ["xgboost", "lightgbm", "sklearn"])
def test_columns_are_matched_by_the_names_the_model_records(tmp_path, library):
    from fitaudit.models import as_classifier, load_model

    x, y = _named_table()
    if library == "xgboost":
        xgboost = pytest.importorskip("xgboost")
        xgboost.XGBClassifier(n_estimators=5, max_depth=2).fit(x, y).save_model(tmp_path / "m.json")
        model = load_model(tmp_path / "m.json")
    elif library == "lightgbm":
        lightgbm = pytest.importorskip("lightgbm")
        lightgbm.train({"objective": "binary", "verbose": -1, "min_data_in_leaf": 5}, lightgbm.Dataset(x, y),
                       num_boost_round=5).save_model(tmp_path / "m.txt")
        model = load_model(tmp_path / "m.txt")
    else:
        from sklearn.linear_model import LogisticRegression

        model = as_classifier(LogisticRegression().fit(x, y))
    swapped = x[["c", "a", "b"]]
    np.testing.assert_allclose(model.logits(swapped), model.logits(x))
    with pytest.raises(InputError, match=r"missing 'c'; not taken by it 'd'"):
        model.logits(x.rename(columns={"c": "d"}))


def test_a_model_without_names_takes_columns_by_position_with_a_note(capsys):
    from sklearn.linear_model import LogisticRegression

    from fitaudit.models import as_classifier

    x, y = _named_table()
    model = as_classifier(LogisticRegression().fit(x.to_numpy(), y))
    model.logits(x)
    model.logits(x)
    err = capsys.readouterr().err
    assert err.count("fitaudit: note:") == 1 and "taken by position" in err


def test_reordered_training_columns_are_matched_by_name():
    from fitaudit.data.tables import comparable_features

    x, _ = _named_table()
    ordered = comparable_features(x, x.iloc[:40])
    reordered = comparable_features(x, x.iloc[:40][["b", "c", "a"]])
    for left, right in zip(ordered, reordered):
        np.testing.assert_array_equal(left, right)


# ----------------------------------------------------------------------------- item 8: formats named
def test_inspect_names_keras_and_hugging_face_formats(tmp_path):
    from fitaudit.cli.inspect import KIND_NAMES
    from fitaudit.models.inspection import _format

    (tmp_path / "m.keras").write_bytes(b"")
    assert _format(tmp_path / "m.keras", "torch") == "keras" and "Keras" in KIND_NAMES["keras"]
    assert "Hugging Face" in KIND_NAMES["hf"]
    assert _format(tmp_path / "m.keras", "onnx") == "onnx"


def test_audit_help_lists_hugging_face_folders_and_keras_files(capsys):
    assert main(["audit", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Hugging Face folder" in text and ".keras" in text


# ----------------------------------------------------------------------------- item 5: channels last
class _ChannelsLast:
    """A channels-last model as a .keras file loads: input (16, 16, 3), image_layout channels_last."""

    image_layout = "channels_last"

    def __init__(self, input_shape):
        self.input_shape, self.n_classes = input_shape, 2

    def logits(self, x):
        return np.zeros((len(x), 2))


def test_a_channels_last_model_meets_images_in_its_layout():
    from fitaudit.data.transforms import ImageTransformGenerator

    images = np.random.default_rng(0).uniform(size=(2, 3, 16, 16))
    ImageTransformGenerator(images, [0, 1]).check_model(_ChannelsLast((16, 16, 3)), option="--images")
    with pytest.raises(InputError, match="the model's input height is 12 px but the images give 16 px"):
        ImageTransformGenerator(images, [0, 1]).check_model(_ChannelsLast((12, 12, 3)), option="--images")


# ----------------------------------------------------------------------------- item 4: the report's numbers
@pytest.fixture
def saved_audit(tmp_path):
    """A small audit of a 4-input MLP on 40 rows labelled by its own predictions."""
    pytest.importorskip("torch")
    import torch

    from fitaudit.data.io import save_npz
    from fitaudit.models import load_model, save_torch_model
    from fitaudit.models.architectures import build_architecture

    config = {"architecture": "mlp", "kwargs": {"in_features": 4, "hidden_sizes": [6], "n_classes": 2}}
    torch.manual_seed(0)
    model = save_torch_model(build_architecture(config), config, tmp_path / "net")
    x = np.random.default_rng(0).normal(size=(400, 4)).astype(np.float32)
    predicted = load_model(model).predict(x)
    rows = np.concatenate([np.flatnonzero(predicted == c)[:20] for c in (0, 1)])
    data = save_npz(tmp_path / "data.npz", x[rows], predicted[rows])
    out = tmp_path / "out"
    assert main(["audit", "--model", str(model), "--data", str(data), "--out", str(out), "--quiet"]) == 0
    return out / "audit.json"


def test_report_refuses_hand_edited_numbers_and_prints_the_verdict(saved_audit, capsys):
    import json

    capsys.readouterr()
    assert main(["report", str(saved_audit)]) == 0
    assert capsys.readouterr().out.startswith("Overall: ")
    original = json.loads(saved_audit.read_text())
    for part_id, key, value in (("accuracy", "accuracy", 0.2), ("accuracy", "examples", 777)):
        data = json.loads(json.dumps(original))
        part = next(p for p in data["parts"] if p["id"] == part_id)
        assert key in part["numbers"]
        part["numbers"][key] = value
        saved_audit.write_text(json.dumps(data))
        assert main(["report", str(saved_audit)]) == 2
        assert_one_line_error(capsys.readouterr().err, "AUDIT_JSON", key, "edited")


def test_repeated_library_warnings_are_said_once():
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from fitaudit.cli import _warning_notes

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(22):
            warnings.warn("lbfgs failed to converge (status=1):\nSTOP: TOTAL NO. OF ITERATIONS", ConvergenceWarning, stacklevel=2)
        warnings.warn("another", UserWarning, stacklevel=2)
    assert _warning_notes(caught) == ["fitaudit: note: ConvergenceWarning (22 times): lbfgs failed to converge "
                                      "(status=1):", "fitaudit: note: UserWarning: another"]
