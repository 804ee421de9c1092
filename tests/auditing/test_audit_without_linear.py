"""A torch model without a linear layer (convolutions ending in global pooling) is audited: its penultimate
leakage part is skipped with the reason, the other parts complete (issue 40).

Before, the audit stopped twice: the model records no class count (read from a last linear layer), so
``n_classes`` raised before any part ran; and the penultimate-feature search raised "no torch.nn.Linear
layer" inside the audit, ending it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fitaudit import audit
from fitaudit.auditing.checks import CHECKS
from fitaudit.cli import main
from fitaudit.data.io import save_npz
from fitaudit.models import load_model
from fitaudit.options import RunOptions

#: this module's audits run without progress bars
QUIET = RunOptions(progress=False)

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

NET = ("import torch\n\n\nclass Net(torch.nn.Sequential):\n    def __init__(self, n_classes=2):\n"
       "        super().__init__(torch.nn.Conv2d(3, n_classes, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())\n")

#: the first questions only: the other instruments are not what this checks (and the examiner takes minutes)
FIRST = [check for check in CHECKS if check.instrument == "first"]


@pytest.fixture
def conv_model(tmp_path: Path) -> dict[str, Path]:
    """A torch folder (net.py, config.json, weights) whose class k is the mean of channel k; data it labels."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "net.py").write_text(NET)
    (folder / "config.json").write_text(json.dumps({"architecture": {"file": "net.py", "class": "Net"},
                                                    "kwargs": {"n_classes": 2}}))
    namespace: dict = {}
    exec(NET, namespace)  # the test's own source, as the folder holds it
    net = namespace["Net"](2)
    with torch.no_grad():
        net[0].weight.zero_()
        net[0].bias.zero_()
        net[0].weight[0, 0] = 1.0
        net[0].weight[1, 1] = 1.0
    safetensors_torch.save_model(net, str(folder / "weights.safetensors"))
    pool = np.random.default_rng(0).random((200, 3, 8, 8)).astype(np.float32)
    labels = (pool[:, 1].mean(axis=(1, 2)) > pool[:, 0].mean(axis=(1, 2))).astype(np.int64)
    return {"model": folder, "data": save_npz(tmp_path / "data.npz", pool[:40], labels[:40]),
            "train": save_npz(tmp_path / "train.npz", pool[40:100], labels[40:100]), "out": tmp_path / "out"}


def _parts(parts: list) -> dict[str, tuple[str, str]]:
    return {p["id"]: (p["verdict"]["status"], p["verdict"]["reason"]) for p in parts}


@pytest.mark.slow
def test_the_audit_skips_the_penultimate_search_and_completes_the_rest(conv_model: dict[str, Path]) -> None:
    model = load_model(conv_model["model"], trust_code=True)
    result = audit(model, data=conv_model["data"], train_data=conv_model["train"], options=QUIET, checks=FIRST)
    parts = {p.id: p for p in result.parts}
    assert result.subject["n_classes"] == 2 and result.subject["accuracy"] > 0.7  # labels: means of whole channels
    penultimate = parts["leakage-penult"]
    assert (penultimate.status, penultimate.verdict.reason) == ("skipped", "no_penultimate_features")
    assert "no torch.nn.Linear layer" in penultimate.sentence and "searched the scored images" in penultimate.sentence
    assert parts["leakage"].status in ("pass", "fail", "inconclusive") and parts["leakage"].result.n_scored == 40
    assert parts["accuracy"].status == "info"


@pytest.mark.slow
def test_the_command_exits_0_with_the_part_and_its_reason(conv_model: dict[str, Path], monkeypatch, capsys) -> None:
    monkeypatch.setattr("fitaudit.auditing.CHECKS", tuple(FIRST))
    code = main(["audit", "--model", str(conv_model["model"]), "--trust-code", "--data", str(conv_model["data"]),
                 "--train-data", str(conv_model["train"]), "--out", str(conv_model["out"]), "--quiet"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in err
    saved = json.loads((conv_model["out"] / "audit.json").read_text())
    parts = _parts(saved["parts"])
    assert parts["leakage-penult"] == ("skipped", "no_penultimate_features")
    assert parts["leakage"][0] != "skipped"
    line = next(line for line in out.splitlines() if "penultimate features" in line)
    assert "[skip]" in line and "no torch.nn.Linear layer" in line


@pytest.mark.slow
def test_image_folders_audit_it_too(conv_model: dict[str, Path], tmp_path: Path) -> None:
    """The same model on PNG folders: its class count comes from its logits on the decoded images."""
    from PIL import Image

    from fitaudit.data.io import load_npz

    roots = {}
    for name in ("data", "train"):
        x, y = load_npz(conv_model[name])
        roots[name] = tmp_path / "folders" / name
        for i, (image, label) in enumerate(zip(x, y)):
            (roots[name] / str(label)).mkdir(parents=True, exist_ok=True)
            pixels = np.rint(np.moveaxis(image, 0, -1) * 255).astype(np.uint8)
            Image.fromarray(pixels).save(roots[name] / str(label) / f"{i:03d}.png")
    model = load_model(conv_model["model"], trust_code=True)
    result = audit(model, images=roots["data"], train_images=roots["train"], pipeline={"resize": 8, "crop": 8},
                   options=QUIET, checks=FIRST)
    parts = {p.id: p for p in result.parts}
    assert result.subject["n_classes"] == 2 and result.subject["accuracy"] > 0.7
    assert parts["leakage"].status != "skipped" and parts["leakage"].result.n_scored == 40
