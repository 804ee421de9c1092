"""The RL examiner of Shu, Liu, Qiu, Yuille (AAAI 2020): an LSTM policy trained by REINFORCE.

User guide: docs/examiner.md#the-rl-examiner. Every factor is discretised into ``n_bins = 100``
equal bins (:meth:`FactorSpace.from_bins`: a bin stands for its centre).
A policy samples one factor vector autoregressively, as the controller of
neural architecture search (Zoph & Le, ICLR 2017) samples an architecture:
an LSTM (embedding 30, hidden 30) runs one step per factor, in
``factor_order``; at step ``j`` a softmax head of its own turns the hidden
state into a distribution over factor ``j``'s bins, a bin is drawn, and its
embedding (a table per factor) is the LSTM's next input (a learned start
vector is the first input). The reward of a vector is the examination
loss; the policy is trained by REINFORCE,

    grad J = (1/B) sum_b (R_b - baseline) grad log pi(a_b),

with batches of ``B = 32`` vectors and Adam at learning rate 1e-3.

Choices the paper leaves open, made explicit here:

* **baseline**: the description of the paper we worked from names
  none, and we could not check the paper's text further; ``baseline="ema"``
  (default) subtracts an exponential moving average of past batch-mean
  rewards (decay 0.9, as in Zoph & Le), ``"mean"`` the current batch's
  mean reward, ``"none"`` nothing (plain REINFORCE, high variance).
* **what one step is** (the paper leaves it open): ``update="batch"``
  (default) draws the ``B`` vectors of one batch in one examination step
  and updates the policy once per step (``queries_per_step = 32``, so ``T``
  steps query the model ``32 T`` times); ``update="sequential"`` draws one
  vector per step and updates every ``B`` steps (``queries_per_step = 1``).
  At an equal number of *queries* the two are the same algorithm (they
  even draw the same vectors: one row of uniforms per vector); at an
  equal number of *steps* only ``"batch"`` can reproduce the paper's
  Table 2, where the RL examiner becomes far harsher between T = 100 and
  T = 500: with Adam at lr 1e-3 the logits move by roughly 1e-2 per update,
  so a policy needs a few hundred updates to concentrate, which
  ``"sequential"`` reaches only after ~10,000 steps (T = 500 is 15 updates).
  Measured on a 9-factor toy (``benchmarks/bench_examiner_rl_modes.py``):
  mean true-class probability of the step-T queries at T = 0 / 100 / 300 /
  500 is 0.92 / 0.91 / 0.14 / 0.06 with ``"batch"`` (the paper's shape: flat
  to T = 100, then a steep fall) and 0.92 / 0.90 / 0.96 / 0.96 with
  ``"sequential"``.
* weights start uniform in [-0.1, 0.1] (Zoph & Le), so the first policy is
  close to uniform random search.

All instances' policies are one set of grouped tensors (a leading instance
axis, batched matrix products), trained by one Adam optimiser; Adam acts
elementwise and the objective is a sum over instances, so this is exactly
one independent policy and optimiser per instance (weights in float32).
Sampling uses numpy
streams drawn per instance, so an instance's queries do not depend on
the number of instances examined together. :meth:`RLExaminer.tell`
recomputes the log-probabilities of the told factors (bins from
:meth:`FactorSpace.to_bins`), so replaying a query log reproduces the
policy exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit._validation import check_choice, check_float, check_int
from fitaudit.examine.base import Examiner
from fitaudit.examine.random import instance_streams

UPDATES = ("batch", "sequential")
BASELINES = ("ema", "mean", "none")
#: half-width of the uniform initialisation of every weight (Zoph & Le 2017)
INIT_SCALE = 0.1


class RLExaminer(Examiner):
    """REINFORCE with an autoregressive LSTM policy over binned factors, one per instance.

    Parameters
    ----------
    random_state : None, int, SeedSequence or Generator
        Initial weights and sampling; the same seed and the same losses give
        the same queries.
    n_bins : int, default 100
        Bins per factor.
    embedding_dim, hidden_dim : int, default 30
        Sizes of the bin embeddings and of the LSTM state.
    batch_size : int, default 32
        Vectors per policy update (``B``).
    lr : float, default 1e-3
        Adam's learning rate.
    update : {"batch", "sequential"}, default "batch"
        ``"batch"``: one step draws ``batch_size`` vectors and makes one
        update; ``"sequential"``: one vector per step, one update every
        ``batch_size`` steps (see the module notes).
    baseline : {"ema", "mean", "none"}, default "ema"
        Reward baseline of REINFORCE.
    baseline_decay : float, default 0.9
        Decay of the moving average for ``baseline="ema"``.
    factor_order : sequence of str, optional
        Order in which the policy samples the factors (every factor of the
        space exactly once); default the space's order.
    """

    name: ClassVar[str] = "rl"

    def __init__(
        self,
        *,
        random_state: Any = None,
        n_bins: int = 100,
        embedding_dim: int = 30,
        hidden_dim: int = 30,
        batch_size: int = 32,
        lr: float = 1e-3,
        update: str = "batch",
        baseline: str = "ema",
        baseline_decay: float = 0.9,
        factor_order: Sequence[str] | None = None,
    ) -> None:
        super().__init__(random_state=random_state)
        self.n_bins = check_int(n_bins, "n_bins", minimum=2)
        self.embedding_dim = check_int(embedding_dim, "embedding_dim", minimum=1)
        self.hidden_dim = check_int(hidden_dim, "hidden_dim", minimum=1)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.lr = check_float(lr, "lr", low=0.0, low_inclusive=False)
        self.update = check_choice(update, "update", UPDATES)
        self.baseline = check_choice(baseline, "baseline", BASELINES)
        self.baseline_decay = check_float(baseline_decay, "baseline_decay", low=0.0, high=1.0)
        if factor_order is not None:
            if isinstance(factor_order, str) or not all(isinstance(n, str) for n in factor_order):
                raise InputError(
                    f"`factor_order` must be a list of factor names; got {factor_order!r}."
                )
            factor_order = list(factor_order)
        self.factor_order = factor_order
        self.queries_per_step = self.batch_size if self.update == "batch" else 1

    # ------------------------------------------------------------------ set-up
    def _start(self) -> None:
        self._torch = import_optional("torch", "the RL examiner")
        self._dtype = self._torch.float32
        names = self.space_.names
        order = names if self.factor_order is None else self.factor_order
        if sorted(order) != sorted(names):
            raise InputError(
                f"`factor_order` must name every factor of the space once ({', '.join(names)}); "
                f"got {', '.join(order)}."
            )
        self._order = np.array([names.index(n) for n in order])
        self._streams = instance_streams(self.rng_, self.n_instances_)
        self._params = self._init_params()
        self._optimizer = self._torch.optim.Adam(list(self._params.values()), lr=self.lr, foreach=True)
        self._ema = np.full(self.n_instances_, np.nan)
        self._buffer: list[tuple[np.ndarray, np.ndarray]] = []
        self.n_updates_ = 0

    def _init_params(self) -> dict[str, Any]:
        """Per-instance weights, uniform in [-0.1, 0.1], drawn from each instance's stream."""
        c, nb, e, h = len(self.space_), self.n_bins, self.embedding_dim, self.hidden_dim
        shapes = {
            "start": (e,),
            "w_ih": (e, 4 * h),
            "w_hh": (h, 4 * h),
            "b": (4 * h,),
            "embed": (c - 1, nb, e),  # the choice of factor j is the input of step j + 1
            "w_out": (c, h, nb),
            "b_out": (c, nb),
        }
        values: dict[str, list[np.ndarray]] = {k: [] for k in shapes}
        for rng in self._streams:
            for key, shape in shapes.items():
                values[key].append(rng.uniform(-INIT_SCALE, INIT_SCALE, shape))
        torch = self._torch
        return {
            k: torch.tensor(np.stack(v), dtype=self._dtype, requires_grad=True)
            for k, v in values.items()
        }

    # ------------------------------------------------------------------ policy
    def _lstm_step(self, x: Any, h: Any, c: Any) -> tuple[Any, Any]:
        torch, p = self._torch, self._params
        gates = torch.bmm(x, p["w_ih"]) + torch.bmm(h, p["w_hh"]) + p["b"][:, None, :]
        i, f, g, o = gates.chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c

    def _run(self, n_samples: int, bins: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
        """Sample (``bins is None``) or score given ``bins (n, B, C)`` in factor order.

        Returns the bins ``(n, B, C)`` in factor order and the summed
        log-probabilities ``(n, B)`` (a tensor).
        """
        torch, p = self._torch, self._params
        n, hd = self.n_instances_, self.hidden_dim
        x = p["start"][:, None, :].expand(n, n_samples, self.embedding_dim)
        h = torch.zeros(n, n_samples, hd, dtype=self._dtype)
        c = torch.zeros_like(h)
        chosen = np.zeros((n, n_samples, len(self._order)), dtype=np.int64)
        if bins is None:  # one row of uniforms per vector, so B draws = B single draws
            uniforms = np.stack([rng.random((n_samples, len(self._order))) for rng in self._streams])
        logp = torch.zeros(n, n_samples, dtype=self._dtype)
        for step in range(len(self._order)):
            h, c = self._lstm_step(x, h, c)
            logits = torch.bmm(h, p["w_out"][:, step]) + p["b_out"][:, step, None, :]
            log_probs = torch.log_softmax(logits, dim=-1)
            if bins is None:
                cdf = np.cumsum(log_probs.detach().exp().numpy().astype(np.float64), axis=-1)
                below = cdf < uniforms[:, :, step, None] * cdf[..., -1:]
                chosen[:, :, step] = np.minimum(below.sum(axis=-1), self.n_bins - 1)
            else:
                chosen[:, :, step] = bins[:, :, step]
            idx = torch.from_numpy(chosen[:, :, step])
            logp = logp + log_probs.gather(-1, idx[..., None])[..., 0]
            if step + 1 < len(self._order):  # one-hot product: its backward is cheaper than indexing's
                onehot = torch.nn.functional.one_hot(idx, self.n_bins).to(self._dtype)
                x = torch.bmm(onehot, p["embed"][:, step])
        return chosen, logp

    # --------------------------------------------------------------- ask/tell
    def _ask(self) -> np.ndarray:
        with self._torch.no_grad():
            bins, _ = self._run(self.queries_per_step)
        in_space_order = np.empty_like(bins)
        in_space_order[..., self._order] = bins
        flat = in_space_order.reshape(-1, len(self.space_))
        return self.space_.from_bins(flat, self.n_bins).reshape(bins.shape)

    def _tell(self, factors: np.ndarray, losses: np.ndarray) -> None:
        bins = self.space_.to_bins(factors.reshape(-1, len(self.space_)), self.n_bins)
        bins = bins.reshape(factors.shape)[..., self._order]
        self._buffer.append((bins, losses))
        if sum(b.shape[1] for b, _ in self._buffer) >= self.batch_size:
            batch = np.concatenate([b for b, _ in self._buffer], axis=1)
            rewards = np.concatenate([r for _, r in self._buffer], axis=1)
            self._buffer = []
            self._reinforce(batch, rewards)

    def _reinforce(self, bins: np.ndarray, rewards: np.ndarray) -> None:
        """One REINFORCE step on a batch ``bins (n, B, C)`` with ``rewards (n, B)``."""
        torch = self._torch
        batch_mean = rewards.mean(axis=1)
        if self.baseline == "ema":
            baseline = np.where(np.isnan(self._ema), batch_mean, self._ema)
            self._ema = self.baseline_decay * baseline + (1.0 - self.baseline_decay) * batch_mean
        elif self.baseline == "mean":
            baseline = batch_mean
        else:
            baseline = np.zeros_like(batch_mean)
        advantage = torch.from_numpy(rewards - baseline[:, None]).to(self._dtype)
        _, logp = self._run(bins.shape[1], bins)
        objective = -(advantage * logp).mean(dim=1).sum()
        self._optimizer.zero_grad()
        objective.backward()
        self._optimizer.step()
        self.n_updates_ += 1
