"""Issue 51, item 7: the user guide's worked example for your own torch CNN runs as written.

The code blocks of *Your own torch CNN, start to finish*
(``docs/bring-your-model.md``) are taken from the page and run: ``net.py``
is written, the save script runs (``save_torch_model`` with classes and
pipeline), the model loads back as the commands load it, and ``fitaudit
inspect`` reads the classes and the pipeline from the folder.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("safetensors")

PAGE = Path(__file__).resolve().parents[2] / "docs" / "bring-your-model.md"
SECTION = "### Your own torch CNN, start to finish"


def _blocks(language: str) -> list[str]:
    text = PAGE.read_text()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)


def test_the_worked_example_saves_loads_and_inspects(tmp_path, monkeypatch, capsys):
    from PIL import Image

    from fitaudit.cli import main
    from fitaudit.models import load_model
    from fitaudit.models.io import read_model_metadata

    net_py, save, *_ = _blocks("python")
    assert net_py.startswith("# net.py")
    (tmp_path / "net.py").write_text(net_py)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict = {}
    exec(compile(save, "bring-your-model.md", "exec"), namespace)  # the page's save-and-load script, as written
    sys.modules.pop("net", None)
    assert capsys.readouterr().out == "3 ['cat', 'dog', 'fox']\n"  # what the page's comment says it prints
    saved = json.loads((tmp_path / "my-cnn" / "config.json").read_text())
    assert saved["architecture"] == {"file": "net.py", "class": "SmallCNN"} and saved["pipeline"]["crop"] == 32
    assert (tmp_path / "my-cnn" / "net.py").read_text() == net_py  # the code kept beside the weights

    model = load_model(str(tmp_path / "my-cnn"), trust_code=True)
    x = np.random.default_rng(0).random((4, 3, 32, 32), dtype=np.float32)
    expected = namespace["net"].eval()(__import__("torch").from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(model.logits(x), expected, rtol=1e-4, atol=1e-5)
    assert model.n_classes == 3 and read_model_metadata(str(tmp_path / "my-cnn")).classes == ["cat", "dog", "fox"]

    for name in ("cat", "dog", "fox"):  # a small val/ folder for the page's inspect command
        (tmp_path / "val" / name).mkdir(parents=True)
        for i in range(3):
            pixels = np.random.default_rng(i).integers(0, 256, (40, 44, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(tmp_path / "val" / name / f"{i}.png")
    inspect_line = next(line for line in _blocks("bash")[0].splitlines() if line.startswith("fitaudit inspect"))
    assert main([*inspect_line.split()[1:], "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pipeline"]["used"]["crop"] == 32 and out["pipeline"]["used"]["resize"] == 36
    assert main(inspect_line.split()[1:-1] + ["--quiet"]) == 2  # without --trust-code: refused, net.py not run
    assert "--trust-code" in capsys.readouterr().err


def test_save_refuses_a_class_the_config_does_not_name(tmp_path):
    import torch

    from fitaudit._errors import InputError
    from fitaudit.models import save_torch_model

    with pytest.raises(InputError, match="'Other', but `module` is a Linear"):
        save_torch_model(torch.nn.Linear(2, 2), {"architecture": {"file": "net.py", "class": "Other"}}, tmp_path)
    with pytest.raises(InputError, match="inside the model folder"):
        save_torch_model(torch.nn.Linear(2, 2), {"architecture": {"file": "../net.py", "class": "Linear"}}, tmp_path)
