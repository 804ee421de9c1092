"""Fixtures shared across test folders."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest


def build_tiny_pgdl_task(folder: Path, seed: int = 0) -> Path:
    """A PGDL task of 8 small MLPs on vectors (grid width x scale x seed), written in the competition's format.

    The networks are not trained: random weights scaled by ``scale``; their
    train and test accuracies are measured on the task's data, so the gap is real.
    """
    torch = pytest.importorskip("torch")
    pytest.importorskip("h5py")
    from fitaudit.pgdl import TaskModel, write_task

    rng = np.random.default_rng(seed)
    x_train = rng.normal(size=(60, 5)).astype(np.float32)
    y_train = (x_train[:, 0] > 0).astype(np.int64)
    x_test = rng.normal(size=(60, 5)).astype(np.float32)
    y_test = (x_test[:, 0] > 0).astype(np.int64)
    members = []
    for i, (width, scale, init_seed) in enumerate(itertools.product([4, 8], [0.5, 2.0], [0, 1])):
        torch.manual_seed(init_seed + 10 * width)
        initial = torch.nn.Sequential(torch.nn.Linear(5, width), torch.nn.ReLU(), torch.nn.Linear(width, 2))
        model = torch.nn.Sequential(torch.nn.Linear(5, width), torch.nn.ReLU(), torch.nn.Linear(width, 2))
        model.load_state_dict(initial.state_dict())
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(scale).add_(0.3 * torch.randn_like(p))
            acc = [
                float((model(torch.from_numpy(x)).argmax(1).numpy() == y).mean())
                for x, y in ((x_train, y_train), (x_test, y_test))
            ]
        members.append(
            TaskModel(
                model_id=str(i),
                model=model.eval(),
                hparams={"width": width, "scale": scale, "seed": init_seed},
                metrics={"train_acc": acc[0], "test_acc": acc[1]},
                initial_model=initial.eval(),
            )
        )
    return write_task(folder, members, (x_train, y_train), (x_test, y_test), shard_size=25)


@pytest.fixture(scope="session")
def tiny_pgdl_task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Folder of a tiny PGDL task (8 MLPs, 3 hyperparameters; see :func:`build_tiny_pgdl_task`)."""
    return build_tiny_pgdl_task(tmp_path_factory.mktemp("pgdl") / "task")


@pytest.fixture(scope="session")
def shapes_tiny():
    """A small Shapes data set: 3 classes (sphere, cube, torus), 18 images of 32 x 32 (do not modify)."""
    from fitaudit.data.shapes.datasets import make_dataset

    return make_dataset(3, 2, classes=["sphere", "cube", "torus"], random_state=0)


@pytest.fixture(scope="session")
def tiny_torch_net(shapes_tiny):
    """A Shapes ResNet of width 4 trained for one epoch on ``shapes_tiny`` (in eval mode)."""
    torch = pytest.importorskip("torch")
    from fitaudit.models.training import train_classifier

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        module, _ = train_classifier(
            shapes_tiny.images, shapes_tiny.labels, architecture="shapes_resnet", kwargs={"width": 4},
            epochs=1, batch_size=8, random_state=0, progress=False,
        )
    finally:
        torch.set_num_threads(threads)
    return module.eval()
