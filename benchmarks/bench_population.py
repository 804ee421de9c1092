"""Import time per model of a 100-model population (ONNX files and torch folders, small models).

The population: 100 VGG-like networks (``pgdl_vgg``, one block, width 4 or
8, dense 16, 8x8x3 inputs, 3 classes) over width {4, 8} x scale of the
weights (5 values) x seed (10 values), at initialisation with scaled
weights, saved once as ``.onnx`` files (TorchScript exporter) and once as
torch folders (``config.json`` + ``weights.safetensors``). Timed: the whole
``fitaudit.pgdl.population_import.import_population`` call (reading and checking
the table, loading every model, running it on the training inputs to
check its shape and classes, recomputing train and test accuracy on 200 +
200 images, copying the files and writing the population), per format,
best of ``--repeats``; and opening the written population plus loading every
model once (what a scoring run pays).

Run: ``python benchmarks/bench_population.py [--models 100] [--repeats 2]``.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import tempfile
import time
from pathlib import Path

import numpy as np


def build(root: Path, n_models: int) -> list[dict]:
    """Write the models in both formats and the data; the table rows."""
    import torch

    from fitaudit.data.io import save_npz
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        y = np.arange(200) % 3
        save_npz(root / f"{split}.npz", rng.uniform(0, 1, size=(200, 3, 8, 8)).astype(np.float32), y)
    (root / "onnx").mkdir()
    (root / "torch").mkdir()
    rows = []
    grid = itertools.product([4, 8], [0.5, 0.75, 1.0, 1.25, 1.5], range(10))
    for i, (width, scale, seed) in enumerate(itertools.islice(grid, n_models)):
        torch.manual_seed(seed)
        config = {"architecture": "pgdl_vgg", "kwargs": {"n_classes": 3, "in_channels": 3, "image_size": 8, "width": width,
                                                         "blocks": 1, "dense_layers": 1, "dense_width": 16}}
        module = build_architecture(config).eval()
        with torch.no_grad():
            for p in module.parameters():
                p.mul_(scale)
        torch.onnx.export(module, torch.zeros(1, 3, 8, 8), str(root / "onnx" / f"m{i}.onnx"), input_names=["x"],
                          output_names=["logits"], dynamic_axes={"x": {0: "n"}, "logits": {0: "n"}}, dynamo=False)
        save_torch_model(module, config, root / "torch" / f"m{i}")
        rows.append({"model": f"m{i}", "width": width, "scale": scale, "seed": seed})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    import warnings

    import torch

    from fitaudit.pgdl import load_task
    from fitaudit.pgdl.population_import import import_population

    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        rows = build(root, args.models)
        print(f"Import of a {len(rows)}-model population (pgdl_vgg width 4/8, 8x8x3, 3 classes; 200 train + 200 test "
              f"images); 1 torch thread, best of {args.repeats}. Writing the models took {time.perf_counter() - start:.1f} s.")
        for kind, suffix in (("onnx", ".onnx"), ("torch", "")):
            table = root / f"{kind}.csv"
            with open(table, "w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows({**r, "model": r["model"] + suffix} for r in rows)
            best, reopen = np.inf, np.inf
            for repeat in range(args.repeats):
                out = root / f"pop-{kind}-{repeat}"
                start = time.perf_counter()
                import_population(root / kind, table, root / "train.npz", out, test_data=root / "test.npz")
                best = min(best, time.perf_counter() - start)
                start = time.perf_counter()
                population = load_task(out)
                for model_id in population.model_ids:
                    population.model(model_id)
                reopen = min(reopen, time.perf_counter() - start)
            print(f"  {kind:<6} import {best:7.2f} s = {1000 * best / len(rows):6.1f} ms per model;  "
                  f"reopen + load every model {reopen:6.2f} s = {1000 * reopen / len(rows):6.1f} ms per model")


if __name__ == "__main__":
    main()
