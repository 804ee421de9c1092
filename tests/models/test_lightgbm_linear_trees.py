"""LightGBM files with linear trees (``linear_tree=True``, a linear model in each leaf) are read: their leaf
models are bounded before LightGBM sees the file (it reads ``num_features`` and ``leaf_features`` without
checking their lengths, and indexes a row with ``leaf_features``), and the scores are LightGBM's own."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.cli import main

lightgbm = pytest.importorskip("lightgbm")


@pytest.fixture(scope="module")
def linear(tmp_path_factory):
    """A binary linear-tree booster on the breast-cancer table, its file and the rows it is scored on."""
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    booster = lightgbm.train({"objective": "binary", "linear_tree": True, "verbose": -1, "num_leaves": 4,
                              "min_data_in_leaf": 20}, lightgbm.Dataset(x[::2], y[::2]), num_boost_round=5)
    path = tmp_path_factory.mktemp("linear") / "model.txt"
    booster.save_model(path)
    assert "is_linear=1" in path.read_text() and re.search(r"leaf_coeff=\S", path.read_text())
    return path, booster, x[1::2], y[1::2]


def test_a_linear_tree_file_scores_as_lightgbm_does(linear):
    from fitaudit.models import load_model

    path, booster, x, _ = linear
    model = load_model(path)
    p = booster.predict(x)  # the trained booster's own probabilities, in memory
    np.testing.assert_allclose(model.predict_proba(x), np.column_stack([1 - p, p]), rtol=1e-6, atol=1e-9)


def _edit(text: str, key: str, change) -> str:
    """``text`` with the first tree's non-empty ``key=`` line changed, its tree_sizes entry kept consistent."""
    match = re.search(rf"^{key}=(.*\S.*)$", text, flags=re.MULTILINE)
    sizes = re.search(r"^tree_sizes=(.*)$", text, flags=re.MULTILINE)
    assert match is not None and sizes is not None
    new = change(match.group(1))
    tree = text[:match.start()].count("\nTree=") - 1
    counts = [int(v) for v in sizes.group(1).split()]
    counts[tree] += len(new) - len(match.group(1))
    edited = text[:match.start(1)] + new + text[match.end(1):]
    return edited.replace(sizes.group(0), "tree_sizes=" + " ".join(map(str, counts)), 1)


EDITS = {
    "num_features": (lambda v: v + " 1", "'num_features' are not 4 counts"),
    "leaf_features": (lambda v: re.sub(r"\d+", "30", v, count=1), "'leaf_features' name a feature beyond"),
    "leaf_coeff": (lambda v: v.split(" ", 1)[1], "'leaf_coeff' for the"),
    "leaf_const": (lambda v: v.rsplit(" ", 1)[0], "values of 'leaf_const' for num_leaves=4"),
}


@pytest.mark.parametrize("key", sorted(EDITS))
def test_an_edited_leaf_model_is_refused_in_one_line(linear, tmp_path, key, capsys):
    path, *_ = linear
    change, message = EDITS[key]
    bad = tmp_path / "bad.txt"
    bad.write_text(_edit(path.read_text(), key, change))
    with pytest.raises(InputError, match="not a well-formed LightGBM model file"):
        from fitaudit.models import load_model

        load_model(bad, name="--model")
    assert main(["inspect", "--model", str(bad)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "`--model`" in lines[0] and message in lines[0], lines
