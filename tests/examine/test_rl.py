"""The RL examiner: its grouped policies against per-instance torch modules, and its search."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.data.factors import Factor, FactorSpace
from fitaudit.examine import get_examiner

torch = pytest.importorskip("torch")

from fitaudit.examine.rl import RLExaminer  # noqa: E402

SPACE = FactorSpace([Factor(f"f{j}", -1.0, 2.0, 0.0, "u") for j in range(3)])


def bump(factors: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """A bump of width 0.15 of the range at ``centres`` ``(n, d)``: the loss to maximise."""
    unit = (factors + 1.0) / 3.0
    return np.exp(-((unit - centres[:, None, :]) ** 2).sum(-1) / (2 * 0.15**2))


def examine(name: str, seed: int, steps: int, **kwargs: Any) -> tuple[float, float]:
    """Mean loss of the last step's queries (the paper's E_examiner) and mean worst case found."""
    centres = np.random.default_rng(100 + seed).uniform(0.2, 0.8, (4, 3))
    examiner = get_examiner(name, random_state=seed, **kwargs)
    examiner.start(SPACE, 4)
    best = np.full(4, -np.inf)
    for _ in range(steps):
        factors = examiner.ask()
        losses = bump(factors, centres)
        examiner.tell(factors, losses)
        best = np.maximum(best, losses.max(axis=1))
    return float(losses.mean()), float(best.mean())


@pytest.mark.slow
def test_rl_learns_where_the_loss_is_high_and_factor_order_hardly_matters() -> None:
    """At an equal query budget (30 steps x 32 queries), the policy's queries are far worse
    for the model than random ones, whatever the order in which it samples the factors.

    lr = 0.01 (the paper: 1e-3) so that 30 updates suffice; measured: last-step mean
    loss about 0.55 in both orders, random search about 0.05.
    """
    steps = 30
    rand = [examine("random", s, steps, queries_per_step=32) for s in range(2)]
    forward = [examine("rl", s, steps, lr=0.01) for s in range(2)]
    backward = [examine("rl", s, steps, lr=0.01, factor_order=["f2", "f0", "f1"]) for s in range(2)]
    final_rand, final_fwd, final_bwd = (np.mean([r[0] for r in runs]) for runs in (rand, forward, backward))
    worst_rand, worst_fwd = np.mean([r[1] for r in rand]), np.mean([r[1] for r in forward])
    assert final_fwd > final_rand + 0.3
    assert final_bwd > final_rand + 0.3
    assert abs(final_fwd - final_bwd) < 0.15
    assert worst_fwd > worst_rand - 0.02


@pytest.mark.slow
def test_sequential_updates_equal_batch_updates_at_an_equal_query_budget() -> None:
    centres = np.full((2, 3), 0.3)
    batch = RLExaminer(random_state=4, batch_size=8)
    batch.start(SPACE, 2)
    sequential = RLExaminer(random_state=4, batch_size=8, update="sequential")
    sequential.start(SPACE, 2)
    assert (batch.queries_per_step, sequential.queries_per_step) == (8, 1)
    for _ in range(3):
        factors = batch.ask()
        batch.tell(factors, bump(factors, centres))
        singles = []
        for _ in range(8):
            one = sequential.ask()
            sequential.tell(one, bump(one, centres))
            singles.append(one)
        np.testing.assert_allclose(np.concatenate(singles, axis=1), factors, rtol=0, atol=1e-12)
    assert batch.n_updates_ == sequential.n_updates_ == 3


def test_queries_are_bin_centres() -> None:
    examiner = RLExaminer(random_state=0, n_bins=7)
    examiner.start(SPACE, 2)
    factors = examiner.ask().reshape(-1, 3)
    bins = SPACE.to_bins(factors, 7)
    np.testing.assert_allclose(SPACE.from_bins(bins, 7), factors, atol=1e-12)


def reference_logp(examiner: RLExaminer, instance: int, bins: np.ndarray) -> Any:
    """Log-probability of ``bins (B, C)`` under instance ``instance``'s policy, built from
    torch's own LSTMCell, Embedding and Linear modules (an independent implementation)."""
    p = {k: v[instance].detach() for k, v in examiner._params.items()}
    e, h = examiner.embedding_dim, examiner.hidden_dim
    cell = torch.nn.LSTMCell(e, h)
    with torch.no_grad():
        cell.weight_ih.copy_(p["w_ih"].T)
        cell.weight_hh.copy_(p["w_hh"].T)
        cell.bias_ih.copy_(p["b"])
        cell.bias_hh.zero_()
    n_samples = len(bins)
    x = p["start"].expand(n_samples, e)
    state = (torch.zeros(n_samples, h), torch.zeros(n_samples, h))
    total = torch.zeros(n_samples)
    for step in range(bins.shape[1]):
        state = cell(x, state)
        head = torch.nn.Linear(h, examiner.n_bins)
        with torch.no_grad():
            head.weight.copy_(p["w_out"][step].T)
            head.bias.copy_(p["b_out"][step])
        idx = torch.from_numpy(bins[:, step])
        total = total + torch.log_softmax(head(state[0]), -1)[torch.arange(n_samples), idx]
        if step + 1 < bins.shape[1]:
            x = torch.nn.Embedding.from_pretrained(p["embed"][step])(idx)
    return total


