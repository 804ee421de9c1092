"""Checks run against a Dask cluster of worker *processes* (started here), in a child process of the test.

``python tests/cluster_checks.py FOLDER`` starts a scheduler and two single-thread
worker processes (with one, joblib would run the units here, sequentially), runs the checks and prints one JSON object: the test reads it
and kills this process (and its workers) if it does not finish in time.
"""

from __future__ import annotations

import functools
import json
import sys
import threading
import time
from pathlib import Path

import numpy as np

from fitaudit.options import RunOptions

CLASSES = ["a", "b", "c"]


def make_files(folder: Path) -> Path:
    """A torch folder and its ONNX export (a linear model reading the channel tints of 12 x 12 crops) and
    an image folder of one image per class, each tinted by its class's channel."""
    import torch
    from PIL import Image

    from fitaudit.models import export_onnx, save_torch_model
    from fitaudit.models.architectures import build_architecture

    pipeline = {"resize": 14, "crop": 12}
    config = {"architecture": "linear", "kwargs": {"in_features": 3 * 12 * 12, "n_classes": 3}, "n_classes": 3,
              "classes": CLASSES, "pipeline": pipeline}
    module = build_architecture(config)
    torch.manual_seed(0)
    with torch.no_grad():
        layer = next(m for m in module.modules() if isinstance(m, torch.nn.Linear))
        weight = torch.zeros(3, 3, 12, 12)
        for c in range(3):
            weight[c, c] = 40.0 / 144
        layer.weight.copy_(weight.reshape(3, -1) + 0.01 * torch.randn(3, 3 * 144))
        layer.bias.zero_()
    save_torch_model(module, config, folder / "model")
    export_onnx(module, folder / "model.onnx", input_shape=(3, 12, 12), metadata={"classes": CLASSES, "pipeline": pipeline})
    rng = np.random.default_rng(0)
    for c, name in enumerate(CLASSES):
        (folder / "images" / name).mkdir(parents=True)
        for i in range(1):
            pixels = rng.normal(0.35, 0.15, (14, 14, 3))
            pixels[..., c] += 0.25
            Image.fromarray((np.clip(pixels, 0, 1) * 255).astype(np.uint8)).save(folder / "images" / name / f"{i}.png")
    return folder


def said(what: str, started: float = time.perf_counter()) -> None:
    print(f"{time.perf_counter() - started:7.1f} s  {what}", file=sys.stderr, flush=True)


def logits_of(item: int, model: object, x: np.ndarray) -> list[float]:
    return model.logits(x[item : item + 2]).ravel().tolist()  # type: ignore[attr-defined]


def fail_on_two(item: int) -> int:
    if item == 2:
        raise RuntimeError("no twos here")
    return item


def holds_lock(item: int, lock: object) -> int:
    return item


def caught(call) -> str:
    try:
        call()
    except Exception as exc:  # the test checks the type and the words
        return f"{type(exc).__name__}: {exc}"
    return "no error"


def main(folder: str) -> None:
    import distributed
    import joblib

    import fitaudit
    from fitaudit.models import load_model
    from fitaudit.parallel import parallel_map

    if not Path(folder, "model.onnx").exists():
        make_files(Path(folder))
    onnx_file, torch_folder, images = f"{folder}/model.onnx", f"{folder}/model", f"{folder}/images"
    x = np.random.default_rng(0).random((6, 3, 12, 12), dtype=np.float32)
    onnx = load_model(onnx_file)
    task = functools.partial(logits_of, model=onnx, x=x)
    local = parallel_map(task, range(4))
    audits = {}
    kwargs = {"images": images, "instruments": ["examine"], "examine_steps": 2}
    quiet = RunOptions(progress=False)
    for model in (onnx_file, torch_folder):
        audits[model] = [fitaudit.audit(model, options=quiet, **kwargs).part("examine").numbers]
        said(f"local audit of {model}")
    out: dict[str, object] = {}
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                 silence_logs=50) as cluster,
        distributed.Client(cluster),
    ):
        said("cluster started")
        with joblib.parallel_config(backend="dask"):
            out["onnx_logits_equal"] = parallel_map(task, range(4)) == local
            out["failed_unit"] = caught(lambda: parallel_map(fail_on_two, range(4), desc="twos"))
            out["unsendable"] = caught(lambda: parallel_map(functools.partial(holds_lock, lock=threading.Lock()),
                                                            range(3), desc="locked"))
        said("parallel_map checks")
        for model in (onnx_file, torch_folder):
            on_cluster = quiet.replace(dask_scheduler=cluster.scheduler_address)
            audits[model].append(fitaudit.audit(model, options=on_cluster, **kwargs).part("examine").numbers)
            said(f"cluster audit of {model}")
    out["examine"] = {model: numbers for model, numbers in audits.items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
