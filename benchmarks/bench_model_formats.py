"""Load and first-run times of one small image classifier per model format, side by side.

Each format's model is built and saved in a temporary folder; then a fresh
Python process per format imports fitaudit, loads the file with
``fitaudit.models.load_model`` (the framework's import included: a user's
first command pays it) and scores 64 images of the model's input size twice:
the first call includes the inference backend's choice (export, compilation
checks), the second is the steady state. Times are wall seconds, one thread.
The last columns count the classes predicted for the 64 images (the same
seeded inputs for every format, every model's weights seeded) and give
their mean logit: a change in how a format loads or runs shows there, and
the torch folder and its ONNX export must agree.

Run: ``OMP_NUM_THREADS=1 python benchmarks/bench_model_formats.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CLASSES = ["a", "b", "c"]

_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from fitaudit.models import load_model
import numpy as np
path, shape = sys.argv[1], tuple(json.loads(sys.argv[2]))
t1 = time.perf_counter()
model = load_model(path)
t2 = time.perf_counter()
x = np.random.default_rng(0).random((64, *shape), dtype=np.float32)
model.logits(x)
t3 = time.perf_counter()
scores = model.logits(x)
t4 = time.perf_counter()
counts = np.bincount(np.argmax(scores, axis=1), minlength=scores.shape[1]).tolist()
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "first": t3 - t2, "again": t4 - t3, "counts": counts,
                  "mean": float(np.mean(scores))}))
"""


def build(folder: Path) -> dict[str, tuple[Path, list[int]]]:
    """One small model per format: (path, the shape of one channels-first input)."""
    import torch

    from fitaudit.models import export_onnx, save_torch_model
    from fitaudit.models.architectures import build_architecture

    models: dict[str, tuple[Path, list[int]]] = {}
    config = {"architecture": "resnet18", "kwargs": {"n_classes": 3, "in_channels": 1, "width": 8},
              "classes": CLASSES, "pipeline": {"resize": 36, "crop": 32, "mean": [0.5], "std": [0.25]}}
    torch.manual_seed(0)
    net = build_architecture(config)
    models["torch folder (grey ResNet-18, width 8)"] = (save_torch_model(net, config, folder / "torch"), [1, 32, 32])
    models["ONNX (the same network)"] = (export_onnx(net, folder / "net.onnx", input_shape=(1, 32, 32)), [1, 32, 32])

    import transformers

    vit = transformers.ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=64, num_labels=3)
    transformers.ViTForImageClassification(vit).save_pretrained(folder / "vit")
    transformers.ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder / "vit")
    models["Hugging Face ViT (2 layers, width 32)"] = (folder / "vit", [3, 32, 32])
    resnet = transformers.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], num_labels=3)
    transformers.ResNetForImageClassification(resnet).save_pretrained(folder / "resnet")
    transformers.ConvNextImageProcessor(size={"shortest_edge": 32}).save_pretrained(folder / "resnet")
    models["Hugging Face ResNet (2 stages, width 16)"] = (folder / "resnet", [3, 32, 32])

    os.environ.setdefault("KERAS_BACKEND", "torch")
    import keras

    keras.utils.set_random_seed(0)
    net_k = keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Conv2D(8, 3, activation="relu"),
                              keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(3, activation="softmax")])
    net_k.save(folder / "net.keras")
    models["Keras 3 .keras (channels last)"] = (folder / "net.keras", [3, 32, 32])

    import skops.io
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    skops.io.dump(LogisticRegression(max_iter=200).fit(rng.random((60, 1024)), np.arange(60) % 3), folder / "lr.skops")
    models["scikit-learn .skops (flattened grey 32 x 32)"] = (folder / "lr.skops", [1, 32, 32])
    return models


def main() -> None:
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "KERAS_BACKEND": "torch"}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (path, shape) in build(Path(tmp)).items():
            out = subprocess.run([sys.executable, "-c", _CHILD, str(path), json.dumps(shape)], capture_output=True,
                                 text=True, env=environment, check=True).stdout.strip().splitlines()[-1]
            rows.append((name, json.loads(out)))
    print("| format | import (s) | load (s) | first 64 images (s) | again (s) | predicted classes | mean logit |")
    print("|---|---|---|---|---|---|---|")
    for name, t in rows:
        counts = "/".join(map(str, t["counts"]))
        print(f"| {name} | {t['import']:.2f} | {t['load']:.2f} | {t['first']:.2f} | {t['again']:.3f} | {counts} "
              f"| {t['mean']:.6g} |")


if __name__ == "__main__":
    main()
