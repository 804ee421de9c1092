"""Time of every registered complexity measure on one default-zoo model, against the 300 s budget.

The PGDL competition allowed 5 minutes per model (on a GPU); METHODS.md
asks every measure to fit that budget on this CPU. The model is the largest
grid point of a default zoo (``--zoo shapes``: Network-in-Network at 16x16
with batch norm, 12 classes; ``--zoo digits``: VGG-like at 8x8), trained
here as the zoo trains (SGD, momentum 0.9, to a training cross-entropy of
0.01); every measure runs with its default settings
(the full searches) and one torch thread. The PAC-Bayes measures sharing a
sigma search reuse it within a process; here the cache is cleared before
each measure so that every line is the measure's full cost.

Run: ``python benchmarks/bench_measures.py [--zoo digits shapes] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import copy
import time

import numpy as np

from fitaudit.measures import ModelRecord, _fantastic, get_measure, list_measures
from fitaudit.models.architectures import build_architecture
from fitaudit.models.zoo import TRAINING_HPARAMS, default_zoo

BUDGET_S = 300.0


def train(
    module, x: np.ndarray, y: np.ndarray, lr: float, batch_size: int, max_epochs: int, seed: int = 0
):
    """SGD with momentum 0.9 until the training cross-entropy is <= 0.01 (the zoo's stopping rule)."""
    import torch

    optimizer = torch.optim.SGD(module.parameters(), lr=lr, momentum=0.9)
    rng = np.random.default_rng(seed)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    epochs = 0
    while epochs < max_epochs:
        epochs += 1
        module.train()
        order = rng.permutation(len(x))
        for start in range(0, len(x), batch_size):
            rows = torch.from_numpy(order[start : start + batch_size])
            loss = torch.nn.functional.cross_entropy(module(xt[rows]), yt[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        module.eval()
        with torch.no_grad():
            if float(torch.nn.functional.cross_entropy(module(xt), yt)) <= 0.01:
                break
    return module.eval(), epochs


def one_member_record(zoo_name: str) -> tuple[ModelRecord, str]:
    """The zoo's largest grid point (batch norm on, no dropout), trained, as a ModelRecord."""
    import torch

    spec, data = default_zoo(zoo_name, "default")
    point = {name: values[-1] for name, values in spec.grid.items()}
    point.update({k: v for k, v in (("batch_norm", True), ("dropout", 0.0)) if k in point})
    kwargs = {**spec.fixed, **{k: v for k, v in point.items() if k not in TRAINING_HPARAMS}}
    kwargs.update(
        n_classes=data.n_classes,
        in_channels=data.x_train.shape[1],
        image_size=list(data.x_train.shape[2:]),
    )
    torch.manual_seed(0)
    module = build_architecture({"architecture": spec.architecture, "kwargs": kwargs})
    initial = copy.deepcopy(module).eval()
    started = time.perf_counter()
    module, epochs = train(
        module,
        data.x_train,
        data.y_train,
        spec.learning_rate,
        point.get("batch_size", spec.batch_size),
        spec.max_epochs,
    )
    seconds = time.perf_counter() - started
    with torch.no_grad():
        train_acc = float(
            (module(torch.from_numpy(data.x_train)).argmax(1).numpy() == data.y_train).mean()
        )
        test_acc = float(
            (module(torch.from_numpy(data.x_test)).argmax(1).numpy() == data.y_test).mean()
        )
    record = ModelRecord(
        model=module,
        train_x=data.x_train,
        train_y=data.y_train,
        initial_model=initial,
        n_classes=data.n_classes,
        hparams=point,
        metrics={"train_acc": train_acc, "test_acc": test_acc},
        model_id="1",
    )
    n_params = sum(p.numel() for p in module.parameters())
    text = (
        f"zoo {spec.name}: {spec.architecture} {point} ({n_params} parameters), "
        f"{len(data.x_train)} training images of shape {data.x_train.shape[1:]}, trained {epochs} epochs "
        f"in {seconds:.1f} s: train acc {train_acc:.3f}, test acc {test_acc:.3f}"
    )
    return record, text


def time_measures(zoo: str) -> list[str]:
    """Train the zoo's model, time every measure on it; the printed lines."""
    record, description = one_member_record(zoo)
    lines = [
        f"Per-measure time on one default-zoo model, budget {BUDGET_S:.0f} s per model (PGDL), 1 torch thread",
        description,
        f"  {'measure':32s} {'family':13s} {'cost':10s} {'seconds':>9s} {'value':>14s}  within budget",
    ]
    print("\n".join(lines), flush=True)
    total, over = 0.0, []
    for name in list_measures():
        measure = get_measure(name, random_state=0)
        _fantastic._SIGMA_CACHE.clear()  # time each PAC-Bayes measure with its own sigma search
        start = time.perf_counter()
        value = measure(record)
        seconds = time.perf_counter() - start
        total += seconds
        if seconds > BUDGET_S:
            over.append(name)
        meta = measure.metadata()
        line = (
            f"  {name:32s} {meta['family']:13s} {meta['cost']:10s} {seconds:9.2f} {value:14.6g}  "
            f"{'yes' if seconds <= BUDGET_S else 'NO'}"
        )
        print(line, flush=True)
        lines.append(line)
    summary = f"  all {len(list_measures())} measures: {total:.1f} s in total; over the budget: {', '.join(over) or 'none'}"
    print(summary, flush=True)
    return lines + [summary]


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--zoo", nargs="+", choices=["shapes", "digits"], default=["digits", "shapes"]
    )
    parser.add_argument("--out", default=None, help="also write the tables to this file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    lines: list[str] = []
    for zoo in args.zoo:
        lines += time_measures(zoo) + [""]
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines))


if __name__ == "__main__":
    main()
