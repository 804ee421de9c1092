"""``fitaudit pmv``: JSON output, catalogue, safe parameter parsing, errors."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.tree import DecisionTreeClassifier

from fitaudit import InputError
from fitaudit.cli import main
from fitaudit.pmv import pmv_score
from fitaudit.pmv.catalogue import ESTIMATORS, make_estimator, parse_param_value, parse_params


def test_param_values_are_json_or_strings_never_evaluated() -> None:
    assert parse_param_value("3") == 3
    assert parse_param_value("0.5") == 0.5
    assert parse_param_value("null") is None
    assert parse_param_value("None") is None and parse_param_value("True") is True
    assert parse_param_value("False") is False and parse_param_value("true") is True
    assert parse_param_value("[10, 20]") == [10, 20]
    assert parse_param_value("entropy") == "entropy"
    assert parse_param_value("__import__('os')") == "__import__('os')"
    tree = DecisionTreeClassifier()
    assert parse_params(["max_depth=4", "criterion=entropy"], tree, "decision_tree") == {
        "max_depth": 4,
        "criterion": "entropy",
    }
    with pytest.raises(InputError, match="has no parameter 'depth'"):
        parse_params(["depth=4"], tree, "decision_tree")
    with pytest.raises(InputError, match="key=value"):
        parse_params(["max_depth"], tree, "decision_tree")


def test_every_catalogue_entry_is_a_classifier() -> None:
    from sklearn.base import is_classifier

    assert all(is_classifier(make_estimator(name)) for name in ESTIMATORS)


def test_json_output_matches_the_library(tmp_path, capsys) -> None:
    X, y = make_moons(100, noise=0.3, random_state=0)
    path = tmp_path / "moons.npz"
    np.savez(path, x=X, y=y)
    argv = ["pmv", "--data", str(path), "--estimator", "decision_tree", "--param", "max_depth=3"]
    assert main([*argv, "--rates", "0.1,0.3", "--seed", "2", "--json", "--quiet"]) == 0
    payload = json.loads(capsys.readouterr().out)
    expected = pmv_score(
        DecisionTreeClassifier(max_depth=3, random_state=0), X, y, rates=[0.1, 0.3], random_state=2
    )
    assert payload["type"] == "PMVResult"
    assert payload["score"] == pytest.approx(expected.score)
    assert payload["rates"] == [0.0, 0.1, 0.3]
    assert set(payload) == {"verdict", "type", *expected.to_dict()}  # the result's own keys, nothing renamed
    assert payload["verdict"]["status"] == expected.verdict().status  # and its own decision first


def test_human_output_is_a_verdict_with_its_numbers(capsys) -> None:
    assert main(["pmv", "--dataset", "moons", "--estimator", "decision_tree", "--param", "max_depth=None", "--quiet"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    # the report's reading of |k_S|: its headline, then its details
    assert lines[0].startswith("DecisionTreeClassifier: ") and "memorises" in lines[0]
    assert "|k_S| = 0.000" in lines[1] and "memorises its training labels" in lines[1]
    assert "cross-validated accuracy" in lines[1]
    assert "training accuracy  1.000, 1.000" in out and "the user guide (docs/)" in out
    assert "PMVResult(" not in out and "array(" not in out and "{" not in out
    assert main(["pmv", "--dataset", "moons", "--estimator", "decision_tree", "--param", "max_depth=3", "--quiet"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "|k_S| = 0.6" in first and "fits the signal" in first


@pytest.mark.slow
def test_the_users_own_estimator_is_refitted_as_a_clone(tmp_path, capsys) -> None:
    import skops.io

    X, y = make_moons(120, noise=0.3, random_state=1)
    np.savez(tmp_path / "moons.npz", x=X, y=y)
    fitted = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X[:10], y[:10])
    skops.io.dump(fitted, tmp_path / "tree.skops")
    argv = ["pmv", "--data", str(tmp_path / "moons.npz"), "--model", str(tmp_path / "tree.skops"), "--json", "--quiet"]
    assert main([*argv, "--param", "max_depth=None"]) == 0
    payload = json.loads(capsys.readouterr().out)
    expected = pmv_score(DecisionTreeClassifier(random_state=0), X, y, random_state=0)
    assert payload["score"] == pytest.approx(expected.score) and payload["score"] < 0.05
    assert main(argv) == 0  # its own parameters (max_depth=2), not its fitted state
    assert json.loads(capsys.readouterr().out)["score"] == pytest.approx(
        pmv_score(DecisionTreeClassifier(max_depth=2, random_state=0), X, y, random_state=0).score
    )


def test_builtin_dataset_and_list(capsys) -> None:
    assert main(["pmv", "--list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert "digits" in listing["datasets"] and "svc_rbf" in listing["estimators"]
    code = main(
        [
            "pmv",
            "--dataset",
            "iris",
            "--estimator",
            "naive_bayes",
            "--criterion",
            "mutation",
            "--json",
            "--quiet",
        ]
    )
    assert code == 0
    assert json.loads(capsys.readouterr().out)["criterion"] == "mutation"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--dataset", "iris", "--estimator", "ridge"], "`--estimator` must be one of"),
        (["--dataset", "nope", "--estimator", "knn"], "`--dataset` must be one of"),
        (["--estimator", "knn"], "exactly one of `--data FILE.npz` and `--dataset NAME`"),
        (["--dataset", "iris"], "exactly one of `--estimator NAME`"),
        (["--dataset", "iris", "--estimator", "knn", "--model", "m.skops"], "exactly one of `--estimator NAME`"),
        (["--dataset", "iris", "--model", "m.pkl"], "`--model` must be a scikit-learn estimator saved with skops"),
        (["--dataset", "iris", "--model", "absent.skops"], "`--model`: file 'absent.skops' does not exist"),
        (["--dataset", "iris", "--estimator", "knn", "--checkpoint-dir", __file__], "is an existing file"),
        (["--dataset", "iris", "--estimator", "knn", "--param", "k=3"], "has no parameter 'k'"),
        (
            ["--dataset", "iris", "--estimator", "knn", "--param", "n_neighbors=-1"],
            "could not be trained",
        ),
        (
            ["--dataset", "iris", "--estimator", "knn", "--rates", "0.1,0.9"],
            r"`--rates` must be in \(0, 0.5\]",
        ),
        (["--data", "missing.npz", "--estimator", "knn"], "does not exist"),
        (["--dataset", "iris", "--estimator", "knn", "--n-repeats", "1000000"],
         r"`--n-repeats` must be an integer <= 1000; got 1000000\."),
        (["--dataset", "iris", "--estimator", "knn", "--n-repeats", "0"], r"`--n-repeats` must be a positive integer; got 0\."),
        (["--dataset", "iris", "--estimator", "knn", "--n-jobs", "-100"], r"`--n-jobs` must be a positive number of workers"),
    ],
)
def test_errors_are_one_line_exit_2(argv: list[str], message: str, capsys) -> None:
    assert main(["pmv", *argv, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert re.search(message, err)


def test_the_repeat_bound_is_the_library_one(capsys) -> None:
    from fitaudit.pmv.search import MAX_REPEATS

    assert main(["pmv", "--help"]) == 0
    assert f"at most {MAX_REPEATS})" in " ".join(capsys.readouterr().out.split())
    y = np.arange(40) % 2
    with pytest.raises(InputError, match=f"`n_repeats` must be an integer <= {MAX_REPEATS}"):
        pmv_score(DecisionTreeClassifier(), np.c_[y, y], y, n_repeats=MAX_REPEATS + 1)


@pytest.mark.slow
def test_pmv_never_imports_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys, fitaudit.pmv, fitaudit.cli.pmv, fitaudit.experiments.pmv; "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
