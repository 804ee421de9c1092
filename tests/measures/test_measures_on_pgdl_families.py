"""Every measure runs on each PGDL network family (VGG with batch norm and dropout, NiN, all-conv with GAP)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fitaudit.measures import ModelRecord, get_measure, list_measures  # noqa: E402
from fitaudit.models.architectures import build_architecture  # noqa: E402

#: every test here takes seconds (README.md: the fast command leaves them out)
pytestmark = pytest.mark.slow

FAMILIES = {
    "pgdl_vgg": {"width": 4, "blocks": 1, "batch_norm": True, "dropout": 0.3, "dense_width": 16},
    "pgdl_nin": {"width": 4, "blocks": 2, "dropout": 0.2},
    "pgdl_allconv": {"width": 4, "depth": 3},
}


@pytest.mark.parametrize("architecture", sorted(FAMILIES))
def test_every_measure_on_a_pgdl_family(architecture: str, record: ModelRecord, fast) -> None:
    torch.manual_seed(0)
    kwargs = dict(n_classes=3, in_channels=3, image_size=8, **FAMILIES[architecture])
    net = build_architecture({"architecture": architecture, "kwargs": kwargs})
    initial = copy.deepcopy(net).eval()
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    x, y = torch.as_tensor(record.train_x), torch.as_tensor(record.train_y)
    net.train()
    for _ in range(40):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    rec = ModelRecord(
        model=net.eval(),
        train_x=record.train_x,
        train_y=record.train_y,
        initial_model=initial,
        metrics=record.metrics,
        model_id=architecture,
    )
    for name in list_measures():
        value = get_measure(name, **fast.get(name, {}))(rec)
        assert np.isfinite(value), name
