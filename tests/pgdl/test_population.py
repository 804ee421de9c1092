"""Populations of a user's own models: imported scores equal the zoo writer's, and bad input is named."""

from __future__ import annotations

import csv
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest

from fitaudit.options import RunOptions

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("h5py")

from fitaudit._errors import InputError  # noqa: E402
from fitaudit.cli import main  # noqa: E402
from fitaudit.data.io import save_npz  # noqa: E402
from fitaudit.measures import get_measure  # noqa: E402
from fitaudit.models import save_torch_model  # noqa: E402
from fitaudit.models.architectures import build_architecture  # noqa: E402
from fitaudit.pgdl import TaskModel, load_task, write_task  # noqa: E402
from fitaudit.pgdl.harness import score_task  # noqa: E402
from fitaudit.pgdl.leaderboard import OUR_LEADERBOARD, leading_measures  # noqa: E402
from fitaudit.pgdl.population import Population  # noqa: E402
from fitaudit.pgdl.population_import import import_population  # noqa: E402
from fitaudit.pgdl.population_like import check_formats  # noqa: E402

#: measures that read ONNX models (outputs or weights) and a torch-only one
ONNX_MEASURES = ["spectral_alpha", "spectral_alpha_weighted", "spectral_log_norm", "spectral_stable_rank",
                 "inverse_margin", "augmentation_robustness", "noisy_gap"]  # spectral_mp_softrank: same weights path
TORCH_MEASURES = ["weight_norm", "log_spec_product", "path_norm", "distance_from_init"]


def _images(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    x = rng.uniform(0, 0.4, size=(n, 3, 8, 8)).astype(np.float32)
    for i, c in enumerate(y):
        x[i, c, :, :] += 0.5
    return x, y.astype(np.int64)


def _config(width: int, n_classes: int = 3, channels: int = 3) -> dict:
    return {"architecture": "pgdl_vgg", "kwargs": {"n_classes": n_classes, "in_channels": channels, "image_size": 8,
                                                   "width": width, "blocks": 1, "dense_layers": 1, "dense_width": 16}}


def _model(width: int, scale: float, seed: int, **kwargs) -> object:
    torch.manual_seed(seed)
    module = build_architecture(_config(width, **kwargs)).eval()
    with torch.no_grad():
        for p in module.parameters():
            p.mul_(scale * (1 + torch.rand_like(p) ** 3))
    return module


def _accuracy(module, x, y) -> float:
    with torch.no_grad():
        return float((module(torch.from_numpy(x)).argmax(1).numpy() == y).mean())


def _export(module, path: Path, channels: int = 3) -> None:
    torch.onnx.export(module, torch.zeros(1, channels, 8, 8), str(path), input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "n"}, "logits": {0: "n"}}, dynamo=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """8 models (width x scale x seed) as ONNX files, torch folders and a PGDL task written by the zoo writer."""
    safetensors_torch = pytest.importorskip("safetensors.torch")
    root = tmp_path_factory.mktemp("runs")
    train, test = _images(60, 0), _images(60, 1)
    save_npz(root / "train.npz", *train)
    save_npz(root / "test.npz", *test)
    (root / "onnx").mkdir()
    (root / "torch").mkdir()
    members, rows = [], []
    for i, (width, scale, seed) in enumerate(itertools.product([4, 8], [0.6, 1.4], [0, 1])):
        module = _model(width, scale, seed)
        initial = _model(width, 0.5, seed)  # stands in for the network at initialisation
        metrics = {"train_acc": _accuracy(module, *train), "test_acc": _accuracy(module, *test)}
        members.append(TaskModel(model_id=f"m{i}", model=module, hparams={"width": width, "scale": scale, "seed": seed},
                                 metrics=metrics, initial_model=initial))
        _export(module, root / "onnx" / f"m{i}.onnx")
        save_torch_model(module, _config(width), root / "torch" / f"m{i}")
        safetensors_torch.save_model(initial, str(root / "torch" / f"m{i}" / "weights_init.safetensors"))
        rows.append({"model": f"m{i}", "width": width, "scale": scale, "seed": seed, **metrics})
    task = write_task(root / "task", members, train, test)
    return {"root": root, "rows": rows, "task": task}