def test_grouped_policies_equal_independent_torch_modules() -> None:
    examiner = RLExaminer(random_state=1, n_bins=10, batch_size=6, factor_order=["f1", "f2", "f0"])
    examiner.start(SPACE, 3)
    bins = np.random.default_rng(0).integers(0, 10, (3, 6, 3))
    with torch.no_grad():
        _, logp = examiner._run(6, bins)
    for i in range(3):
        np.testing.assert_allclose(logp[i].numpy(), reference_logp(examiner, i, bins[i]).detach().numpy(), atol=1e-5)


def test_one_update_is_reinforce_with_adam_per_instance() -> None:
    """The grouped update equals, per instance, Adam on -(1/B) sum_b (R_b - b) log pi(a_b)."""
    examiner = RLExaminer(random_state=2, n_bins=10, batch_size=5, baseline="mean", lr=0.01)
    examiner.start(SPACE, 2)
    before = {k: v.detach().clone() for k, v in examiner._params.items()}
    factors = examiner.ask()
    rewards = np.random.default_rng(1).normal(size=(2, 5))
    examiner.tell(factors, rewards)
    bins = SPACE.to_bins(factors.reshape(-1, 3), 10).reshape(2, 5, 3)
    for i in range(2):
        ref = RLExaminer(random_state=2, n_bins=10, batch_size=5, lr=0.01)
        ref.start(SPACE, 1)
        params = {k: v[i : i + 1].clone().requires_grad_(True) for k, v in before.items()}
        ref._params = params
        optimizer = torch.optim.Adam(list(params.values()), lr=0.01)
        advantage = torch.from_numpy(rewards[i] - rewards[i].mean()).float()
        _, logp = ref._run(5, bins[i : i + 1])
        (-(advantage * logp[0]).mean()).backward()
        optimizer.step()
        for key, value in params.items():
            # float32 sums in another order differ by ~4e-9; a wrong update would differ by ~lr = 1e-2
            np.testing.assert_allclose(examiner._params[key][i].detach().numpy(), value[0].detach().numpy(),
                                       rtol=1e-5, atol=1e-7)
            assert not torch.equal(before[key][i], examiner._params[key][i].detach())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"update": "online"}, "`update` must be one of 'batch', 'sequential'"),
        ({"baseline": "critic"}, "`baseline` must be one of 'ema', 'mean', 'none'"),
        ({"n_bins": 1}, "`n_bins` must be an integer >= 2; got 1."),
        ({"lr": 0.0}, "`lr` must be in"),
        ({"factor_order": "f0,f1,f2"}, "`factor_order` must be a list of factor names"),
    ],
)
def test_bad_settings_name_the_argument(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        RLExaminer(**kwargs)


def test_factor_order_must_name_every_factor_once() -> None:
    examiner = RLExaminer(factor_order=["f0", "f1", "camera"])
    with pytest.raises(InputError, match="`factor_order` must name every factor of the space once"):
        examiner.start(SPACE, 2)
    with pytest.raises(InputError, match="`factor_order`"):
        RLExaminer(factor_order=["f0", "f0", "f1"]).start(SPACE, 2)
