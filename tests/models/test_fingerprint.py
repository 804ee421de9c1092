"""One model fingerprint: file bytes for paths, weights for in-memory models."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from fitaudit._errors import InputError
from fitaudit.models import as_classifier
from fitaudit.models.fingerprint import file_digest, model_fingerprint


def test_file_digest_follows_bytes_and_names(tmp_path):
    a = tmp_path / "a"
    a.mkdir()
    (a / "weights.safetensors").write_bytes(b"\x00\x01")
    (a / "config.json").write_text("{}")
    b = tmp_path / "b"
    b.mkdir()
    (b / "config.json").write_text("{}")
    (b / "weights.safetensors").write_bytes(b"\x00\x01")
    assert file_digest(a) == file_digest(b)
    (b / "weights.safetensors").write_bytes(b"\x00\x02")
    assert file_digest(a) != file_digest(b)
    (b / "weights.safetensors").rename(b / "other.safetensors")
    (b / "other.safetensors").write_bytes(b"\x00\x01")
    assert file_digest(a) != file_digest(b)  # the name counts too
    import hashlib

    single = tmp_path / "m.onnx"
    single.write_bytes(b"abc")
    expected = hashlib.sha256(b"m.onnx" + b"abc").hexdigest()
    assert file_digest(single) == expected
    assert model_fingerprint(single) == "file:" + expected
    assert model_fingerprint(str(single)) == model_fingerprint(single)


def test_model_fingerprint_follows_weights_not_identity():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(60, 3)), rng.integers(0, 2, 60)
    a = DecisionTreeClassifier(random_state=0).fit(x, y)
    b = DecisionTreeClassifier(random_state=0).fit(x, y)
    c = DecisionTreeClassifier(random_state=0, max_depth=1).fit(x, y)
    assert model_fingerprint(a) == model_fingerprint(b) != model_fingerprint(c)
    assert model_fingerprint(as_classifier(a)) == model_fingerprint(a)


def test_unfingerprintable_model_names_the_way_out():
    with pytest.raises(InputError, match="pass it as a file path"):
        model_fingerprint(object())


def test_evaluation_fingerprint_adds_how_a_torch_model_runs(tmp_path):
    torch = pytest.importorskip("torch")
    from fitaudit.checkpoint import fingerprint
    from fitaudit.models.fingerprint import evaluation_fingerprint
    from fitaudit.models.inference import using_backend

    torch.manual_seed(0)
    net = torch.nn.Linear(4, 3)
    weights = model_fingerprint(net)
    eager, auto = as_classifier(net, backend="torch"), as_classifier(net, backend="auto")
    assert evaluation_fingerprint(eager) == weights + "|backend=torch|device=cpu"
    assert evaluation_fingerprint(auto) == weights + "|backend=auto|device=cpu"
    assert evaluation_fingerprint(as_classifier(net, backend="torch")) == evaluation_fingerprint(eager)
    # checkpoints keyed by the adapter itself (examine, the one-model test) follow the backend too
    assert fingerprint(eager) != fingerprint(auto)
    assert fingerprint(eager) == fingerprint(as_classifier(net, backend="torch"))
    # an unwrapped module or a torch folder runs on the process default backend
    with using_backend("torch"):
        assert evaluation_fingerprint(net) == evaluation_fingerprint(eager)
        folder = tmp_path / "run"
        folder.mkdir()
        (folder / "config.json").write_text("{}")
        assert evaluation_fingerprint(folder) == model_fingerprint(folder) + "|backend=torch|device=cpu"
    # other models run as they are: the weights alone
    onnx = tmp_path / "m.onnx"
    onnx.write_bytes(b"abc")
    assert evaluation_fingerprint(onnx) == model_fingerprint(onnx)
    tree = DecisionTreeClassifier(random_state=0).fit([[0.0], [1.0]], [0, 1])
    assert evaluation_fingerprint(as_classifier(tree)) == model_fingerprint(tree)


def _gradient_boosting_models():
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return {
        "hist_gradient_boosting": lambda: HistGradientBoostingClassifier(max_iter=5, random_state=0),
        "gradient_boosting": lambda: GradientBoostingClassifier(n_estimators=5, random_state=0),
        "column_transformer_pipeline": lambda: make_pipeline(
            ColumnTransformer([("num", make_pipeline(SimpleImputer(), StandardScaler()), [0, 1, 2])]),
            HistGradientBoostingClassifier(max_iter=3, random_state=0)),
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_gradient_boosting_models()))
def test_gradient_boosting_and_pipelines_are_fingerprinted_by_their_fit(name):
    """Their Cython loss objects and ColumnTransformer slices were refused ("cannot fingerprint")."""
    make = _gradient_boosting_models()[name]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, 4))
    x[::7, 1] = np.nan  # the imputer and HistGradientBoosting take missing values
    y = (np.nan_to_num(x[:, 0]) + rng.normal(scale=0.5, size=80) > 0).astype(int)
    if name == "gradient_boosting":
        x = np.nan_to_num(x)
    a, b = make().fit(x, y), make().fit(x, y)
    c = make().fit(x, 1 - y)  # other labels: another fitted model
    assert model_fingerprint(a) == model_fingerprint(b) != model_fingerprint(c)
