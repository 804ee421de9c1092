"""The PGDL measures and the zoo's training run on the model's device (issue 39).

No GPU is needed: torch's ``meta`` device stands for "another device than
the CPU" (a tensor there mixed with a CPU tensor is an error, as a CUDA one
would be), and ``device="cpu"`` goes through the same functions.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.measures import Measure, ModelRecord
from fitaudit.options import RunOptions
from fitaudit.pgdl.harness import score_task

torch = pytest.importorskip("torch")

from fitaudit.measures import _fantastic as F  # noqa: E402
from fitaudit.measures import _torch as T  # noqa: E402
from fitaudit.measures import _winners as W  # noqa: E402
from fitaudit.models.torch_ops import device_of  # noqa: E402


class WhereAmI(Measure):
    """Records where the harness put the model and its initial weights (value: 1)."""

    name: ClassVar[str] = "where_am_i"
    needs_data: ClassVar[bool] = False
    needs_init: ClassVar[bool] = True
    seen: ClassVar[list[tuple[str, str]]] = []

    def compute(self, record: ModelRecord) -> float:
        type(self).seen.append((device_of(record.model).type, device_of(record.initial_model).type))
        return 1.0


def test_the_harness_moves_every_model_and_its_initial_weights_to_the_device(tiny_pgdl_task) -> None:
    WhereAmI.seen = []
    result = score_task(tiny_pgdl_task, [WhereAmI()], options=RunOptions(device="meta", progress=False))
    assert WhereAmI.seen == [("meta", "meta")] * result.n_models
    WhereAmI.seen = []
    score_task(tiny_pgdl_task, [WhereAmI()], options=RunOptions(progress=False))  # default: the CPU
    assert WhereAmI.seen == [("cpu", "cpu")] * result.n_models


def test_cpu_gives_the_values_of_the_default(tiny_pgdl_task) -> None:
    names = ["weight_norm", "inverse_margin", "jacobian_norm"]
    default = score_task(tiny_pgdl_task, names, options=RunOptions(progress=False))
    on_cpu = score_task(tiny_pgdl_task, names, options=RunOptions(device="cpu", progress=False))
    for a, b in zip(default.scores, on_cpu.scores):
        assert a.values == b.values and not a.errors


@pytest.mark.parametrize("device, words", [
    ("tpu", "`device` must name a torch device such as 'cpu' or 'cuda:0'; got 'tpu'."),
    ("cuda:7", "`device` is 'cuda:7' but "),
])
def test_a_device_this_machine_lacks_is_refused_before_any_work(tiny_pgdl_task, device, words) -> None:
    from fitaudit.pgdl.leaderboard import leaderboard, rank_models
    from fitaudit.pgdl.zoo import build_zoo

    if device.startswith("cuda") and torch.cuda.device_count() > 7:
        pytest.skip("this machine has that device")
    for run in (lambda: score_task(tiny_pgdl_task, ["weight_norm"], options=RunOptions(device=device, progress=False)),
                lambda: leaderboard(tiny_pgdl_task, ["weight_norm"], options=RunOptions(device=device, progress=False)),
                lambda: rank_models(tiny_pgdl_task, ["weight_norm"], options=RunOptions(device=device, progress=False)),
                lambda: build_zoo("digits", size="quick", options=RunOptions(device=device, progress=False))):
        with pytest.raises(InputError) as caught:
            run()
        assert str(caught.value).startswith(words)


def test_batches_and_random_draws_follow_the_model_to_its_device() -> None:
    """On today's CPU-only code each of these mixes a CPU tensor into another device's batch (an error)."""
    rng = np.random.default_rng(0)
    x = torch.zeros(4, 3, 8, 8, device="meta")
    for augmented in (W.standard_augment(x, rng), W.sobel_dx(x), W.random_contrast(x, rng), W.random_zoom(x, rng)):
        assert augmented.device.type == "meta"
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 3)).to("meta")
    images = np.zeros((5, 3, 8, 8), np.float32)
    assert T.predict(net, images).device.type == "meta"
    assert T.on_model_device(net, images).device.type == "meta"
    assert T.labels_on(net, np.arange(5)).device.type == "meta"
    originals = [p.detach().clone() for p in net.parameters()]
    F.set_noisy_parameters(net, originals, 0.1, None, T.generator(rng))  # CPU draws, moved to the weights
    assert {p.device.type for p in net.parameters()} == {"meta"}


def test_the_zoo_trains_its_members_on_the_device_and_keys_them_by_it(monkeypatch) -> None:
    from fitaudit.pgdl import zoo

    seen: list[str] = []

    def fake_train(item, data):
        seen.append(item["settings"]["device"])
        summary = {"train_acc": 1.0, "test_acc": 0.5, "train_loss": 0.0, "epochs": 1, "converged": True, "seconds": 0.0}
        return {"summary": summary, "state": {}, "initial_state": {}}

    monkeypatch.setattr(zoo, "_train", fake_train)
    built = zoo.build_zoo("digits", size="quick", options=RunOptions(device="cpu", progress=False))
    assert seen == ["cpu"] * len(built.members)
