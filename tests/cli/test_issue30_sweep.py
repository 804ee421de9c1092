"""The command-line cases of issue 30 (items 8, 9, 10), swept: each ends in exit code 2 with one line naming the
option or file (never a traceback), or, for a damaged checkpoint, in a recomputation with a note; no silent
wrong number (a margin of 6.7 read as 6, a train_acc of 5.0 accepted, a one-column ONNX output met with a
Python hint)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fitaudit.cli import main
from fitaudit.data.io import save_npz

torch = pytest.importorskip("torch")

MLP = {"architecture": "mlp", "kwargs": {"in_features": 4, "hidden_sizes": [6], "n_classes": 2}}


def assert_one_line_error(err: str, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fitaudit: error: ") and "Traceback" not in err, lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def save_mlp(folder: Path, seed: int = 0) -> Path:
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    torch.manual_seed(seed)
    return save_torch_model(build_architecture(MLP), MLP, folder)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """A 4-input, 2-class MLP and 40 rows labelled by its own predictions (above chance)."""
    from fitaudit.models import load_model

    model = save_mlp(tmp_path / "net")
    x = np.random.default_rng(0).normal(size=(400, 4)).astype(np.float32)
    predicted = load_model(model).predict(x)
    rows = np.concatenate([np.flatnonzero(predicted == c)[:20] for c in (0, 1)])
    return {"model": model, "data": save_npz(tmp_path / "data.npz", x[rows], predicted[rows]), "tmp": tmp_path}


def _images_csv(tmp_path: Path, labels: list[str]) -> Path:
    from PIL import Image

    (tmp_path / "img").mkdir(exist_ok=True)
    rows = ["path,label"]
    for i, label in enumerate(labels):
        Image.new("RGB", (8, 8), (i * 40, 0, 0)).save(tmp_path / "img" / f"{i}.png")
        rows.append(f"img/{i}.png,{label}")
    path = tmp_path / "list.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- item 8: no traceback
@pytest.mark.parametrize("label", ["--1", "²", "10**30", "1000000000000000000000000000000"])
def test_csv_labels_that_are_no_output_index(files, label, capsys):
    csv_file = _images_csv(files["tmp"], ["0", "1", label])
    argv = ["leakage", "--images", str(csv_file), "--train-images", str(csv_file), "--resize", "8", "--crop", "8",
            "--quiet"]
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, "`--images`", "list.csv")


def test_an_object_array_margin_in_an_audit_npz(files, capsys):
    x, y = np.load(files["data"])["x"], np.load(files["data"])["y"]
    path = files["tmp"] / "object.npz"
    np.savez(path, x=x, y=y, margin=np.array([1, "a"], dtype=object))
    assert main(["audit", "--model", str(files["model"]), "--data", str(path), "--out", str(files["tmp"] / "o"),
                 "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--data`", "margin")


@pytest.mark.parametrize("margin", [np.float64(6.7), np.str_("6"), np.array([6, 6])])
def test_an_npz_margin_that_is_not_one_integer_is_refused(files, margin, capsys):
    """6.7 and "6" were read as 6 (item 10)."""
    x, y = np.load(files["data"])["x"], np.load(files["data"])["y"]
    path = files["tmp"] / "margin.npz"
    np.savez(path, x=x, y=y, margin=margin)
    assert main(["audit", "--model", str(files["model"]), "--data", str(path), "--out", str(files["tmp"] / "o"),
                 "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--data`", "'margin' must be one integer")


def test_an_architecture_given_as_a_list(files, capsys):
    config = json.loads((files["model"] / "config.json").read_text())
    config["architecture"] = ["linear"]
    (files["model"] / "config.json").write_text(json.dumps(config))
    assert main(["inspect", "--model", str(files["model"])]) == 2
    assert_one_line_error(capsys.readouterr().err, "must be a built-in architecture")


def test_deeply_nested_json_in_a_config_and_in_an_audit(files, capsys):
    nested = "[" * 100_000 + "]" * 100_000
    (files["model"] / "config.json").write_text('{"architecture": "mlp", "kwargs": ' + nested + "}")
    assert main(["inspect", "--model", str(files["model"])]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--model`", "is not valid JSON")
    (files["tmp"] / "audit.json").write_text('{"type": "AuditResult", "parts": ' + nested + "}")
    assert main(["report", str(files["tmp"] / "audit.json")]) == 2
    assert_one_line_error(capsys.readouterr().err, "AUDIT_JSON")


def test_a_truncated_part_checkpoint_is_computed_again(files, capsys):
    out = files["tmp"] / "out"
    argv = ["audit", "--model", str(files["model"]), "--data", str(files["data"]), "--out", str(out), "--quiet",
            "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    parts = sorted((out / "parts").glob("*.json"))
    assert parts
    for part in parts:
        part.write_bytes(part.read_bytes()[: len(part.read_bytes()) // 2])  # a damaged file, as a bad disk leaves
    assert main(argv) == 0
    captured = capsys.readouterr()
    again = json.loads(captured.out)
    assert "could not be read back" in captured.err and "computed again" in captured.err
    assert not any(p.get("resumed") for p in again["parts"])
    assert [p["numbers"] for p in again["parts"]] == [p["numbers"] for p in first["parts"]]


@pytest.mark.slow
def test_a_truncated_leakage_block_is_computed_again(files, capsys):
    rng = np.random.default_rng(3)
    images = save_npz(files["tmp"] / "img.npz", rng.random((20, 3, 8, 8)).astype(np.float32), np.arange(20) % 2)
    argv = ["leakage", "--data", str(images), "--train-data", str(images), "--checkpoint-dir",
            str(files["tmp"] / "ckpt"), "--quiet", "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    blocks = sorted((files["tmp"] / "ckpt").glob("*.npz"))
    assert blocks
    blocks[0].write_bytes(blocks[0].read_bytes()[:50])
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "could not be read back" in captured.err
    assert json.loads(captured.out) == first


@pytest.mark.parametrize("seed", [str(2**32), str(10**30), "1.5"])
def test_a_seed_numpy_or_scikit_learn_cannot_take(files, seed, capsys):
    argv = ["audit", "--model", str(files["model"]), "--data", str(files["data"]), "--out", str(files["tmp"] / "o"),
            "--seed", seed, "--quiet"]
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, "--seed")


def test_a_dask_scheduler_that_is_no_address(files, capsys):
    argv = ["audit", "--model", str(files["model"]), "--data", str(files["data"]), "--out", str(files["tmp"] / "o"),
            "--dask-scheduler", "notaurl", "--quiet"]
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, "--dask-scheduler", "tcp://")


def test_edited_audit_values_out_of_range(files, capsys):
    out = files["tmp"] / "out"
    assert main(["audit", "--model", str(files["model"]), "--data", str(files["data"]), "--out", str(out),
                 "--quiet"]) == 0
    capsys.readouterr()
    data = json.loads((out / "audit.json").read_text())
    for edit in ({"seconds": "soon"}, {"random_state": {"a": 1}}, {"parts": "none"}, {"subject": [1, 2]}):
        (out / "audit.json").write_text(json.dumps({**data, **edit}))
        code = main(["report", str(out / "audit.json")])
        err = capsys.readouterr().err
        assert code in (0, 2) and "Traceback" not in err
        if code == 2:
            assert_one_line_error(err, "AUDIT_JSON")


def test_errors_name_the_options_not_the_python_arguments(files, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["pgdl", "score", "--task", str(tmp_path / "empty"), "--measure", "weight_norm", "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--task`")
    np.savez(tmp_path / "nox.npz", y=np.zeros(3))
    assert main(["audit", "--model", str(files["model"]), "--data", str(tmp_path / "nox.npz"), "--out",
                 str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert_one_line_error(err, "`--data`")
    assert "`data`" not in err


def test_a_population_or_task_claiming_an_accuracy_above_one(tmp_path, capsys):
    """A train_acc of 5.0 was accepted (a gap of 4)."""
    pop = tmp_path / "pop"
    (pop / "models").mkdir(parents=True)
    save_npz(pop / "train.npz", np.zeros((4, 4), dtype=np.float32), np.array([0, 1, 0, 1]))
    models = {f"m{i}": {"format": "torch", "path": f"models/m{i}", "hparams": {"w": i},
                        "metrics": {"train_acc": 5.0 if i else 1.0, "test_acc": 0.5}} for i in range(2)}
    for i in range(2):
        save_mlp(pop / "models" / f"m{i}", seed=i)
    (pop / "population.json").write_text(json.dumps({"version": 1, "models": models, "possible_values": {"w": [0, 1]}}))
    assert main(["pgdl", "score", "--task", str(pop), "--measure", "weight_norm", "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--task`", "train_acc must be an accuracy", "5.0")


@pytest.mark.parametrize("kind", ["one column", "1-D", "boolean"])
def test_onnx_outputs_that_are_not_one_score_per_class(tmp_path, kind, capsys):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    shape = {"one column": ["n", 1], "1-D": ["n"], "boolean": ["n", 2]}[kind]
    out_type = TensorProto.BOOL if kind == "boolean" else TensorProto.FLOAT
    weight = helper.make_tensor("w", TensorProto.FLOAT, [4, shape[-1] if len(shape) == 2 else 1], [0.5] * 4 *
                                (shape[-1] if len(shape) == 2 else 1))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["s"])]
    last = "s"
    if kind == "1-D":
        nodes.append(helper.make_node("Flatten", ["s"], ["f"], axis=0))
        nodes.append(helper.make_node("Squeeze", ["f", "zero"], ["out"]))
        last = None
    if kind == "boolean":
        nodes.append(helper.make_node("Cast", ["s"], ["out"], to=TensorProto.BOOL))
        last = None
    if last is not None:
        nodes.append(helper.make_node("Identity", ["s"], ["out"]))
    inits = [weight, helper.make_tensor("zero", TensorProto.INT64, [1], [0])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                              [helper.make_tensor_value_info("out", out_type, shape)], initializer=inits)
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    assert main(["inspect", "--model", str(path)]) == 2
    err = capsys.readouterr().err
    assert_one_line_error(err, "before any argmax")
    assert "n_classes=" not in err


def test_the_same_run_with_a_trailing_space_in_its_config(files, tmp_path, capsys):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(files["model"], copy)
    with open(copy / "config.json", "a") as handle:
        handle.write(" \n")
    assert main(["audit", "--model", str(files["model"]), "--models", str(copy), "--data", str(files["data"]),
                 "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--models`", "has the same weights as")


# ----------------------------------------------------------------------------- item 9: escapes
def test_markdown_cells_escape_pipes_and_html():
    from fitaudit.report.html import md_cell
    from fitaudit.report.overfit import markdown_block

    assert md_cell("a|b") == "a\\|b" and md_cell("<script>x</script>") == "&lt;script&gt;x&lt;/script&gt;"
    table = markdown_block("v", [("class a|b", "<b>1</b>")])
    row = next(line for line in table.splitlines() if "class" in line)
    assert row.count(" | ") == 1 and "<b>" not in row  # still two cells, no raw HTML


def test_file_names_with_escape_sequences_are_printed_escaped(tmp_path, capsys):
    out = tmp_path / "d\x1b[2J\x1b[31m.npz"
    assert main(["shapes", "dataset", "--objects-per-class", "1", "--renders-per-object", "1", "--image-size", "8",
                 "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "\\x1b[2J" in printed
    assert main(["inspect", "--model", str(tmp_path / "no\x1b]0;title\x07such")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
