"""``fitaudit reproduce overfit-synthetic --quick``: outputs, expected shape, resume."""

from __future__ import annotations

import json

import numpy as np

from fitaudit.cli import main


def test_quick_reproduction_writes_json_and_png_and_resumes(tmp_path, capsys):
    argv = [
        "reproduce", "overfit-synthetic", "--quick", "--repetitions", "1", "--steps", "200",
        "--out", str(tmp_path), "--json", "--quiet",
    ]
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    saved = json.loads((tmp_path / "overfit_synthetic.json").read_text())
    assert (tmp_path / "overfit_synthetic.png").stat().st_size > 10_000
    assert printed["mean_pvalue"] == saved["mean_pvalue"]
    eps = np.array(saved["eps"])
    assert eps[0] == 0.01 and eps[-1] == 100 and saved["n_values"] == [1, 2, 10]
    dependent = np.array(saved["mean_pvalue"]["dependent"])
    independent = np.array(saved["mean_pvalue"]["independent"])
    assert dependent.shape == independent.shape == (3, len(eps))
    assert np.all(independent > 0.05)  # never rejected
    assert np.all(dependent[:, 0] == 1.0)  # eps -> 0: nothing moves
    assert dependent.min() < 0.05  # rejected in the middle range of eps
    assert 0.2 < saved["mean_error_rate"]["dependent"] < 0.3  # 0 on the trained half, ~1/2 elsewhere

    assert main(argv) == 0  # every unit comes from the checkpoints now
    again = json.loads(capsys.readouterr().out)
    assert again["mean_pvalue"] == saved["mean_pvalue"]
    assert again["seconds"] < saved["seconds"]