def _table(path: Path, rows: list[dict], suffix: str = "") -> Path:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "model": row["model"] + suffix})
    return path


def _import(runs: dict, tmp_path: Path, kind: str, rows: list[dict] | None = None, **kwargs) -> Population:
    table = _table(tmp_path / f"{kind}.csv", rows or runs["rows"], ".onnx" if kind == "onnx" else "")
    return import_population(runs["root"] / kind, table, runs["root"] / "train.npz", tmp_path / f"pop-{kind}",
                             test_data=runs["root"] / "test.npz", **kwargs)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["torch", "onnx"])
def test_imported_scores_equal_the_zoo_writers(runs: dict, tmp_path: Path, kind: str) -> None:
    population = _import(runs, tmp_path, kind)
    reopened = load_task(population.directory)
    assert isinstance(reopened, Population) and reopened.model_ids == [f"m{i}" for i in range(8)]
    assert population.disagreements == []
    measures = ONNX_MEASURES + (TORCH_MEASURES if kind == "torch" else [])
    ours = score_task(reopened, measures, options=RunOptions(progress=False), budget_s=None)
    reference = score_task(runs["task"], measures, options=RunOptions(progress=False), budget_s=None)
    for mine, theirs in zip(ours.scores, reference.scores):
        assert not mine.errors and not theirs.errors, (mine.errors, theirs.errors)
        got = [mine.values[f"m{i}"] for i in range(8)]
        want = [theirs.values[f"m{i}"] for i in range(8)]
        # float32 forward passes: torch's reductions may split differently between its threads (a few ulp)
        np.testing.assert_allclose(got, want, rtol=1e-5 if kind == "onnx" else 1e-6, err_msg=mine.measure)
        assert mine.official_cmi == pytest.approx(theirs.official_cmi)
    assert len({round(v, 6) for v in ours.score("spectral_alpha").values.values()}) > 1


def test_recomputed_accuracies_and_disagreements(runs: dict, tmp_path: Path) -> None:
    rows = [dict(r) for r in runs["rows"]]
    rows[2]["test_acc"] = round(min(1.0, rows[2]["test_acc"] + 0.2), 4)
    population = _import(runs, tmp_path, "torch", rows)
    assert len(population.disagreements) == 1 and population.disagreements[0].startswith("m2 (row 4): table test_acc")
    assert population.metrics("m2")["test_acc"] == pytest.approx(runs["rows"][2]["test_acc"])
    assert population.hparams("m5") == {"width": 8, "scale": 0.6, "seed": 1}
    assert population.configs["m0"]["hparams"]["width"]["possible_values"] == [4, 8]


@pytest.mark.slow
def test_format_errors_name_the_measure_and_its_formats(runs: dict, tmp_path: Path) -> None:
    population = _import(runs, tmp_path, "onnx")
    with pytest.raises(InputError, match=r"measure 'weight_norm' takes torch models; model 'm0' of .* is onnx"):
        check_formats(population, [get_measure("weight_norm")])
    check_formats(population, [get_measure(n) for n in ONNX_MEASURES])
    scores = score_task(population, ["weight_norm"], options=RunOptions(progress=False))
    errors = scores.score("weight_norm").errors
    assert errors == {f"m{i}": f"InputError: measure 'weight_norm' takes torch models; model 'm{i}' is onnx." for i in range(8)}


