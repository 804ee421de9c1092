"""The PMV reproductions run end to end in --quick mode and write JSON, markdown and PNG."""

from __future__ import annotations

import json

import pytest

from fitaudit.cli import main


@pytest.mark.parametrize("experiment", ["pmv-comparison", "pmv-tree-depth", "pmv-mlp-width"])
def test_quick_reproduction_writes_its_files(experiment: str, tmp_path, capsys) -> None:
    assert (
        main(["reproduce", experiment, "--quick", "--out", str(tmp_path), "--json", "--quiet"]) == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert payload["experiment"] == experiment
    for kind in ("json", "md", "png"):
        assert (tmp_path / f"{experiment}.{kind}").stat().st_size > 0
    assert json.loads((tmp_path / f"{experiment}.json").read_text())["quick"] is True
    assert "|---" in (tmp_path / f"{experiment}.md").read_text()
