"""``fitaudit leakage``: arrays, image folders, a model's accuracy with and without twins, errors."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from fitaudit.cli import main


@pytest.fixture()
def rows(tmp_path):
    rng = np.random.default_rng(0)
    train, test = rng.random((300, 5)), rng.random((100, 5))
    test[:7] = train[:7]  # exact copies
    test[7:12] = train[7:12] + 1e-4  # near copies
    y_train, y_test = (train[:, 0] > 0.5).astype(int), (test[:, 0] > 0.5).astype(int)
    np.savez(tmp_path / "train.npz", x=train, y=y_train)
    np.savez(tmp_path / "test.npz", x=test, y=y_test)
    return tmp_path, train, y_train


def test_tabular_json_lists_the_planted_pairs(rows, capsys) -> None:
    folder, _, _ = rows
    argv = ["leakage", "--data", str(folder / "test.npz"), "--train-data", str(folder / "train.npz"), "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["type"] == "LeakageResult"
    assert out["exact_scored"] == list(range(7)) and out["exact_train"] == list(range(7))
    assert set(range(12)) <= set(out["near_scored"])
    pairs = dict(zip(out["near_scored"], out["near_train"]))
    assert all(pairs[i] == i for i in range(12))


def test_summary_reads_the_result_and_lists_pairs(rows, capsys) -> None:
    folder, _, _ = rows
    assert main(["leakage", "--data", str(folder / "test.npz"), "--train-data", str(folder / "train.npz")]) == 0
    text = capsys.readouterr().out
    assert "scored examples are within" in text and "7 of them equal to a training row" in text
    assert "scored examples were in the training data" in text.lower()
    # both rows' values side by side (5 columns: all shown), nearest pairs first
    values = ", ".join(f"{v:.4g}" for v in np.load(folder / "test.npz")["x"][0])
    assert "scored values" in text and "training values" in text
    assert re.search(rf"{re.escape(values)}\s+{re.escape(values)}", text)
    assert "scored  training  distance" in text


def test_model_gives_accuracy_with_and_without_twins(rows, tmp_path, capsys) -> None:
    skops_io = pytest.importorskip("skops.io")
    from sklearn.linear_model import LogisticRegression

    folder, train, y_train = rows
    model = LogisticRegression().fit(train, y_train)
    skops_io.dump(model, tmp_path / "model.skops")
    argv = ["leakage", "--data", str(folder / "test.npz"), "--train-data", str(folder / "train.npz"),
            "--model", str(tmp_path / "model.skops"), "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    test = np.load(folder / "test.npz")
    hits = model.predict(test["x"]) == test["y"]
    assert out["accuracy"]["correct"] == int(hits.sum())
    keep = np.setdiff1d(np.arange(100), out["near_scored"])
    assert out["accuracy_without"]["correct"] == int(hits[keep].sum())
    assert out["accuracy_without"]["n"] == len(keep)


@pytest.mark.slow
def test_image_folders_through_the_pipeline(tmp_path, capsys) -> None:
    pil = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(1)
    for split, n in (("train", 12), ("test", 8)):
        for i in range(n):
            label = "a" if i % 2 else "b"
            (tmp_path / split / label).mkdir(parents=True, exist_ok=True)
            pixels = (rng.random((4, 4, 3)).repeat(8, 0).repeat(8, 1) * 255).astype(np.uint8)
            pil.fromarray(pixels).save(tmp_path / split / label / f"{i}.png")
    copy = (tmp_path / "train" / "a" / "3.png").read_bytes()
    (tmp_path / "test" / "a" / "copy.png").write_bytes(copy)
    argv = ["leakage", "--images", str(tmp_path / "test"), "--train-images", str(tmp_path / "train"),
            "--resize", "32", "--crop", "32", "--json", "--quiet"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_scored"] == 9 and out["n_train"] == 12 and out["space"] == "image view, relative distance"
    assert len(out["exact_scored"]) == 1  # the copied file (folder order: a/0, a/1, ... copy is in class a)
    pairs = dict(zip(out["near_scored_file"], out["near_train_file"]))  # the pairs name their files
    assert pairs[str(tmp_path / "test" / "a" / "copy.png")] == str(tmp_path / "train" / "a" / "3.png")
    assert main(argv[:-2] + ["--quiet"]) == 0
    text = capsys.readouterr().out
    assert "scored file" in text and "training file" in text
    assert f"{tmp_path / 'test' / 'a' / 'copy.png'}  {tmp_path / 'train' / 'a' / '3.png'}" in text


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "`--train-data` is needed with `--data`"),
        (["--train-data", "bad.npz"], r"`--train-data` has examples of shape \(4,\) but `--data` of shape \(5,\)"),
        (["--train-data", "train.npz", "--space", "penultimate"], r"`--space penultimate` needs `--model`"),
        (["--train-data", "train.npz", "--quantile", "1.5"], r"`--quantile` must be in \(0, 1\)"),
    ],
)
def test_errors_name_the_option(rows, capsys, extra, message) -> None:
    import re

    folder, _, _ = rows
    np.savez(folder / "bad.npz", x=np.zeros((3, 4)), y=np.zeros(3, int))
    extra = [str(folder / e) if e.endswith(".npz") else e for e in extra]
    assert main(["leakage", "--data", str(folder / "test.npz"), *extra]) == 2
    assert re.search(message, capsys.readouterr().err)


def test_single_scored_example_is_inconclusive_with_the_minimum(rows, capsys) -> None:
    folder, train, y_train = rows
    np.savez(folder / "one.npz", x=train[:1] + 5, y=y_train[:1])  # one example cannot show an excess of near twins
    assert main(["leakage", "--data", str(folder / "one.npz"), "--train-data", str(folder / "train.npz")]) == 0
    text = capsys.readouterr().out
    assert "too few scored examples to tell" in text and "at least 2 scored examples are needed" in text


@pytest.fixture()
def image_arrays(tmp_path, monkeypatch):
    from fitaudit.leakage import image_search, image_space

    monkeypatch.setattr(image_space, "FEATURE_BLOCK", 10)
    monkeypatch.setattr(image_search, "SEARCH_BLOCK", 16)
    rng = np.random.default_rng(4)
    train = rng.random((40, 3, 4, 4)).repeat(3, axis=2).repeat(3, axis=3).astype(np.float32)
    test = rng.random((30, 3, 4, 4)).repeat(3, axis=2).repeat(3, axis=3).astype(np.float32)
    test[:4] = np.clip(train[[2, 11, 23, 37]] * 1.1, 0, 1)
    np.savez(tmp_path / "train.npz", x=train, y=np.arange(40) % 2)
    np.savez(tmp_path / "test.npz", x=test, y=np.arange(30) % 2)
    return ["leakage", "--data", str(tmp_path / "test.npz"), "--train-data", str(tmp_path / "train.npz"),
            "--json", "--quiet"]


@pytest.mark.slow
def test_checkpoint_dir_rerun_reuses_and_says_so(image_arrays, tmp_path, capsys) -> None:
    assert main(image_arrays) == 0
    fresh = json.loads(capsys.readouterr().out)
    argv = [*image_arrays, "--checkpoint-dir", str(tmp_path / "ck")]
    assert main(argv) == 0
    first = capsys.readouterr()
    assert "Reused 0 of 67 blocks" in first.err and json.loads(first.out) == fresh
    assert main(argv) == 0
    again = capsys.readouterr()
    assert json.loads(again.out) == fresh
    # the calibration and the search under each of the 11 edits besides the identity too (leakage.edits)
    assert (f"Reused 67 of 67 blocks from {tmp_path / 'ck'} (features of --data 3 of 3, features of --train-data "
            "4 of 4, calibration 3 of 3, calibration under the edits 33 of 33, search 2 of 2, search under the "
            "edits 22 of 22).") in again.err


@pytest.mark.slow
def test_interrupted_command_resumes_with_the_same_answer(image_arrays, tmp_path, capsys, monkeypatch) -> None:
    from fitaudit.leakage import edits, image_search

    assert main(image_arrays) == 0
    fresh = json.loads(capsys.readouterr().out)
    real, calls = image_search._block_twins, []

    def interrupted(queries, reference, own, edit=edits.IDENTITY, first=None):
        # the scored images' search under the identity (no own rows, no edit, no first pass's candidates): its
        # second block interrupted, after the mirror check, the calibration under every edit and its first block
        if own is None and edit.identity and first is None:
            calls.append(1)
            if len(calls) == 2:
                raise KeyboardInterrupt
        return real(queries, reference, own, edit, first)

    monkeypatch.setattr(image_search, "_block_twins", interrupted)
    argv = [*image_arrays, "--checkpoint-dir", str(tmp_path / "ck")]
    assert main(argv) == 130
    assert "interrupted" in capsys.readouterr().err
    monkeypatch.setattr(image_search, "_block_twins", real)
    assert main(argv) == 0
    resumed = capsys.readouterr()
    assert json.loads(resumed.out) == fresh
    assert "Reused 44 of 67 blocks" in resumed.err and "search 1 of 2" in resumed.err


@pytest.mark.slow
def test_changed_image_file_is_not_reused(tmp_path, capsys) -> None:
    pil = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(5)
    for split, n in (("train", 10), ("test", 6)):
        for i in range(n):
            (tmp_path / split / "a").mkdir(parents=True, exist_ok=True)
            pixels = (rng.random((4, 4, 3)).repeat(4, 0).repeat(4, 1) * 255).astype(np.uint8)
            pil.fromarray(pixels).save(tmp_path / split / "a" / f"{i}.png")
    argv = ["leakage", "--images", str(tmp_path / "test"), "--train-images", str(tmp_path / "train"),
            "--resize", "16", "--crop", "16", "--json", "--quiet", "--checkpoint-dir", str(tmp_path / "ck")]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["exact_scored"] == []
    (tmp_path / "train" / "a" / "7.png").write_bytes((tmp_path / "test" / "a" / "2.png").read_bytes())
    assert main(argv) == 0
    out = capsys.readouterr()
    result = json.loads(out.out)
    assert result["exact_scored"] == [2] and result["exact_train"] == [7]
    assert "features of --images 1 of 1, features of --train-images 0 of 1" in out.err
    assert "search 0 of 1" in out.err


def test_leakage_images_need_a_pipeline(tmp_path, capsys):
    folder = tmp_path / "imgs" / "a"
    folder.mkdir(parents=True)
    from PIL import Image

    Image.new("RGB", (8, 8)).save(folder / "0.png")
    code = main(["leakage", "--images", str(tmp_path / "imgs"), "--train-images", str(tmp_path / "imgs"), "--quiet"])
    assert code == 2
    assert "`--resize` and `--crop` are needed with --images: no model file gives the pipeline" in capsys.readouterr().err


def test_checkpoint_dir_on_tabular_rows_says_nothing_of_blocks(rows, capsys) -> None:
    """Tabular rows are searched in one go: no blocks, so no "Reused 0 of 0 blocks" line."""
    folder, _, _ = rows
    argv = ["leakage", "--data", str(folder / "test.npz"), "--train-data", str(folder / "train.npz"), "--json",
            "--checkpoint-dir", str(folder / "ck")]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["exact_scored"] == list(range(7))
    assert "Reused" not in out.err


def test_tables_thousands_separators_in_one_file_are_refused_naming_the_column(tmp_path, capsys) -> None:
    pandas = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    train = pandas.DataFrame({"income": rng.integers(1000, 9000, 60), "age": rng.integers(20, 70, 60),
                              "y": rng.integers(0, 2, 60)})
    scored = train.iloc[:20].copy()
    scored["income"] = [f"{v:,}" for v in scored["income"]]  # "5,850": text in this file only
    train.to_csv(tmp_path / "train.csv", index=False)
    scored.to_csv(tmp_path / "test.csv", index=False)
    argv = ["leakage", "--data", str(tmp_path / "test.csv"), "--train-data", str(tmp_path / "train.csv"), "--label", "y"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "column 'income' holds text" in err and "in `--data` but numbers (int64) in `--train-data`" in err
    assert "Traceback" not in err


def test_tables_pairs_are_shown_in_the_users_columns(tmp_path, capsys) -> None:
    pandas = pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    train = pandas.DataFrame({"id": [f"r{i}" for i in range(200)], "colour": rng.choice(["red", "blue"], 200),
                              "size": rng.normal(size=200).round(3), "y": rng.integers(0, 2, 200)})
    scored = pandas.concat([train.iloc[:5], train.iloc[5:100].assign(size=lambda f: f["size"] + 50)])
    train.to_csv(tmp_path / "train.csv", index=False)
    scored.to_csv(tmp_path / "test.csv", index=False)
    argv = ["leakage", "--data", str(tmp_path / "test.csv"), "--train-data", str(tmp_path / "train.csv"), "--label", "y"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "scored row (id, colour, size)" in text and "training row" in text
    first = train.iloc[0]
    shown = f"r0, {first['colour']}, {first['size']}"
    assert re.search(rf"{re.escape(shown)}\s+{re.escape(shown)}", text)
    assert "Left out of the distance as identifier-like: 'id' (unique text)." in text