def _write_rows(path: Path, header: list[str], rows: list[list]) -> Path:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_bad_tables_are_named(runs: dict, tmp_path: Path) -> None:
    header = ["model", "width", "scale", "seed", "train_acc", "test_acc"]
    good = [[r["model"], r["width"], r["scale"], r["seed"], r["train_acc"], r["test_acc"]] for r in runs["rows"]]
    cases = [
        (good[:-1], "`--models`: 'm7' is not in `--table`"),
        (good + [good[0]], re.escape("names model 'm0' twice (rows 2 and 10)")),
        ([r[:3] + [0] + r[4:] for r in good], re.escape("hyperparameter 'seed' takes a single value (0)")),
        ([good[0][:4] + ["nan", 0.5], *good[1:]], r"row 2 \(m0\): train_acc must be a number in \[0, 1\]; got 'nan'"),
        ([*good, ["m9", 4, 0.6, 0, 1, 1]], "row 10 names model 'm9', which is not an ONNX file or a torch folder"),
    ]
    for i, (rows, message) in enumerate(cases):
        table = _write_rows(tmp_path / f"t{i}.csv", header, rows)
        with pytest.raises(InputError, match=message):
            import_population(runs["root"] / "torch", table, runs["root"] / "train.npz", tmp_path / f"out{i}")


def test_a_model_copied_under_another_name_is_refused(runs: dict, tmp_path: Path) -> None:
    """The same weights under two rows (an ONNX file or a torch folder copied) would be ranked as two runs."""
    import shutil

    table = tmp_path / "t.csv"
    for kind, suffix in (("onnx", ".onnx"), ("torch", "")):
        folder = tmp_path / kind
        folder.mkdir()
        for j, source in enumerate(("m0", "m1", "m0")):  # the third is a copy of the first
            copy = shutil.copytree if kind == "torch" else shutil.copyfile
            copy(runs["root"] / kind / f"{source}{suffix}", folder / f"m{j}{suffix}")
        _write_rows(table, ["model", "seed", "train_acc", "test_acc"],
                    [[f"m{j}{suffix}", j, 1, 1] for j in range(3)])
        with pytest.raises(InputError, match=re.escape(f"`--models`: 'm2{suffix}' has the same weights as 'm0{suffix}'")):
            import_population(folder, table, runs["root"] / "train.npz", tmp_path / f"out-{kind}")
        assert not (tmp_path / f"out-{kind}").exists()


def test_mixed_classes_shapes_and_unrunnable_onnx_are_named(runs: dict, tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    for name, module, channels, message in [
        ("wide", _model(4, 1.0, 0, n_classes=4), 3, "'wide.onnx' has 4 outputs but 'm0.onnx' has 3"),
        ("gray", _model(4, 1.0, 0, channels=1), 1,
         r"`--models`: the runs take images of different channel counts: .*m0.onnx \(3\), .*gray.onnx \(1\)"),
    ]:
        folder = tmp_path / name
        folder.mkdir()
        for j in range(2):
            (folder / f"m{j}.onnx").write_bytes((runs["root"] / "onnx" / f"m{j}.onnx").read_bytes())
        _export(module, folder / f"{name}.onnx", channels)
        _write_rows(table, ["model", "seed", "train_acc", "test_acc"],
                    [["m0.onnx", 0, 1, 1], ["m1.onnx", 1, 1, 1], [f"{name}.onnx", 2, 1, 1]])
        with pytest.raises(InputError, match=message):
            import_population(folder, table, runs["root"] / "train.npz", tmp_path / f"out-{name}")
        assert not (tmp_path / f"out-{name}").exists()  # a failed import leaves nothing behind
    onnx = pytest.importorskip("onnx")
    node = onnx.helper.make_node("Frobnicate", ["x"], ["logits"], domain="com.example")
    graph = onnx.helper.make_graph([node], "g", [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [None, 3, 8, 8])],
                                   [onnx.helper.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, [None, 3])])
    odd = tmp_path / "odd"
    odd.mkdir()
    onnx.save(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("com.example", 1)]), str(odd / "m0.onnx"))
    (odd / "m1.onnx").write_bytes((runs["root"] / "onnx" / "m1.onnx").read_bytes())
    _write_rows(table, ["model", "seed", "train_acc", "test_acc"], [["m0.onnx", 0, 1, 1], ["m1.onnx", 1, 1, 1]])
    with pytest.raises(InputError, match=r"file '.*m0.onnx' could not be opened as an ONNX model"):
        import_population(odd, table, runs["root"] / "train.npz", tmp_path / "out-odd")


