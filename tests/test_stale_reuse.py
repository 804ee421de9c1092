"""Nothing changed is reused: ONNX external data, PGDL configs and data, image folders' content (issue 30, item 2).

Each test changes one thing a stored result was computed from and checks
that a rerun computes it again (the code key: tests/test_checkpoint.py).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import fitaudit
from fitaudit import InputError
from fitaudit.cli import main
from fitaudit.data.io import save_npz
from fitaudit.options import RunOptions

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

N_IN = 3 * 4 * 4


def export_external(folder: Path, seed: int, *, name: str = "model.onnx", location: str = "weights.bin",
                    shape: tuple[int, ...] = (3, 4, 4), external: bool = True) -> Path:
    """A linear classifier on ``shape`` inputs as ONNX, its weights in the external file ``location`` (or inside)."""
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(int(np.prod(shape)), 3)).eval()
    plain = folder / f".{name}.plain"
    torch.onnx.export(net, torch.zeros(1, *shape), str(plain), input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "n"}, "logits": {0: "n"}}, dynamo=False)
    proto = onnx.load_model(str(plain))
    plain.unlink()
    (folder / location).parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(proto, str(folder / name), save_as_external_data=external, all_tensors_to_one_file=True,
                    location=location, size_threshold=0)
    return folder / name


def _data(tmp_path: Path, n: int = 30, shape: tuple[int, ...] = (3, 4, 4)) -> Path:
    rng = np.random.default_rng(0)
    return save_npz(tmp_path / "data.npz", rng.random((n, *shape)).astype(np.float32), np.arange(n) % 3)


# ----------------------------------------------------------------------------- ONNX external data
def test_an_onnx_models_fingerprint_covers_its_external_data(tmp_path):
    from fitaudit.models.fingerprint import model_fingerprint
    from fitaudit.models.onnx_files import onnx_external_files

    first = export_external(tmp_path / "a", seed=0)
    second = export_external(tmp_path / "b", seed=1)
    assert first.read_bytes() == second.read_bytes()  # the graph alone: byte-identical
    assert onnx_external_files(first) == [(tmp_path / "a" / "weights.bin").resolve()]
    assert model_fingerprint(first) != model_fingerprint(second.parent / "model.onnx")
    before = model_fingerprint(first)
    shutil.copyfile(second.parent / "weights.bin", first.parent / "weights.bin")
    assert model_fingerprint(first) != before


def test_external_data_outside_the_folder_or_missing_is_refused(tmp_path):
    from fitaudit.models.onnx_files import onnx_external_files

    model = export_external(tmp_path / "a", seed=0)
    (tmp_path / "a" / "weights.bin").unlink()
    with pytest.raises(InputError, match="external data file 'weights.bin' .* does not exist"):
        onnx_external_files(model)
    proto = onnx.load_model(str(export_external(tmp_path / "b", seed=0)), load_external_data=False)
    for tensor in proto.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = "../elsewhere.bin"
    onnx.save_model(proto, str(tmp_path / "b" / "escape.onnx"))
    with pytest.raises(InputError, match="not inside the model's folder"):
        onnx_external_files(tmp_path / "b" / "escape.onnx")


def test_runs_that_differ_only_in_external_data_are_not_copies(tmp_path):
    from fitaudit.overfit.runs import check_distinct_runs

    first, second = export_external(tmp_path / "a", 0), export_external(tmp_path / "b", 1)
    check_distinct_runs([first, second])  # refused as copies before: only the .onnx bytes were compared
    shutil.copytree(tmp_path / "a", tmp_path / "c")
    with pytest.raises(InputError, match="has the same weights as"):
        check_distinct_runs([first, tmp_path / "c" / "model.onnx"])


def test_an_audit_part_is_recomputed_when_the_external_weights_change(tmp_path):
    """Replacing weights.bin reused the old part (accuracy 0.802 reused, 0.047 fresh)."""
    from fitaudit.models import load_model

    model = export_external(tmp_path / "m", seed=0, shape=(6,))
    other = export_external(tmp_path / "other", seed=7, shape=(6,))
    x = np.random.default_rng(0).random((30, 6)).astype(np.float32)
    y = np.concatenate([load_model(model).predict(x[:20]), load_model(other).predict(x[20:])])  # both above chance
    data = save_npz(tmp_path / "data.npz", x, y)
    kwargs = {"checkpoint_dir": tmp_path / "out", "options": RunOptions(progress=False)}
    first = fitaudit.audit(model, data, **kwargs)
    assert first.subject["accuracy"] == pytest.approx(np.mean(load_model(model).predict(x) == y))
    shutil.copyfile(tmp_path / "other" / "weights.bin", tmp_path / "m" / "weights.bin")
    again = fitaudit.audit(model, data, **kwargs)
    fresh = float(np.mean(load_model(model).predict(x) == y))
    assert fresh != first.subject["accuracy"]
    assert not any(p.resumed for p in again.parts)
    assert again.part("accuracy").result.accuracy == pytest.approx(fresh)


def test_pgdl_import_keeps_external_data_files(tmp_path, capsys):
    models = tmp_path / "models"
    export_external(models, seed=0, name="m0.onnx", location="m0.bin")
    export_external(models, seed=1, name="m1.onnx", location="shared/m1.bin")
    table = tmp_path / "runs.csv"
    table.write_text("model,seed\nm0.onnx,0\nm1.onnx,1\n")
    out = tmp_path / "pop"
    data = _data(tmp_path)
    assert main(["pgdl", "import", "--models", str(models), "--table", str(table), "--train-data", str(data),
                 "--test-data", str(data), "--out", str(out), "--json"]) == 0
    imported = json.loads(capsys.readouterr().out)
    manifest = json.loads((out / "population.json").read_text())
    from fitaudit.models import load_model
    from fitaudit.pgdl import load_task

    population = load_task(out)
    x, y = np.load(data)["x"], np.load(data)["y"]
    for model_id in ("m0", "m1"):
        path = population.model_dir(model_id)
        assert path.is_file() and path.is_relative_to(out)
        accuracy = float(np.mean(load_model(models / f"{model_id}.onnx").predict(x) == y))
        assert imported["metrics"][model_id]["test_acc"] == pytest.approx(accuracy)
        assert float(np.mean(load_model(path).predict(x) == y)) == pytest.approx(accuracy)  # its own weights
    assert manifest["models"]["m1"]["path"] == "models/m1/m1.onnx" and (out / "models/m1/shared/m1.bin").is_file()


# ----------------------------------------------------------------------------- PGDL configs and data
@pytest.fixture
def population(tmp_path) -> Path:
    from fitaudit.pgdl.population_import import import_population

    models = tmp_path / "onnx-models"
    rows = ["model,width,train_acc,test_acc"]
    for i in range(4):
        export_external(models, seed=i, name=f"m{i}.onnx", external=False)
        rows.append(f"m{i}.onnx,{4 * (1 + i % 2)},1.0,{0.4 + 0.1 * i:.1f}")
    (tmp_path / "runs.csv").write_text("\n".join(rows) + "\n")
    data = _data(tmp_path)
    return import_population(models, tmp_path / "runs.csv", data, tmp_path / "pop").directory


def _reverse_gaps(folder: Path) -> None:
    path = folder / "population.json"
    manifest = json.loads(path.read_text())
    accuracies = [e["metrics"]["test_acc"] for e in manifest["models"].values()]
    for entry, test_acc in zip(manifest["models"].values(), reversed(accuracies)):
        entry["metrics"]["test_acc"] = test_acc
    path.write_text(json.dumps(manifest))


def test_pgdl_score_checkpoints_follow_the_models_configs(population, tmp_path):
    """noisy_gap reads the gap: reversed gaps were served the old values (score 43.88 instead of 100)."""
    from fitaudit.pgdl import load_task
    from fitaudit.pgdl.harness import score_task

    def scored():
        return score_task(load_task(population), ["noisy_gap"], options=RunOptions(progress=False), checkpoint_dir=tmp_path / "ckpt",
                          budget_s=None)

    first = scored()
    assert scored().reused_units == 4
    _reverse_gaps(population)
    again, fresh = scored(), score_task(load_task(population), ["noisy_gap"], options=RunOptions(progress=False), budget_s=None)
    assert again.reused_units == 0
    assert again.score("noisy_gap").values == fresh.score("noisy_gap").values != first.score("noisy_gap").values


def test_the_audits_pgdl_key_holds_the_configs_and_the_data(population, tmp_path):
    from fitaudit.auditing.parts import PGDL_MEASURES, pgdl_key
    from fitaudit.pgdl import load_task

    def key():
        return pgdl_key(load_task(population), PGDL_MEASURES, 0)

    before = key()
    assert key() == before
    _reverse_gaps(population)
    reversed_key = key()
    assert reversed_key != before
    x, y = np.load(population / "train.npz")["x"], np.load(population / "train.npz")["y"]
    save_npz(population / "train.npz", x, y[::-1].copy())
    assert key() != reversed_key


# ----------------------------------------------------------------------------- image folders
def _folder(root: Path) -> Path:
    from PIL import Image

    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        (root / name).mkdir(parents=True)
        for i in range(3):
            pixels = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / name / f"{i}.png", compress_level=0)  # size set by the shape
    return root


def _replace_keeping_size_and_time(path: Path) -> None:
    """Another picture in the file, of the same size, with the old modification time."""
    from PIL import Image

    info = path.stat()
    inverted = 255 - np.asarray(Image.open(path))
    Image.fromarray(inverted).save(path, compress_level=0)
    assert path.stat().st_size == info.st_size
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def test_image_folders_are_keyed_by_content_by_default_when_small(tmp_path, monkeypatch):
    import dataclasses

    import fitaudit.data.images as images

    folder = _folder(tmp_path / "imgs")
    dataset = images.open_images(folder)
    assert dataset.key_rule() == "content" and dataset.subset([0, 1]).key_rule() == "content"
    by_stat = dataclasses.replace(dataset, verify_content=False)
    keys = (dataset.fingerprint(), by_stat.fingerprint())
    _replace_keeping_size_and_time(folder / "a" / "1.png")
    assert dataset.fingerprint() != keys[0]  # the content changed
    assert by_stat.fingerprint() == keys[1]  # the sizes and times did not: the documented limit of that rule
    monkeypatch.setattr(images, "CONTENT_KEY_LIMIT", 10)
    assert dataset.key_rule() == "stat" and dataset.subset([0]).key_rule() == "stat"
    assert dataclasses.replace(dataset, verify_content=True).key_rule() == "content"


@pytest.mark.slow
def test_the_audit_recomputes_after_an_in_place_edit_and_says_which_rule_matched(tmp_path, capsys):
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    config = {"architecture": "mlp", "kwargs": {"in_features": 3 * 6 * 6, "hidden_sizes": [], "n_classes": 2},
              "classes": ["a", "b"], "pipeline": {"resize": 12, "crop": 6}}
    torch.manual_seed(0)
    model = save_torch_model(build_architecture(config), config, tmp_path / "model")
    folder = _folder(tmp_path / "imgs")
    argv = ["audit", "--model", str(model), "--images", str(folder), "--out", str(tmp_path / "out"), "--quiet"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(argv) == 0
    assert "images matched by the files' content." in capsys.readouterr().out
    _replace_keeping_size_and_time(folder / "b" / "2.png")
    assert main([*argv, "--json"]) == 0
    parts = json.loads(capsys.readouterr().out)["parts"]
    assert not any(p.get("resumed") for p in parts)
    assert main([*argv, "--no-verify-content"]) == 0 and main([*argv, "--no-verify-content"]) == 0
    out = capsys.readouterr().out
    assert "images matched by the files' sizes and modification times (--verify-content to read them)." in out
    assert main(["audit", "--model", str(model), "--data", "x.npz", "--verify-content", "--out", str(tmp_path)]) == 2
    assert "`--verify-content` goes with `--images`" in capsys.readouterr().err
