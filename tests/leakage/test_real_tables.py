"""The leakage question on real tables as users hand them in (CSV files), the cases of issue 40.

seattle-weather with 51 noisy copies fails; randhie (nearly every row repeats) with 702 copies is not a
pass and says why; palmerpenguins with a unique ``penguin_id`` does not fail, and names the column it
left out; a table whose rows repeat 1-2% of the time still sees noisy copies (the threshold from the
nearest *distinct* rows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fitaudit.data.tables import identifier_columns, read_table
from fitaudit.leakage import tabular_leakage
from fitaudit.leakage.decision import LEAKAGE_LEVEL
from fitaudit.report.verdicts import read


def _through_csv(frame: pd.DataFrame, path) -> pd.DataFrame:
    frame.to_csv(path, index=False)
    return read_table(path, name="--data")


def _split(frame: pd.DataFrame, share: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    order = np.random.default_rng(seed).permutation(len(frame))
    k = int(round(share * len(frame)))
    return frame.iloc[order[:k]].reset_index(drop=True), frame.iloc[order[k:]].reset_index(drop=True)


def _noisy_copies(train: pd.DataFrame, count: int, seed: int) -> pd.DataFrame:
    """``count`` training rows with Gaussian noise of 1% of each numeric column's standard deviation."""
    rng = np.random.default_rng(seed)
    copies = train.iloc[rng.choice(len(train), count, replace=False)].copy()
    for column in copies.select_dtypes("number").columns:
        copies[column] = copies[column] + rng.normal(0.0, 0.01 * train[column].std(), count)
    return copies


def test_seattle_weather_with_51_noisy_copies_fails(tmp_path) -> None:
    data = pytest.importorskip("vega_datasets").data
    frame = _through_csv(data.seattle_weather().drop(columns=["weather"]), tmp_path / "seattle.csv")
    assert frame["date"].dtype.kind not in "iufM"  # the date read back as text
    test, train = _split(frame, 0.3, 0)
    scored = pd.concat([test, _noisy_copies(train, 51, 1)], ignore_index=True)  # 51 of 489: 10%
    result = tabular_leakage(scored, train)
    assert result.left_out_columns == {"date": "dates kept as text"}
    assert result.threshold > 0  # 1% of the rows repeat; the distinct rows set the threshold
    assert set(range(len(test), len(scored))) <= set(result.near_scored.tolist())
    verdict = result.verdict()
    assert verdict.status == "fail" and verdict.reason == "near_twins_beyond_null"
    assert "'date' (dates kept as text)" in read(result).sentence


@pytest.mark.slow
def test_randhie_with_702_copies_is_not_a_pass_and_says_why(tmp_path) -> None:
    sm = pytest.importorskip("statsmodels.api")
    frame = _through_csv(sm.datasets.randhie.load_pandas().data.drop(columns=["mdvis"]), tmp_path / "randhie.csv")
    test, train = _split(frame, 0.3, 0)
    copies = train.iloc[np.random.default_rng(2).choice(len(train), 702, replace=False)]
    result = tabular_leakage(pd.concat([test, copies], ignore_index=True), train,
                             y_true=np.zeros(len(test) + 702, int), y_pred=np.r_[np.zeros(len(test), int), np.ones(702, int)])
    verdict = result.verdict()
    assert verdict.status == "inconclusive" and verdict.reason == "rows_mostly_repeat"
    assert result.null_exact > 0.9 * result.n_train and result.n_exact >= 702
    sentence = read(result).sentence
    assert "a copy cannot be told from a natural repeat" in sentence
    assert "without the rows that repeat or nearly repeat a training row" in sentence
    assert "no sign of leakage" not in sentence


def test_penguins_with_a_unique_id_column_do_not_fail_and_the_column_is_named(tmp_path) -> None:
    penguins = pytest.importorskip("palmerpenguins").load_penguins().drop(columns=["species"])
    penguins.insert(0, "penguin_id", [f"P{i:04d}" for i in range(len(penguins))])
    frame = _through_csv(penguins, tmp_path / "penguins.csv")
    for seed in range(3):
        test, train = _split(frame, 0.3, seed)
        result = tabular_leakage(test, train)
        assert result.left_out_columns == {"penguin_id": "unique text"}
        assert not result.verdict().failed
        assert "Left out of the distance as identifier-like: 'penguin_id' (unique text)." in read(result).sentence
    leaked = tabular_leakage(pd.concat([test, _noisy_copies(train, 12, 3)], ignore_index=True), train)
    assert leaked.verdict().failed  # leaving the id out does not blind the search
    # the pairs in the user's own columns, the id included
    position = int(np.flatnonzero(leaked.near_scored == len(test))[0])
    scored_row, train_row = leaked.pair_rows(position)
    assert leaked.pair_columns[:3] == ["penguin_id", "island", "bill_length_mm"]
    assert scored_row[0] == train_row[0] and scored_row[1] in {"Biscoe", "Dream", "Torgersen"}


def test_identifier_like_columns() -> None:
    rng = np.random.default_rng(0)
    n = 60
    frame = pd.DataFrame({"row": rng.permutation(n) + 1000, "name": [f"n{i}" for i in rng.permutation(n)],
                          "when": [f"2012-01-{1 + i % 28:02d}" for i in range(n)], "size": rng.normal(size=n),
                          "group": rng.choice(["a", "b", "c"], n), "count": rng.integers(0, 5, n)})
    found = identifier_columns(frame.iloc[:20], frame.iloc[20:])
    assert found == {"row": "row numbers", "name": "unique text", "when": "dates kept as text"}
    assert identifier_columns(frame.iloc[:5], frame.iloc[5:15]) == {}  # too few rows to judge


