"""A .skops file is trusted by an explicit allowlist (issue 46, item 1), never by module name.

The attack of the issue: a pipeline of FunctionTransformers chaining ``numpy.full_like`` (an object
array holding a string), ``numpy.min`` (the string) and ``numpy.testing``'s ``runstring`` (``exec``)
was accepted by the old rule "every name under sklearn, numpy or scipy" and ran its payload when the
model predicted. Each test here fails under that rule.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

skops_io = pytest.importorskip("skops.io")

from numpy.testing._private.utils import runstring  # noqa: E402
from sklearn.calibration import CalibratedClassifierCV  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.ensemble import (  # noqa: E402
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402
from sklearn.pipeline import Pipeline, make_pipeline  # noqa: E402
from sklearn.preprocessing import (  # noqa: E402
    FunctionTransformer,
    MinMaxScaler,
    OneHotEncoder,
    OrdinalEncoder,
    StandardScaler,
)
from sklearn.svm import SVC  # noqa: E402
from sklearn.tree import DecisionTreeClassifier  # noqa: E402
from sklearn.utils._testing import assert_run_python_script_without_output  # noqa: E402

from fitaudit._errors import InputError  # noqa: E402
from fitaudit.cli import main  # noqa: E402
from fitaudit.models.formats.skops import load_skops  # noqa: E402
from fitaudit.models.io import load_model, runs_code  # noqa: E402


@pytest.fixture
def xy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 4))
    return x, (x[:, 0] + 0.3 * rng.normal(size=120) > 0).astype(int)


def _runstring_chain(marker) -> Pipeline:
    payload = f"open({str(marker)!r}, 'w').write('ran')"
    return make_pipeline(
        FunctionTransformer(np.full_like, kw_args={"fill_value": payload, "dtype": "O"}),
        FunctionTransformer(np.min),
        FunctionTransformer(runstring, kw_args={"dict": {}}),
    )


def test_the_runstring_chain_is_refused_before_it_can_run(tmp_path):
    marker = tmp_path / "marker"
    path = tmp_path / "p.skops"
    skops_io.dump(_runstring_chain(marker), path)
    with pytest.raises(InputError) as error:
        load_skops(path, name="--model")
    message = str(error.value)
    assert "numpy.testing._private.utils.runstring" in message and "numpy.full_like" in message
    assert "--trust-code" in message and "trusted=" in message
    assert runs_code(path)  # inspect may not call it "loaded safely"
    assert not marker.exists()


@pytest.mark.parametrize("command", [
    ["inspect", "--model", "{model}"],
    ["inspect", "--model", "{model}", "--data", "{data}"],
    ["audit", "--model", "{model}", "--data", "{data}", "--out", "{out}"],
    ["pmv", "--model", "{model}", "--data", "{data}"],
])
def test_every_command_refuses_the_chain(tmp_path, xy, command, capsys):
    marker = tmp_path / "marker"
    skops_io.dump(_runstring_chain(marker), tmp_path / "p.skops")
    np.savez(tmp_path / "d.npz", x=xy[0], y=xy[1])
    argv = [a.format(model=tmp_path / "p.skops", data=tmp_path / "d.npz", out=tmp_path / "out") for a in command]
    assert main(argv + ["--quiet"] if command[0] != "inspect" else argv) == 2
    err = capsys.readouterr().err
    assert "does not trust" in err and "runstring" in err and "Traceback" not in err
    assert not marker.exists()


def _function_transformer(func, **kw_args) -> Pipeline:
    return make_pipeline(FunctionTransformer(func, kw_args=kw_args or None), LogisticRegression())


@pytest.mark.parametrize(("func", "kw_args", "name"), [
    (np.load, {"allow_pickle": True}, "numpy.load"),  # reads pickles
    (__import__("scipy.io", fromlist=["loadmat"]).loadmat, {}, "scipy.io"),  # a scipy callable that reads files
    (assert_run_python_script_without_output, {}, "sklearn.utils._testing"),  # a private sklearn function that runs a script
    (np.ctypeslib.load_library, {}, "numpy.ctypeslib"),  # loads a shared library
])
def test_dangerous_functions_in_trusted_namespaces_are_refused(tmp_path, func, kw_args, name):
    path = tmp_path / "f.skops"
    skops_io.dump(_function_transformer(func, **kw_args), path)
    with pytest.raises(InputError, match=f"does not trust: {name}"):
        load_model(path)


def _ordinary_models(x, y):
    rng = np.random.default_rng(1)
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": rng.choice(["p", "q", "r"], len(y))})
    tabular = ColumnTransformer([("num", StandardScaler(), ["a", "b"]),
                                 ("cat", OneHotEncoder(handle_unknown="ignore"), ["c"])])
    ordinal = ColumnTransformer([("num", SimpleImputer(), ["a", "b"]), ("cat", OrdinalEncoder(), ["c"])],
                                remainder="passthrough")
    y3 = (np.digitize(x[:, 1], [-0.5, 0.5])).astype(int)
    return [
        (make_pipeline(StandardScaler(), LogisticRegression()), x, y),
        (make_pipeline(FunctionTransformer(np.log1p), LogisticRegression()), np.abs(x), y),
        (make_pipeline(FunctionTransformer(np.clip, kw_args={"a_min": -2, "a_max": 2}), LogisticRegression()), x, y),
        (HistGradientBoostingClassifier(max_iter=10), x, y),
        (HistGradientBoostingClassifier(max_iter=10), x, y3),
        (GradientBoostingClassifier(n_estimators=10), x, y3),
        (RandomForestClassifier(n_estimators=5, random_state=0), x, y),
        (CalibratedClassifierCV(LogisticRegression()), x, y),
        (CalibratedClassifierCV(SVC(), method="isotonic"), x, y),
        (Pipeline([("columns", tabular), ("model", LogisticRegression())]), frame, y),
        (Pipeline([("columns", ordinal), ("model", DecisionTreeClassifier(random_state=0))]), frame, y),
        (KNeighborsClassifier(), x, y),
        (MLPClassifier(max_iter=30, random_state=0), x, y),
        (make_pipeline(MinMaxScaler(), SVC(probability=True, random_state=0)), x, y),
    ]


@pytest.mark.slow
def test_ordinary_pipelines_still_load_and_predict_the_same(tmp_path, xy):
    import warnings

    for number, (estimator, x, y) in enumerate(_ordinary_models(*xy)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimator.fit(x, y)
        path = tmp_path / f"m{number}.skops"
        skops_io.dump(estimator, path)
        loaded = load_skops(path)
        assert not runs_code(path), type(estimator).__name__
        np.testing.assert_array_equal(loaded.predict(x), estimator.predict(x))


def test_trust_on_purpose_by_name_or_wholesale(tmp_path, xy):
    path = tmp_path / "f.skops"
    skops_io.dump(_function_transformer(np.abs).fit(*xy), path)  # numpy.absolute is a ufunc: trusted
    load_skops(path)
    odd = tmp_path / "odd.skops"
    skops_io.dump(_function_transformer(np.fliplr).fit(*xy), odd)  # not on the list
    with pytest.raises(InputError, match="numpy.fliplr"):
        load_skops(odd)
    assert load_skops(odd, trusted=["numpy.fliplr"]) is not None
    assert load_skops(odd, trust_code=True) is not None
    assert load_model(odd, trust_code=True).kind == "sklearn"


def _dump_tree_with(tmp_path, xy, edit) -> str:
    tree = DecisionTreeClassifier(random_state=0).fit(*xy)
    state = tree.tree_.__getstate__()
    nodes = state["nodes"].copy()
    edit(nodes)
    state["nodes"] = nodes
    tree.tree_.__setstate__(state)
    path = tmp_path / "tree.skops"
    skops_io.dump(tree, path)
    return str(path)


@pytest.mark.parametrize(("edit", "words"), [
    (lambda n: n["left_child"].__setitem__(0, len(n) + 1000), "child index outside its nodes"),
    (lambda n: n["right_child"].__setitem__(0, 0), "child index outside its nodes"),  # a loop to the root
    (lambda n: n["feature"].__setitem__(0, 99), "feature the model does not have"),
])
def test_a_crafted_tree_is_refused_before_it_predicts(tmp_path, xy, edit, words):
    path = _dump_tree_with(tmp_path, xy, edit)
    with pytest.raises(InputError, match=words):
        load_skops(path)


def test_a_crafted_histogram_booster_is_refused(tmp_path, xy):
    model = HistGradientBoostingClassifier(max_iter=3).fit(*xy)
    nodes = model._predictors[0][0].nodes
    inner = np.flatnonzero(~nodes["is_leaf"].astype(bool))[0]
    nodes["left"][inner] = 10**6
    path = tmp_path / "hgb.skops"
    skops_io.dump(model, path)
    with pytest.raises(InputError, match="histogram booster's tree has a child index outside"):
        load_skops(path)


def test_a_crafted_neighbours_index_is_refused(tmp_path, xy):
    model = KNeighborsClassifier(algorithm="kd_tree").fit(*xy)
    path = tmp_path / "knn.skops"
    skops_io.dump(model, path)
    import zipfile

    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    schema = json.loads(members["schema.json"])
    text = json.dumps(schema)
    assert "KDTree" in text
    # the index array is stored as a .npy member; replace the last row index by an out-of-range one
    index_member = _kd_index_member(schema)
    array = np.load(__import__("io").BytesIO(members[index_member]))
    array[-1] = 10**6
    buffer = __import__("io").BytesIO()
    np.save(buffer, array)
    members[index_member] = buffer.getvalue()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(InputError, match="neighbours index"):
        load_skops(path)


def _kd_index_member(schema) -> str:
    """The .npy member holding the KD-tree's idx_array (the state's second array)."""
    found: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("__class__") == "KDTree":
                content = node["content"]["content"]
                arrays = content if isinstance(content, list) else content.get("content", [])
                found.append(arrays[1]["file"])
                return
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return found[0]