@pytest.mark.slow
def test_cli_import_then_score(runs: dict, tmp_path: Path, capsys) -> None:
    table = _table(tmp_path / "runs.csv", runs["rows"], ".onnx")
    out = tmp_path / "pop"
    argv = ["pgdl", "import", "--models", str(runs["root"] / "onnx"), "--table", str(table),
            "--train-data", str(runs["root"] / "train.npz"), "--test-data", str(runs["root"] / "test.npz"), "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert f"Imported 8 models (8 onnx) over width [4, 8] x scale [0.6, 1.4] x seed [0, 1] into {out}" in text
    assert main(argv) == 2 and "is not empty" in capsys.readouterr().err
    assert main(["pgdl", "score", "--task", str(out), "--measure", "spectral_alpha,weight_norm", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "failed on all 8 models: InputError: measure 'weight_norm' takes torch models" in text


def test_our_leaderboard_table_is_the_published_one() -> None:
    path = Path(__file__).parents[2] / "benchmarks" / "results" / "pgdl_leaderboard" / "leaderboard.json"
    if not path.is_file():
        pytest.skip("the leaderboard's results are not in this checkout")
    rows = json.loads(path.read_text())["rows"]
    assert OUR_LEADERBOARD == {r["measure"]: (round(r["final_score"], 2), round(r["kendall"], 3)) for r in rows}


def test_leading_measures_follow_the_leaderboard_and_the_formats() -> None:
    assert leading_measures(["onnx"], 3) == ["augmentation_robustness", "inverse_margin"]
    assert leading_measures(["torch"], 3) == ["augmentation_robustness", "mixup_margin", "pacbayes_flatness"]
    assert "distance_from_init" not in leading_measures(["torch"], 40)  # score 12.07 but tau -0.479 on our zoos
    assert "noisy_gap" not in leading_measures(["torch", "onnx"], 40)


@pytest.mark.slow
def test_cli_rank(runs: dict, tmp_path: Path, capsys) -> None:
    population = _import(runs, tmp_path, "onnx")
    assert main(["pgdl", "rank", "--task", str(population.directory), "--quiet", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [e["measure"] for e in result["entries"]] == ["augmentation_robustness", "inverse_margin"]
    scores = score_task(population, ["augmentation_robustness", "inverse_margin"], options=RunOptions(progress=False))
    for entry, score in zip(result["entries"], scores.scores):
        assert entry["order"] == sorted(score.values, key=lambda i: -score.values[i])
        assert entry["kendall_here"] == pytest.approx(score.kendall)
    assert main(["pgdl", "rank", "--task", str(population.directory), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "augmentation_robustness (leaderboard score 15.30, Kendall tau 0.339; Kendall tau with your models' gaps" in text
    assert sum(line.startswith("    m") and line.count(" > ") == 7 for line in text.splitlines()) == 2
    assert "Caveats:" in text and "not estimates of the gap" in text
    assert main(["pgdl", "rank", "--task", str(population.directory), "--measure", "sharpness", "--quiet"]) == 2
    assert "measure 'sharpness' takes torch models; model 'm0'" in capsys.readouterr().err
    assert main(["pgdl", "rank", "--task", str(population.directory), "--measure", "spectral_alpha", "--quiet"]) == 0
    assert "by the measures asked for:" in capsys.readouterr().out


def test_numeric_columns_have_one_type(tmp_path: Path) -> None:
    from fitaudit.pgdl.population_import import read_table

    table = _write_rows(tmp_path / "t.csv", ["model", "wd", "width", "opt"],
                        [["a", "0", "8", "sgd"], ["b", "0.0", "16", "adam"], ["c", "0.001", "8.0", "sgd"]])
    rows = read_table(table)
    assert [r.hparams for r in rows] == [{"wd": 0.0, "width": 8, "opt": "sgd"}, {"wd": 0.0, "width": 16, "opt": "adam"},
                                         {"wd": 0.001, "width": 8, "opt": "sgd"}]
    assert all(type(r.hparams["width"]) is int for r in rows)


def test_a_population_resumes_with_one_unit_per_model(runs: dict, tmp_path: Path) -> None:
    population = _import(runs, tmp_path, "onnx")
    first = score_task(population, ["spectral_alpha"], options=RunOptions(progress=False), checkpoint_dir=tmp_path / "ckpt")
    units = [p for p in (tmp_path / "ckpt").rglob("*") if p.is_file()]
    assert len(units) == 8  # one per model: the ONNX models are keyed by their bytes, not by their (empty) state dict
    again = score_task(load_task(population.directory), ["spectral_alpha"], options=RunOptions(progress=False), checkpoint_dir=tmp_path / "ckpt")
    assert again.score("spectral_alpha").values == first.score("spectral_alpha").values
    assert [p for p in (tmp_path / "ckpt").rglob("*") if p.is_file()] == units


def _write_folder(folder: Path, x: np.ndarray, y: np.ndarray, names: list[str] | None = None) -> np.ndarray:
    """PNG files root/<class>/<i>.png of [0, 1] images (class folders ``names[label]``, default ``c<label>``);
    returns the images as the files hold them (8-bit)."""
    from PIL import Image

    pixels = np.round(np.clip(x, 0, 1) * 255).astype(np.uint8)
    for i, (image, label) in enumerate(zip(pixels, y)):
        name = names[label] if names else f"c{label}"
        (folder / name).mkdir(parents=True, exist_ok=True)
        Image.fromarray(image.transpose(1, 2, 0)).save(folder / name / f"{i:03d}.png")
    return pixels.astype(np.float32) / np.float32(255.0)


@pytest.mark.slow
def test_image_folders_import_through_the_pipeline(runs: dict, tmp_path: Path, capsys) -> None:
    from fitaudit.data.pipeline import EvalPipeline

    stored = {split: _write_folder(tmp_path / split, *_images(60, seed)) for split, seed in (("train", 0), ("test", 1))}
    table = _table(tmp_path / "runs.csv", runs["rows"])
    with pytest.raises(InputError, match=r"`--train-data` .* is an image folder: give the evaluation pipeline"):
        import_population(runs["root"] / "torch", table, tmp_path / "train", tmp_path / "no-pipeline")
    population = import_population(runs["root"] / "torch", table, tmp_path / "train", tmp_path / "pop",
                                   test_data=tmp_path / "test", pipeline=EvalPipeline(resize=8, crop=8))
    # the folder's files are sorted by class, then by name: compare in that order
    order = np.argsort(_images(60, 0)[1], kind="stable")
    x, y = population.train_data()
    np.testing.assert_array_equal(x, stored["train"][order])
    np.testing.assert_array_equal(y, _images(60, 0)[1][order])
    # accuracies recomputed on the decoded test folder, as a hand count on the same 8-bit images
    module = population.model("m3")
    with torch.no_grad():
        expected = float((module(torch.from_numpy(stored["test"])).argmax(1).numpy() == _images(60, 1)[1]).mean())
    assert population.metrics("m3")["test_acc"] == pytest.approx(expected)
    argv = ["pgdl", "import", "--models", str(runs["root"] / "torch"), "--table", str(table), "--train-data",
            str(tmp_path / "train"), "--test-data", str(tmp_path / "test"), "--resize", "8", "--crop", "8",
            "--out", str(tmp_path / "pop-cli")]
    assert main(argv) == 0 and "Imported 8 models" in capsys.readouterr().out


@pytest.mark.slow
def test_classes_map_the_folders_to_the_models_outputs(runs: dict, tmp_path: Path, capsys) -> None:
    """--classes, else the names the models record, else sorted folders; contradictions are refused."""
    import shutil

    from fitaudit.data.pipeline import EvalPipeline

    names = ["red", "green", "blue"]  # the models' output order (class c lifts channel c); sorted: blue, green, red
    _write_folder(tmp_path / "train", *_images(60, 0), names)
    table = _table(tmp_path / "runs.csv", runs["rows"])
    pipeline = EvalPipeline(resize=8, crop=8)

    def labels(population: Population) -> tuple[np.ndarray, np.ndarray]:
        x, y = population.train_data()
        return y, x.mean(axis=(2, 3)).argmax(axis=1)  # the label stored, the class the image was drawn from

    y, truth = labels(import_population(runs["root"] / "torch", table, tmp_path / "train", tmp_path / "sorted",
                                        pipeline=pipeline))
    assert np.mean(y == truth) == pytest.approx(1 / 3)  # sorted names: red and blue swapped, green right
    y, truth = labels(import_population(runs["root"] / "torch", table, tmp_path / "train", tmp_path / "given",
                                        pipeline=pipeline, classes="red,green,blue"))
    np.testing.assert_array_equal(y, truth)

    recorded = tmp_path / "recorded"
    shutil.copytree(runs["root"] / "torch", recorded)
    for config in recorded.glob("*/config.json"):
        config.write_text(json.dumps({**json.loads(config.read_text()), "classes": names}))
    y, truth = labels(import_population(recorded, table, tmp_path / "train", tmp_path / "from-models", pipeline=pipeline))
    np.testing.assert_array_equal(y, truth)
    with pytest.raises(InputError, match=r"`--classes` blue,green,red contradicts the class names the model records"):
        import_population(recorded, table, tmp_path / "train", tmp_path / "contradicts", pipeline=pipeline,
                          classes="blue,green,red")
    config = recorded / "m5" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "classes": ["blue", "green", "red"]}))
    with pytest.raises(InputError, match=r"`--models`: the models record different class names \(red,green,blue in "
                                         r".*m0', blue,green,red in .*m5'\)"):
        import_population(recorded, table, tmp_path / "train", tmp_path / "disagree", pipeline=pipeline)
    with pytest.raises(InputError, match=r"`--classes` goes with image folders"):
        import_population(runs["root"] / "torch", table, runs["root"] / "train.npz", tmp_path / "npz", classes="a,b,c")
    argv = ["pgdl", "import", "--models", str(runs["root"] / "torch"), "--table", str(table), "--train-data",
            str(tmp_path / "train"), "--resize", "8", "--crop", "8", "--classes", "red,green,blue",
            "--out", str(tmp_path / "cli")]
    assert main(argv) == 0 and "Imported 8 models" in capsys.readouterr().out
    y, truth = labels(load_task(tmp_path / "cli"))
    np.testing.assert_array_equal(y, truth)


def test_import_recomputes_the_accuracies_on_the_device_given(runs: dict, tmp_path: Path, monkeypatch) -> None:
    """`pgdl import --device` reaches the torch adapters that recompute the accuracies (recorded, run on the CPU)."""
    from fitaudit.cli import _common
    from fitaudit.models import torch_adapter

    seen: list[str] = []
    resolve = torch_adapter.resolve_device

    def record(device, name="device"):
        seen.append(str(device))
        return resolve("cpu", name)

    monkeypatch.setattr(_common, "check_device", lambda device, option="--device": device)  # no such GPU here
    monkeypatch.setattr(torch_adapter, "resolve_device", record)
    table = _table(tmp_path / "runs.csv", runs["rows"], "")
    argv = ["pgdl", "import", "--models", str(runs["root"] / "torch"), "--table", str(table), "--train-data",
            str(runs["root"] / "train.npz"), "--out", str(tmp_path / "pop"), "--device", "cuda:2", "--quiet"]
    assert main(argv) == 0
    assert len(seen) >= 8 and set(seen) == {"cuda:2"}
