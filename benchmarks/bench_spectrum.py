"""The weight-spectrum measures on a default-zoo model: seconds, against weightwatcher in the same run.

The model is the widest member architecture of the ``shapes`` default zoo
(``pgdl_vgg``: width 32, 2 blocks with batch norm, dense 128, 16x16x3
inputs, 12 classes), or a model of a PGDL task given with ``--task`` (the
last id). Lines:

* each fitaudit spectrum measure alone (the shared spectrum cache cleared
  before each, so every line is the measure's full cost);
* all five on one model (one SVD and power-law fit per layer, shared);
* ``weightwatcher.WeightWatcher(model).analyze(mp_fit=True,
  randomize=False, vectors=False)`` (the same quantities), and its default
  ``analyze()`` (which adds randomised ESDs and eigenvector statistics);
* the largest relative difference between our per-model values and
  weightwatcher's means over layers.

Run: ``python benchmarks/bench_spectrum.py [--task DIR] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import time
import warnings
from typing import Any

import numpy as np

from fitaudit.measures import ModelRecord, _spectrum, get_measure
from fitaudit.measures.base import WorkCache

MEASURES = {
    "spectral_alpha": "alpha",
    "spectral_alpha_weighted": "alpha_weighted",
    "spectral_log_norm": "log_spectral_norm",
    "spectral_stable_rank": "stable_rank",
    "spectral_mp_softrank": "mp_softrank",
}


def zoo_model(task: str | None) -> tuple[Any, str]:
    """The model and a description."""
    if task:
        from fitaudit.pgdl import load_task

        loaded = load_task(task)
        model_id = loaded.model_ids[-1]
        return loaded.model(model_id), f"model {model_id} of {task}"
    import torch

    from fitaudit.models.architectures import build_architecture

    torch.manual_seed(0)
    config = {"architecture": "pgdl_vgg", "kwargs": {"n_classes": 12, "in_channels": 3, "image_size": 16, "width": 32,
                                                     "blocks": 2, "dense_layers": 1, "dense_width": 128, "batch_norm": True}}
    return build_architecture(config).eval(), "shapes-default widest architecture (width 32, 2 blocks, BN), at initialisation"


def best_of(fn: Any, repeats: int) -> tuple[float, Any]:
    """Smallest wall time over ``repeats`` calls, and the last result."""
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def weightwatcher(model: Any, **kwargs: Any) -> Any:
    import weightwatcher as ww

    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ww.WeightWatcher(model=model).analyze(**kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default=None, help="a PGDL task folder (default: a zoo architecture at init)")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs per line")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    model, description = zoo_model(args.task)
    record = ModelRecord(model=model, train_x=np.zeros((1, 1)), train_y=np.zeros(1, dtype=np.int64))
    weightwatcher(model, mp_fit=True, randomize=False, vectors=False)  # imports weightwatcher before any timing
    print(f"Weight-spectrum measures on one model: {description}; 1 torch thread, best of {args.repeats}")
    rows: list[tuple[str, float]] = []
    values = {}
    for name in MEASURES:
        def alone(name: str = name) -> float:
            return get_measure(name)(dataclasses.replace(record, cache=WorkCache()))  # nothing reused

        seconds, values[name] = best_of(alone, args.repeats)
        rows.append((f"fitaudit {name}", seconds))

    def all_five() -> None:
        shared = dataclasses.replace(record, cache=WorkCache())  # the five share one set of spectra
        for name in MEASURES:
            get_measure(name)(shared)

    rows.append(("fitaudit, all five on one model", best_of(all_five, args.repeats)[0]))
    seconds, details = best_of(lambda: weightwatcher(model, mp_fit=True, randomize=False, vectors=False), args.repeats)
    rows.append(("weightwatcher analyze(mp_fit=True, randomize=False, vectors=False)", seconds))
    rows.append(("weightwatcher analyze() (defaults)", best_of(lambda: weightwatcher(model), args.repeats)[0]))
    width = max(len(r[0]) for r in rows)
    for label, secs in rows:
        print(f"  {label:<{width}}  {secs:7.3f} s")
    print(f"  layers analysed: {len(details)} (weightwatcher), {len(_spectrum.model_spectra(model))} (fitaudit)")
    for name, column in MEASURES.items():
        reference = float(details[column].mean())
        print(f"  {name:<24} fitaudit {values[name]:.9g}  weightwatcher {reference:.9g}  "
              f"rel. diff {abs(values[name] - reference) / abs(reference):.1e}")


if __name__ == "__main__":
    main()
