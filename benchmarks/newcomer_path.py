"""The newcomer's path of issue 51, through the command line as a user walks it.

``fitaudit audit`` on a scikit-learn table (breast_cancer, a scaled logistic
regression in ``.skops``) and on an image folder (scikit-learn's digits as
32 px PNGs in class folders) with an ONNX model (a small torch CNN exported
by :func:`fitaudit.models.export_onnx` with its classes and pipeline) and a
Keras 3 model (``.keras``, pipeline given by flags). Every output (stdout,
stderr, ``audit.json``, ``report.html``) is searched for a library keyword
(``train_data``, ``models=``: :data:`fitaudit._names.CLI_OPTIONS`) and a
traceback, and each page's badges are read back against its ``audit.json``
(``tests/page_badges.py``). Prints each command's output and, last, every
problem found (or "no problem found"); exits 1 on a problem.

Run: ``python benchmarks/newcomer_path.py OUT_FOLDER`` (about 5 minutes on 2 cores).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fitaudit._names import CLI_OPTIONS  # noqa: E402
from page_badges import check_page_against_json  # noqa: E402

#: a library keyword as a message would name it: `train_data`, `models=` ...
KEYWORD = re.compile("`(?:" + "|".join(CLI_OPTIONS) + ")=?`|\\b(?:" + "|".join(CLI_OPTIONS) + ")=")
PIPELINE = {"resize": 32, "crop": 32, "mean": [0.5], "std": [0.25]}


def audit(root: Path, name: str, *args: str) -> list[str]:
    """Run ``fitaudit audit ARGS --out root/name``; the problems its outputs show."""
    out = root / name
    proc = subprocess.run([sys.executable, "-m", "fitaudit", "audit", *args, "--out", str(out), "--quiet"],
                          capture_output=True, text=True)
    print(f"== {name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-1500:]}")
    texts = {"the output": proc.stdout + proc.stderr}
    texts |= {f: (out / f).read_text() for f in ("audit.json", "report.html") if (out / f).exists()}
    problems = [f"{name}: a traceback in {where}" for where, text in texts.items() if "Traceback" in text]
    problems += [f"{name}: the keyword {m.group(0)!r} in {where}"
                 for where, text in texts.items() for m in KEYWORD.finditer(text)]
    if len(texts) < 3:
        return [*problems, f"{name}: no audit.json or report.html (exit {proc.returncode})"]
    try:
        check_page_against_json(texts["report.html"], texts["audit.json"])
    except AssertionError as error:
        problems.append(f"{name}: the page's badges disagree with audit.json: {error}")
    return problems


def write_table(root: Path) -> None:
    import skops.io
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    frame = load_breast_cancer(as_frame=True).frame
    train, test = train_test_split(frame, test_size=0.4, random_state=0, stratify=frame["target"])
    train.to_csv(root / "train.csv", index=False)
    test.to_csv(root / "test.csv", index=False)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    skops.io.dump(model.fit(train.drop(columns="target"), train["target"]), root / "clf.skops")


def write_images(root: Path) -> tuple[np.ndarray, np.ndarray]:
    """Digits at 32 px in ``root/images/{train,val}/<class>/``; the training images (n, 32, 32) in [0, 1] and labels."""
    from PIL import Image
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    big = np.stack([np.asarray(Image.fromarray((image / 16 * 255).astype(np.uint8)).resize((32, 32), Image.BILINEAR))
                    for image in digits.images])
    x_train, x_val, y_train, y_val = train_test_split(big, digits.target, test_size=0.3, random_state=0,
                                                      stratify=digits.target)
    for split, images, labels in (("train", x_train, y_train), ("val", x_val, y_val)):
        for i, (image, label) in enumerate(zip(images, labels)):
            folder = root / "images" / split / str(label)
            folder.mkdir(parents=True, exist_ok=True)
            Image.fromarray(image).save(folder / f"{i}.png")
    return x_train / 255.0, y_train


def write_onnx(root: Path, x: np.ndarray, y: np.ndarray) -> None:
    import torch

    from fitaudit.models import export_onnx

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                              torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                              torch.nn.Flatten(), torch.nn.Linear(32 * 8 * 8, 10))
    inputs = (torch.tensor(x, dtype=torch.float32)[:, None] - 0.5) / 0.25
    labels = torch.tensor(y)
    optimiser = torch.optim.Adam(net.parameters(), 1e-3)
    for _ in range(10):
        order = torch.randperm(len(inputs))
        for start in range(0, len(inputs), 64):
            batch = order[start:start + 64]
            optimiser.zero_grad()
            torch.nn.functional.cross_entropy(net(inputs[batch]), labels[batch]).backward()
            optimiser.step()
    export_onnx(net.eval(), str(root / "net.onnx"), input_shape=(1, 32, 32),
                metadata={"classes": [str(c) for c in range(10)], "pipeline": PIPELINE})


def write_keras(root: Path, x: np.ndarray, y: np.ndarray) -> None:
    os.environ["KERAS_BACKEND"] = "torch"
    import keras

    model = keras.Sequential([keras.Input((32, 32, 1)), keras.layers.Conv2D(8, 3, activation="relu"),
                              keras.layers.MaxPooling2D(), keras.layers.Flatten(),
                              keras.layers.Dense(10, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(((x - 0.5) / 0.25)[..., None], y, epochs=8, verbose=0)
    model.save(root / "net.keras")


def main() -> None:
    root = Path(sys.argv[1])
    root.mkdir(parents=True, exist_ok=True)
    write_table(root)
    problems = audit(root, "table", "--model", str(root / "clf.skops"), "--data", str(root / "test.csv"),
                     "--train-data", str(root / "train.csv"), "--label", "target")
    x, y = write_images(root)
    folders = ["--images", str(root / "images/val"), "--train-images", str(root / "images/train")]
    write_onnx(root, x, y)
    problems += audit(root, "onnx", "--model", str(root / "net.onnx"), *folders)
    write_keras(root, x, y)
    flags = ["--resize", "32", "--crop", "32", "--mean", "0.5", "--std", "0.25"]
    problems += audit(root, "keras", "--model", str(root / "net.keras"), *folders, *flags)
    print("\n".join(["", "PROBLEMS:", *problems]) if problems else "\nno problem found")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