def test_a_column_typed_differently_in_the_two_tables_is_refused() -> None:
    from fitaudit._errors import InputError

    train = pd.DataFrame({"income": [5850, 6100, 7200, 4300] * 10, "age": range(40)})
    scored = pd.DataFrame({"income": ["5,850", "6,100"] * 5, "age": range(10)})
    with pytest.raises(InputError, match=r"column 'income' holds text \(.*\) in `--data` but numbers \(int64\) in "
                                         r"`--train-data` \(e.g. '5,850'\)"):
        tabular_leakage(scored, train, scored_name="--data", train_name="--train-data")


def test_noisy_copies_are_seen_whatever_the_rate_of_natural_repeats() -> None:
    """2% of the rows repeat: the quantile of the nearest *other* rows would be 0 and hide every noisy copy."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2000, 4)).round(2)
    x[rng.choice(2000, 40, replace=False)] = x[rng.choice(2000, 40, replace=False)]
    train, test = x[:1500], x[1500:]
    sources = rng.choice(1500, 30, replace=False)
    noisy = train[sources] + rng.normal(0, 0.01, (30, 4))
    result = tabular_leakage(np.concatenate([test, noisy]), train)
    assert result.threshold > 0.01
    pairs = dict(zip(result.near_scored.tolist(), result.near_train.tolist()))
    assert all(np.array_equal(train[pairs[500 + i]], train[s]) for i, s in enumerate(sources) if 500 + i in pairs)
    assert sum(500 + i in pairs for i in range(30)) >= 29
    assert result.verdict().reason == "near_twins_beyond_null"


def test_exact_copies_the_data_cannot_explain_are_never_no_sign_of_leakage() -> None:
    """3 copies among 600 examples whose training set never repeats: too few for the test, not a pass."""
    rng = np.random.default_rng(5)
    train, scored = rng.normal(size=(600, 6)), rng.normal(size=(600, 6))
    scored[:3] = train[:3]
    result = tabular_leakage(scored, train)
    verdict = result.verdict()
    assert verdict.numbers["exact_pvalue"] > LEAKAGE_LEVEL / 2 and result.n_exact == 3 and result.null_exact == 0
    assert verdict.status == "inconclusive" and verdict.reason == "exact_copies_unexplained"
    sentence = read(result).sentence
    assert "3 scored example(s) equal a training example, though no training example equals another" in sentence
    assert "no sign of leakage" not in sentence



@pytest.mark.slow
def test_three_copies_of_training_images_in_600_are_not_a_pass() -> None:
    """Images whose training set never repeats: 3 byte-identical copies are too few for the test but never
    "no sign of leakage" (the decision is shared by every space)."""
    from fitaudit.leakage import image_leakage

    rng = np.random.default_rng(6)
    images = np.clip(rng.random((1200, 3, 4, 4)).repeat(4, axis=2).repeat(4, axis=3), 0, 1).astype(np.float32)
    train, scored = images[:600], images[600:].copy()
    scored[:3] = train[[10, 20, 30]]
    result = image_leakage(scored, train)
    verdict = result.verdict()
    assert result.exact_train.tolist() == [10, 20, 30] and result.null_exact == 0
    assert verdict.status != "pass" and "no sign of leakage" not in read(result).sentence


@pytest.mark.slow
def test_twins_that_move_the_accuracy_are_said_even_without_an_excess() -> None:
    """A fifth of the rows repeat naturally (no excess), and the model is right on exactly those: the accuracy
    without them falls out of the interval of the accuracy with them, so the verdict is not a pass."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2500, 5))
    x[2000:] = x[rng.choice(2000, 500)]  # natural repeats, in both sets alike
    x = x[rng.permutation(2500)]
    train, scored = x[:1700], x[1700:]
    twin = np.array([any(np.array_equal(row, t) for t in train) for row in scored])
    y = rng.integers(0, 2, len(scored))
    predictions = np.where(twin | (rng.random(len(scored)) < 0.5), y, 1 - y)
    result = tabular_leakage(scored, train, y_true=y, y_pred=predictions)
    verdict = result.verdict()
    assert verdict.numbers["near_pvalue"] > 0.005 and verdict.numbers["exact_pvalue"] > 0.005
    assert verdict.status == "inconclusive" and verdict.reason == "twins_change_accuracy"
    numbers = verdict.numbers
    assert not numbers["accuracy_low"] <= result.accuracy_without.accuracy <= numbers["accuracy_high"]
    assert "removing them moves the accuracy out of its interval" in read(result).sentence


def test_table_pairs_and_left_out_columns_survive_the_json_round_trip() -> None:
    import json

    from fitaudit.results import load_result

    rng = np.random.default_rng(8)
    table = pd.DataFrame({"id": [f"r{i}" for i in range(100)], "a": rng.normal(size=100).round(3),
                          "c": rng.choice(["x", "y"], 100)})
    result = tabular_leakage(pd.concat([table.iloc[:30], table.iloc[30:35]], ignore_index=True), table.iloc[30:])
    again = load_result(json.loads(json.dumps(result.to_dict())))
    assert again.left_out_columns == {"id": "unique text"} and again.pair_columns == ["id", "a", "c"]
    position = int(np.flatnonzero(again.near_scored == 30)[0])
    assert again.pair_rows(position) == (["r30", str(table["a"][30]), table["c"][30]],) * 2
    assert read(again) == read(result)
