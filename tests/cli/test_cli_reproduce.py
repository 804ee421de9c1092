"""``fitaudit reproduce NAME``: every reproduction is registered; files, findings and JSON of one."""

from __future__ import annotations

import json

import pytest

from fitaudit.cli import build_parser, main
from fitaudit.cli.reproduce import REPRODUCTIONS
from fitaudit.experiments.catalogue import FUNCTIONS
from fitaudit.experiments.pmv import reproduce_pmv_mlp_width


def test_every_reproduction_is_a_subcommand_with_its_modes():
    parser = build_parser()
    names = {spec.name for spec in REPRODUCTIONS}
    assert {"overfit-synthetic", "overfit-shapes", "pmv-comparison", "pmv-tree-depth", "pmv-mlp-width"} <= names
    for spec in REPRODUCTIONS:
        args = parser.parse_args(["reproduce", spec.name])
        assert args.mode == spec.default_mode and args.out == f"fitaudit-out/{spec.name}" and args.seed == 0
        assert parser.parse_args(["reproduce", spec.name, "--quick"]).mode == "quick"
    assert parser.parse_args(["reproduce", "overfit-synthetic", "--full"]).mode == "full"
    assert names == set(FUNCTIONS)  # each command runs the library function of its name


@pytest.mark.slow
def test_quick_run_writes_files_prints_findings_and_json(tmp_path, capsys):
    argv = ["reproduce", "pmv-mlp-width", "--quick", "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("PMV selects hidden width ")
    for suffix in ("json", "md", "png"):
        assert (tmp_path / f"pmv-mlp-width-quick.{suffix}").stat().st_size > 0
        assert f"pmv-mlp-width-quick.{suffix}" in out
    assert main([*argv, "--json"]) == 0  # resumed from tmp_path/checkpoints
    printed = json.loads(capsys.readouterr().out)
    expected = reproduce_pmv_mlp_width(mode="quick", progress=False).to_dict()
    assert printed.keys() == {"verdict", *expected.keys()}  # --json adds the verdict contract
    assert printed["pmv"] == expected["pmv"] and printed["validation_error"] == expected["validation_error"]
    assert json.loads((tmp_path / "pmv-mlp-width-quick.json").read_text())["pmv"] == printed["pmv"]


def test_out_naming_a_file_is_one_line(tmp_path, capsys):
    target = tmp_path / "taken"
    target.write_text("")
    assert main(["reproduce", "pmv-mlp-width", "--quick", "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "`--out` must be a folder" in err and "is an existing file" in err
