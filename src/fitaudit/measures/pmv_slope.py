"""The PMV slope of the network's own training, as a complexity measure (fitaudit)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_float, check_int
from fitaudit.measures import _torch as T
from fitaudit.measures.base import Measure, ModelRecord
from fitaudit.models.torch_ops import accuracy, device_of
from fitaudit.random import check_random_state, spawn_seeds


def retrain(
    initial: Any,
    x: np.ndarray,
    y: np.ndarray,
    *,
    epochs: int,
    lr: float,
    batch_size: int,
    weight_decay: float,
    random_state: int,
) -> float:
    """Train a copy of ``initial`` with SGD (momentum 0.9) on (x, y); its training accuracy on y."""
    torch = T.torch_()
    net = copy.deepcopy(initial)
    for p in net.parameters():
        p.requires_grad_(True)
    optimizer = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9, weight_decay=weight_decay)
    rng = np.random.default_rng(random_state)
    xt, yt = T.on_model_device(net, x), T.labels_on(net, y)  # sent once for every epoch
    for _ in range(epochs):
        net.train()
        order = torch.as_tensor(rng.permutation(len(x)), device=xt.device)
        for batch in T.iterate_batches(len(x), batch_size):
            rows = order[batch]
            if len(rows) < 2:
                continue  # batch norm cannot train on a single example
            loss = torch.nn.functional.cross_entropy(net(xt[rows]), yt[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    net.eval()
    return accuracy(net, xt, y)


class PMVSlope(Measure):
    """-|k_S|: minus the PMV slope of the network's training accuracy against label noise.

    Perturbed model validation (Zhang, Barr, Guedj, Harman, Shawe-Taylor
    2019, Sec. 3; docs/pmv.md#the-score) applied to the network's own training: for
    each noise rate r, flip a fraction r of each class's training labels
    (:func:`fitaudit.pmv.flip_labels`, scheme "next"), retrain the
    architecture from its initial weights (``record.initial_model``, or a
    fresh initialisation of a copy) with SGD (momentum 0.9; learning rate,
    batch size and weight decay from ``record.hparams`` when present, else
    0.02, 64, 0) for ``epochs`` epochs, and record the training accuracy
    on the labels it was trained on; ``k_S`` is the least-squares slope
    of accuracy on r (:func:`fitaudit.pmv.fit_line`). A network that
    memorises the noise keeps its accuracy (``|k_S| ~ 0``), the mark of
    overfitting, so the measure ``-|k_S|`` is largest for it (larger =
    larger predicted gap).

    Parameters
    ----------
    rates : sequence of float
        Noise rates in (0, 0.5] (default 0.1, ..., 0.5: half of PMV's
        default grid, for the 300 s budget).
    epochs : int
        Training epochs per perturbed copy (a fixed budget, not the
        original training's stopping rule).
    max_examples : int or None
        Random training subset retrained on (None: all).
    """

    name: ClassVar[str] = "pmv_slope"
    needs_grad: ClassVar[bool] = True
    cost: ClassVar[str] = "expensive"
    family: ClassVar[str] = "fitaudit"
    reference: ClassVar[str] = (
        "Zhang, Barr, Guedj, Harman & Shawe-Taylor, Perturbed model validation, 2019 (fitaudit.pmv)"
    )

    def __init__(
        self,
        *,
        random_state: Any = 0,
        rates: Sequence[float] = (0.1, 0.2, 0.3, 0.4, 0.5),
        epochs: int = 10,
        max_examples: int | None = 1000,
    ) -> None:
        super().__init__(random_state=random_state)
        if isinstance(rates, (str, bytes)) or not isinstance(rates, Sequence) or len(rates) < 2:
            raise InputError(
                f"`rates` must be a list of at least 2 noise rates in (0, 0.5]; got {rates!r}."
            )
        self.rates = tuple(
            check_float(r, "rates", low=0, high=0.5, low_inclusive=False) for r in rates
        )
        self.epochs = check_int(epochs, "epochs", minimum=1)
        self.max_examples = (
            None if max_examples is None else check_int(max_examples, "max_examples", minimum=2)
        )

    def compute(self, record: ModelRecord) -> float:
        # imported here: listing the measures must not depend on the other instruments
        from fitaudit.pmv import fit_line, flip_labels

        torch = T.torch_()
        x, y = T.check_record_data(record, self.name)
        rng = check_random_state(self.random_state)
        x, y = T.subsample(x, y, self.max_examples, rng)
        if record.initial_model is not None:
            initial = T.eval_copy(record.initial_model)
        else:
            device = device_of(record.model)
            initial = T.eval_copy(record.model).cpu()  # drawn by the CPU generator: one seed, one initialisation
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(int(rng.integers(0, 2**31)))
                for module in initial.modules():
                    if hasattr(module, "reset_parameters"):
                        module.reset_parameters()
            initial.to(device)
        hp = record.hparams or {}
        lr = float(hp.get("learning_rate", 0.02))
        batch_size = int(hp.get("batch_size", 64))
        weight_decay = float(hp.get("weight_decay", 0.0))
        seeds = spawn_seeds(rng, 2 * len(self.rates))
        accs = []
        for i, rate in enumerate(self.rates):
            noisy = np.asarray(flip_labels(y, rate, random_state=seeds[2 * i]), dtype=np.int64)
            accs.append(
                retrain(
                    initial,
                    x,
                    noisy,
                    epochs=self.epochs,
                    lr=lr,
                    batch_size=batch_size,
                    weight_decay=weight_decay,
                    random_state=seeds[2 * i + 1],
                )  # fmt: skip
            )
        slope, _ = fit_line(np.asarray(self.rates), np.asarray(accs))
        return -abs(slope)
