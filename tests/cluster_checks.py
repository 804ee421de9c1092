"""Checks run against a Dask cluster of worker *processes* (started here), in a child process of the test.

``python tests/cluster_checks.py FOLDER`` starts a scheduler and one single-thread
worker process, runs the checks and prints one JSON object: the test reads it
and kills this process (and its workers) if it does not finish in time.
"""

from __future__ import annotations

import functools
import json
import sys
import threading

import numpy as np


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

    onnx_file, torch_folder, images = f"{folder}/model.onnx", f"{folder}/model", f"{folder}/images"
    x = np.random.default_rng(0).random((6, 3, 12, 12), dtype=np.float32)
    onnx = load_model(onnx_file)
    task = functools.partial(logits_of, model=onnx, x=x)
    local = parallel_map(task, range(4))
    audits = {}
    kwargs = {"images": images, "instruments": ["examine"], "examine_steps": 4, "progress": False}
    for model in (onnx_file, torch_folder):
        audits[model] = [fitaudit.audit(model, **kwargs).part("examine").numbers]
    out: dict[str, object] = {}
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                 silence_logs=50) as cluster,
        distributed.Client(cluster),
    ):
        with joblib.parallel_config(backend="dask"):
            out["onnx_logits_equal"] = parallel_map(task, range(4)) == local
            out["failed_unit"] = caught(lambda: parallel_map(fail_on_two, range(4), desc="twos"))
            out["unsendable"] = caught(lambda: parallel_map(functools.partial(holds_lock, lock=threading.Lock()),
                                                            range(3), desc="locked"))
        for model in (onnx_file, torch_folder):
            audits[model].append(fitaudit.audit(model, dask_scheduler=cluster.scheduler_address, **kwargs)
                                 .part("examine").numbers)
    out["examine"] = {model: numbers for model, numbers in audits.items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
