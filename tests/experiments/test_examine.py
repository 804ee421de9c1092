"""The examiner reproductions in quick mode: they run, report what they claim, and resume."""

from __future__ import annotations

import json

import pytest

#: every test here takes seconds (README.md: the fast command leaves them out)
pytestmark = pytest.mark.slow

pytest.importorskip("torch")

from fitaudit.experiments.examine import (  # noqa: E402
    ExaminerReproduction,
    reproduce_examiner_planted,
    reproduce_examiner_renders,
    reproduce_examiner_table,
    reproduce_examiner_variants,
)
from fitaudit.results import Result  # noqa: E402


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


def test_table(models, tmp_path):
    result = reproduce_examiner_table(mode="quick", checkpoint_dir=tmp_path, models_dir=models, progress=False)
    assert isinstance(result, ExaminerReproduction) and result.experiment == "examiner-table"
    labels = [r["label"] for r in result.rows]
    assert "alexnet rl (best per class)" in labels and "resnet random (random)" in labels
    rl = next(r for r in result.rows if r["label"] == "alexnet rl (best per class)")
    assert rl["model_queries"] == rl["n_instances"] * 6 * 32 and rl["paper"][500] == 2.27
    assert set(rl["at_steps"]) == {0, 2, 4, 6} and 0 <= rl["worst_found"] <= min(rl["at_steps"].values())
    assert len(result.findings) == 6
    again = reproduce_examiner_table(mode="quick", checkpoint_dir=tmp_path, models_dir=models, progress=False)
    assert again.rows == result.rows  # resumed from the checkpoints: the same numbers
    back = Result.from_dict(json.loads(result.to_json()))
    assert back.rows[0]["label"] == result.rows[0]["label"]
    from fitaudit.report import render

    assert render(back, "markdown", brief=True).startswith("examiner-table (quick mode):")
    assert "| alexnet rl (best per class) | 6 | 1,152 |" in render(back, "markdown")
    assert len([ax for ax in render(back, "figure").axes if ax.lines]) == 2  # one panel per model family


def test_renders_planted_variants(models, tmp_path):
    renders = reproduce_examiner_renders(mode="quick", checkpoint_dir=tmp_path, models_dir=models, progress=False)
    assert {r["renders_per_object"] for r in renders.rows} == {1, 10}
    assert renders.rows[0]["paper"] == {200: 18.92} and "m=1" in renders.models  # m=1, RL
    planted = reproduce_examiner_planted(mode="quick", checkpoint_dir=tmp_path, models_dir=models, progress=False)
    row = planted.rows[0]
    assert row["label"] == "planted rl" and isinstance(row["rules_name_elevation"], bool)
    assert planted.models["planted"]["settings"]["elevation_limit"] == 30.0
    assert any("|elevation| > 30" in line for line in planted.findings)
    variants = reproduce_examiner_variants(mode="quick", checkpoint_dir=tmp_path, models_dir=models, progress=False)
    assert [r["maximize"] for r in variants.rows] == [True, True, False, True, False]
    assert variants.findings[0].startswith("RL factor order")


def test_images_known_answer_through_the_cli(tmp_path, capsys):
    """``fitaudit reproduce examiner-images --quick``: rotation augmentation helps, rules name rotation."""
    from fitaudit.cli import main
    from fitaudit.experiments.examine import ImageExaminerReproduction

    out = tmp_path / "out"
    code = main(["reproduce", "examiner-images", "--quick", "--out", str(out), "--models-dir", str(tmp_path / "m"),
                 "--quiet"])
    stdout = capsys.readouterr().out
    assert code == 0
    assert "examiner-images (quick mode):" in stdout and "as expected" in stdout
    data = json.loads((out / "examiner-images-quick.json").read_text())
    result = Result.from_dict(data)
    assert isinstance(result, ImageExaminerReproduction)
    grids = {r["label"]: r for r in result.rows if r["examiner"] == "grid"}
    plain, augmented = grids["plain grid"], grids["rotation-augmented grid"]
    assert plain["model_queries"] == plain["n_instances"] * 775
    # the known answer: more robust to rotation with augmentation; the plain model's rules name rotation
    assert augmented["rotation_worst_case_accuracy"] > plain["rotation_worst_case_accuracy"]
    assert plain["headline_names_rotation"] and "rotation" in plain["rules"][0]
    # the plain model's weakness is rotation: right far less often at large rotations than at small ones
    assert plain["rotation_profile"]["large"] < plain["rotation_profile"]["small"] - 0.1
    assert augmented["rotation_profile"]["large"] > plain["rotation_profile"]["large"]
    for r in result.rows:
        if r["examiner"] != "grid":
            assert r["model_queries"] == r["n_instances"] * 78
            assert 0 <= r["found"] <= r["grid_failures"] and 0.0 <= r["worst_case_accuracy"] <= 1.0
    markdown = (out / "examiner-images-quick.md").read_text()
    assert "| plain bo | 10 | 78 |" in markdown and "Space checks" in markdown
    assert (out / "examiner-images-quick.png").is_file()
