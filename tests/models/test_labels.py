"""One label convention (models.labels) through the API and every command; the chance stop."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import cohen_kappa_score

from fitaudit import InputError
from fitaudit.cli import main
from fitaudit.models.labels import LabelSet, chance_check, label_set, stop_at_chance
from fitaudit.options import RunOptions

#: this module's audits run without progress bars
QUIET = RunOptions(progress=False)


@pytest.fixture(scope="module")
def iris_split():
    x, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    x, y = x[order], y[order]
    return x[:100], y[:100], x[100:], y[100:]


def _save(tmp_path, estimator, x_train, y_train, x_test, y_test):
    skops_io = pytest.importorskip("skops.io")
    skops_io.dump(estimator, tmp_path / "model.skops")
    np.savez(tmp_path / "test.npz", x=x_test, y=y_test)
    np.savez(tmp_path / "train.npz", x=x_train, y=y_train)
    return str(tmp_path / "model.skops"), str(tmp_path / "test.npz"), str(tmp_path / "train.npz")


def test_label_set_conventions():
    trained = LabelSet(3, [1, 2, 3], trained=True)
    np.testing.assert_array_equal(trained.encode(np.array([3, 1, 2, 2])), [2, 0, 1, 1])
    np.testing.assert_array_equal(trained.encode(np.array(["3", "1"])), [2, 0])  # a CSV's text spelling them
    np.testing.assert_array_equal(trained.encode(np.array([3.0, 1.0])), [2, 0])
    with pytest.raises(InputError, match="labels the model does not have: 0; labels are the classes the model was "
                                         "trained on: 1, 2, 3"):
        trained.encode(np.array([0, 1, 2]))
    named = LabelSet(2, ["cat", "dog"], trained=False)  # a torch/ONNX file's names: names or indices
    np.testing.assert_array_equal(named.encode(np.array(["dog", "cat"])), [1, 0])
    np.testing.assert_array_equal(named.encode(np.array([1, 0])), [1, 0])
    with pytest.raises(InputError, match="labels the model does not have: 2"):
        named.encode(np.array([0, 2]))
    bare = LabelSet(3)
    np.testing.assert_array_equal(bare.encode(np.array(["2", "0"])), [2, 0])
    with pytest.raises(InputError, match=r"records no class names, so labels are its output indices 0\.\.2"):
        bare.encode(np.array(["cat"]))
    with pytest.raises(InputError, match="missing"):
        trained.encode(np.array([1.0, np.nan]))
    unknown = LabelSet(None)  # a model whose class count is known only once it runs: indices, checked later
    np.testing.assert_array_equal(unknown.encode(np.array([4, 0])), [4, 0])
    with pytest.raises(InputError, match=r"output indices 0\.\.k-1"):
        unknown.encode(np.array(["cat"]))
    anything = LabelSet(2, any_labels=True)
    np.testing.assert_array_equal(anything.encode(np.array(["b", "a", "b"])), [1, 0, 1])


def test_chance_check_against_cohen_kappa():
    rng = np.random.default_rng(1)
    for _ in range(20):
        truth = rng.integers(0, 4, size=200)
        predicted = np.where(rng.random(200) < rng.random(), truth, rng.integers(0, 4, size=200))
        check = chance_check(truth, predicted, 4)
        assert check.accuracy == pytest.approx(np.mean(truth == predicted))
        assert check.kappa == pytest.approx(cohen_kappa_score(truth, predicted), abs=1e-12)
        assert check.at_or_below == (cohen_kappa_score(truth, predicted) <= 1e-12)
    # hand-computed: labels 0,0,1,1 and predictions 0,1,1,1 -> p_o = 3/4, p_e = 1/2 * 1/4 + 1/2 * 3/4 = 1/2
    check = chance_check([0, 0, 1, 1], [0, 1, 1, 1])
    assert (check.accuracy, check.chance) == (0.75, 0.5)
    constant = chance_check([0, 1, 1, 1], [1, 1, 1, 1])  # a constant predictor sits exactly at chance
    assert constant.accuracy == constant.chance == 0.75 and constant.at_or_below
    with pytest.raises(InputError, match=r"`data`: the model's accuracy 0\.000 on 4 examples is at or below chance"):
        stop_at_chance([0, 0, 1, 1], [1, 1, 0, 0])


@pytest.mark.parametrize("normalisation", [None, "recorded", "given", "none"])
def test_stop_at_chance_names_a_missing_normalisation_first(normalisation):
    """Image arrays that no mean/std normalised: the likely cause of an accuracy at chance, said first."""
    with pytest.raises(InputError) as caught:
        stop_at_chance([0, 0, 1, 1], [1, 1, 1, 1], normalisation=normalisation)
    message = str(caught.value)
    assert "at or below chance" in message and "not the model's classes in its order" in message
    assert ("No normalisation is known" in message) == (normalisation == "none")
    if normalisation == "none":
        assert message.index("No normalisation is known") < message.index("not the model's classes")
    stop_at_chance([0, 0, 1, 1], [0, 0, 1, 1], normalisation="none")  # above chance: nothing said


def test_label_set_of_models(iris_split):
    x, y, _, _ = iris_split
    assert label_set(_Fitted(LogisticRegression(max_iter=500).fit(x, y + 1))).names == [1, 2, 3]
    names = np.array(["setosa", "versicolor", "virginica"])
    labels = label_set(_Fitted(LogisticRegression(max_iter=500).fit(x, names[y])))
    assert labels.trained and labels.names == list(names)


def _Fitted(estimator):
    from fitaudit.models import as_classifier

    return as_classifier(estimator)


@pytest.mark.parametrize("offset", [1, 0])
@pytest.mark.slow
def test_inspect_and_audit_agree_on_labels(tmp_path, capsys, iris_split, offset):
    """A model trained on 1..3 takes 1..3 (its classes) everywhere and refuses 0..2; one trained on 0..2 the reverse."""
    from fitaudit import audit

    x_train, y_train, x_test, y_test = iris_split
    estimator = LogisticRegression(max_iter=500).fit(x_train, y_train + offset)
    expected = estimator.score(x_test, y_test + offset)
    model, good, train = _save(tmp_path, estimator, x_train, y_train + offset, x_test, y_test + offset)
    np.savez(tmp_path / "other.npz", x=x_test, y=y_test + 1 - offset)  # the other convention
    bad = str(tmp_path / "other.npz")
    assert main(["inspect", "--model", model, "--data", good, "--train-data", train, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] == pytest.approx(expected)
    assert main(["inspect", "--model", model, "--data", bad]) == 2
    assert "labels the model does not have" in capsys.readouterr().err
    result = audit(model, good, train_data=train, instruments=["pmv"], options=QUIET)
    assert result.subject["accuracy"] == pytest.approx(expected)
    assert result.part("accuracy").numbers["accuracy"] == pytest.approx(expected)
    assert main(["audit", "--model", model, "--data", bad, "--out", str(tmp_path / "a2"), "--quiet"]) == 2
    assert "labels the model does not have" in capsys.readouterr().err
    with pytest.raises(InputError, match="labels the model does not have"):
        audit(model, bad, options=QUIET)
    assert main(["leakage", "--model", model, "--data", good, "--train-data", train, "--json"]) == 0
    capsys.readouterr()
    assert main(["leakage", "--model", model, "--data", bad, "--train-data", train]) == 2
    assert "labels the model does not have" in capsys.readouterr().err


def test_string_classes_scored_on_indices_are_refused(tmp_path, capsys, iris_split):
    """The issue's case: string classes, labels as indices in the user's own order: refused, not 'accuracy 0.000'."""
    from fitaudit import audit

    x_train, y_train, x_test, y_test = iris_split
    names = np.array(["setosa", "versicolor", "virginica"])
    estimator = LogisticRegression(max_iter=500).fit(x_train, names[y_train])
    user_order = np.array([2, 0, 1])  # the user's own indices for the three names
    model, _, _ = _save(tmp_path, estimator, x_train, user_order[y_train], x_test, user_order[y_test])
    assert main(["inspect", "--model", model, "--data", str(tmp_path / "test.npz")]) == 2
    err = capsys.readouterr().err
    assert "labels are the classes the model was trained on: setosa, versicolor, virginica" in err
    with pytest.raises(InputError, match="labels the model does not have: 0, 1, 2"):
        audit(model, str(tmp_path / "test.npz"), options=QUIET)
    np.savez(tmp_path / "named.npz", x=x_test, y=names[y_test])  # the names themselves: scored as scikit-learn does
    assert main(["inspect", "--model", model, "--data", str(tmp_path / "named.npz"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] == pytest.approx(estimator.score(x_test, names[y_test]))


def test_accuracy_at_chance_stops_inspect_and_the_audit_says_it_in_its_baseline(tmp_path, capsys, iris_split):
    """Labels permuted against a model without class names: the accuracy falls below chance; inspect stops,
    the audit runs and its baseline part fails with the same hint."""
    from fitaudit import audit

    x_train, y_train, x_test, y_test = iris_split
    estimator = LogisticRegression(max_iter=500).fit(x_train, y_train)
    permuted = np.array([1, 2, 0])[y_test]  # a class order that is not the model's
    model, _, _ = _save(tmp_path, estimator, x_train, y_train, x_test, permuted)
    assert main(["inspect", "--model", model, "--data", str(tmp_path / "test.npz")]) == 2
    err = capsys.readouterr().err
    assert "at or below chance" in err and "not the model's classes in its order" in err
    for result in (audit(model, str(tmp_path / "test.npz"), options=QUIET),
                   audit(estimator, (x_test, permuted), options=QUIET)):
        baseline = result.part("baseline")
        assert baseline.status == "fail" and baseline.verdict.numbers["at_chance"]
        assert "at or below chance" in baseline.sentence and "not the model's classes in its order" in baseline.sentence
        assert result.verdict().status == "fail"
    assert main(["leakage", "--model", model, "--data", str(tmp_path / "test.npz"), "--train-data",
                 str(tmp_path / "train.npz")]) == 2
    assert "at or below chance" in capsys.readouterr().err


@pytest.mark.slow
def test_pmv_takes_string_labels(tmp_path, capsys, iris_split):
    x_train, y_train, _, _ = iris_split
    names = np.array(["setosa", "versicolor", "virginica"])
    np.savez(tmp_path / "named.npz", x=x_train, y=names[y_train])
    np.savez(tmp_path / "indices.npz", x=x_train, y=y_train)
    scores = []
    for file in ("named.npz", "indices.npz"):
        assert main(["pmv", "--data", str(tmp_path / file), "--estimator", "logistic_regression", "--n-repeats", "2",
                     "--seed", "0", "--quiet", "--json"]) == 0
        scores.append(json.loads(capsys.readouterr().out)["score"])
    assert scores[0] == pytest.approx(scores[1])  # the names are the same classes in the same order


def test_one_example_or_one_class_is_too_few_not_a_label_order(tmp_path, capsys, iris_split):
    """Issue 46: one scored row said "accuracy 1.000 ... at or below chance (1.000)" and blamed the label order.

    With one class among the labels, chance agreement equals the accuracy whatever the model (Cohen's p_e = p_o),
    so the message says what is missing: examples of two classes."""
    pd = pytest.importorskip("pandas")
    from fitaudit import audit

    with pytest.raises(InputError, match=r"^`data` holds 1 example: one example cannot be audited .* at least two "
                                         r"examples, of at least two classes, are needed\.$"):
        stop_at_chance([1], [1])
    names = LabelSet(3, ["setosa", "versicolor", "virginica"], trained=True)
    with pytest.raises(InputError, match=r"all 4 examples have the label 'versicolor': with one class, any accuracy "
                                         r"\(here 0\.500\) is what predictions unrelated"):
        stop_at_chance([1, 1, 1, 1], [1, 0, 1, 2], labels=names)
    x_train, y_train, x_test, y_test = iris_split
    species = np.array(["setosa", "versicolor", "virginica"])
    columns = ["a", "b", "c", "d"]
    estimator = LogisticRegression(max_iter=500).fit(pd.DataFrame(x_train, columns=columns), species[y_train])
    model, _, _ = _save(tmp_path, estimator, x_train, y_train, x_test, y_test)
    table = pd.DataFrame(x_test, columns=columns).assign(species=species[y_test])
    table.iloc[:1].to_csv(tmp_path / "one.csv", index=False)
    table.to_csv(tmp_path / "train.csv", index=False)
    one = str(tmp_path / "one.csv")
    for argv in (["inspect"], ["audit", "--out", str(tmp_path / "out"), "--quiet"],
                 ["leakage", "--train-data", str(tmp_path / "train.csv")]):
        assert main([*argv, "--model", model, "--data", one, "--label", "species"]) == 2
        err = capsys.readouterr().err
        assert "`--data` holds 1 example: one example cannot be audited" in err, err
        assert "chance (" not in err and "in its order" not in err
    first = species[y_test[0]]
    table[table.species == first].to_csv(tmp_path / "same.csv", index=False)
    with pytest.raises(InputError, match=rf"examples have the label '{first}': with one class"):
        audit(model, str(tmp_path / "same.csv"), label="species", options=QUIET)
