"""The ``large`` zoo size: 81 members over 4 hyperparameters x 3 values (defined and checked, not built here)."""

from __future__ import annotations

import json
import types

import pytest

pytest.importorskip("torch")

from fitaudit.cli import main  # noqa: E402
from fitaudit.models.architectures import build_architecture  # noqa: E402
from fitaudit.pgdl import zoo as Z  # noqa: E402


@pytest.mark.parametrize("name", ["digits", "shapes"])
def test_large_grid_is_81_members_of_4_hyperparameters_with_3_values(name: str) -> None:
    spec, data = Z.default_zoo(name, "large")
    default, _ = Z.default_zoo(name, "default")
    assert spec.name == f"{name}-large" and list(spec.grid) == ["width", "dropout", "weight_decay", "batch_size"]
    assert all(len(set(values)) == 3 for values in spec.grid.values())
    points = spec.points()
    assert len(points) == 81 and len({tuple(p.values()) for p in points}) == 81
    # the default size's architecture, data, optimizer and stopping rule (100% train accuracy or CE 0.01)
    assert (spec.architecture, spec.fixed, spec.max_epochs, spec.optimizer) == (default.architecture, default.fixed, default.max_epochs, default.optimizer)
    assert (spec.target_accuracy, spec.target_loss) == (1.0, 0.01)
    fixed = Z._check_spec(spec, data)
    for width in spec.grid["width"]:
        for dropout in spec.grid["dropout"]:
            build_architecture({"architecture": spec.architecture, "kwargs": {**fixed, "width": width, "dropout": dropout}})


def test_cli_builds_the_large_size(monkeypatch, tmp_path, capsys) -> None:
    from fitaudit.pgdl import zoo_task

    calls = {}

    def fake_build(out, zoo, **kwargs):
        calls.update(zoo=zoo, **kwargs)
        member = types.SimpleNamespace(model_id="1", hparams={"width": 8}, train_acc=1.0, test_acc=0.5, epochs=3,
                                       converged=True, seconds=0.5)
        spec = types.SimpleNamespace(name="shapes-large", grid=Z.LARGE_GRIDS["shapes"])
        return out, types.SimpleNamespace(spec=spec, members=[member], build_seconds=0.5)

    monkeypatch.setattr(zoo_task, "build_zoo_task", fake_build)
    assert main(["pgdl", "zoo", "build", "--zoo", "shapes", "--size", "large", "--out", str(tmp_path / "t"), "--json", "--quiet"]) == 0
    assert calls["size"] == "large" and json.loads(capsys.readouterr().out)["zoo"] == "shapes-large"
