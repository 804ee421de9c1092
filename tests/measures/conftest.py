"""A tiny trained conv net with batch norm, its initialisation and a tiny image dataset."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fitaudit.measures import ModelRecord  # noqa: E402

#: settings that keep the expensive searches short in tests (the definitions allow them)
FAST: dict[str, dict[str, Any]] = {
    "pacbayes_init": {"search_depth": 4, "montecarlo_samples": 2},
    "pacbayes_orig": {"search_depth": 4, "montecarlo_samples": 2},
    "pacbayes_flatness": {"search_depth": 4, "montecarlo_samples": 2},
    "pacbayes_mag_init": {"search_depth": 4, "montecarlo_samples": 2},
    "pacbayes_mag_orig": {"search_depth": 4, "montecarlo_samples": 2},
    "pacbayes_mag_flatness": {"search_depth": 4, "montecarlo_samples": 2},
    "sharpness": {"search_depth": 3, "ascent_steps": 3, "eval_batches": 2, "n_restarts": 1},
    "sharpness_flatness": {
        "search_depth": 3,
        "ascent_steps": 3,
        "eval_batches": 2,
        "n_restarts": 1,
    },
    "sharpness_mag_flatness": {
        "search_depth": 3,
        "ascent_steps": 3,
        "eval_batches": 2,
        "n_restarts": 1,
    },
    "knn_label_variation": {"n_graphs": 3, "per_class": 10},
    "dbi_mixup": {"n_draws": 2, "n_examples": 40},
    "jacobian_norm": {"n_batches": 2},
    "mixup_margin": {"n_batches": 2, "batch_size": 20},
    "augmentation_margin": {"n_batches": 2, "batch_size": 20},
    "pmv_slope": {"rates": (0.1, 0.3), "epochs": 2},
    "adversarial_gap": {"max_examples": 60},
    "examiner_worst_case": {"steps": 3, "n_instances": 8},
}


def make_images(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Three classes of 3x8x8 images: a bright row, column or diagonal, plus noise."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    x = rng.normal(0.3, 0.15, size=(n, 3, 8, 8)).astype(np.float32)
    for i, c in enumerate(y):
        pos = int(rng.integers(1, 7))
        if c == 0:
            x[i, :, pos, :] += 0.8
        elif c == 1:
            x[i, :, :, pos] += 0.8
        else:
            x[i, :, np.arange(8), np.arange(8)] += 0.8
    return x, y.astype(np.int64)


def make_net() -> Any:
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(6 * 4 * 4, 3),
    )


def train(net: Any, x: np.ndarray, y: np.ndarray, steps: int = 150, seed: int = 0) -> Any:
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    xt, yt = torch.as_tensor(x), torch.as_tensor(y)
    net.train()
    for _ in range(steps):
        idx = torch.randint(0, len(x), (32,), generator=gen)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(xt[idx]), yt[idx]).backward()
        opt.step()
    return net.eval()


@pytest.fixture(scope="session")
def fast() -> dict[str, dict[str, Any]]:
    """Short-search settings per measure name."""
    return FAST


@pytest.fixture(scope="session")
def record() -> ModelRecord:
    torch.manual_seed(0)
    x, y = make_images(90, seed=1)
    xt, yt = make_images(90, seed=2)
    net = make_net()
    initial = copy.deepcopy(net).eval()
    train(net, x, y)
    with torch.no_grad():
        train_acc = float((net(torch.as_tensor(x)).argmax(1).numpy() == y).mean())
        test_acc = float((net(torch.as_tensor(xt)).argmax(1).numpy() == yt).mean())
    return ModelRecord(
        model=net,
        train_x=x,
        train_y=y,
        initial_model=initial,
        n_classes=3,
        metrics={"train_acc": train_acc, "test_acc": test_acc},
        model_id="tiny",
    )
