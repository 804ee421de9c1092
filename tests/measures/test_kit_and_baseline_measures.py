"""Starting-kit and baseline measures against hand computations."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fitaudit._errors import InputError  # noqa: E402
from fitaudit.measures import ModelRecord, get_measure  # noqa: E402


def test_distance_and_weight_norm_sum_every_parameter(record: ModelRecord) -> None:
    pairs = zip(record.model.parameters(), record.initial_model.parameters())
    dist = sum(((p.detach().double() - q.detach().double()) ** 2).sum().item() for p, q in pairs)
    norm = sum((p.detach().double() ** 2).sum().item() for p in record.model.parameters())
    assert get_measure("distance_from_init")(record) == pytest.approx(dist, rel=1e-6)
    assert get_measure("weight_norm")(record) == pytest.approx(norm, rel=1e-6)


def test_vc_dimension_formula(record: ModelRecord) -> None:
    sizes = [3 * 4 * 9, 4 * 6 * 9, 96 * 3]
    d = 3
    expected = d + 2 * d * np.log(22 * d * 8 * 8) * sum(sizes)
    assert get_measure("vc_dim")(record) == pytest.approx(expected, rel=1e-12)


def test_noisy_gap_is_the_gap_plus_independent_noise(record: ModelRecord) -> None:
    gap = record.metrics["train_acc"] - record.metrics["test_acc"]
    assert get_measure("noisy_gap", noise_std=0.0)(record) == gap
    a = get_measure("noisy_gap", noise_std=0.05)(record)
    b = get_measure("noisy_gap", noise_std=0.05)(dataclasses.replace(record, model_id="other"))
    assert a != b and abs(a - gap) < 0.3
    with pytest.raises(InputError, match="needs `record.metrics` with 'test_acc'"):
        get_measure("noisy_gap")(dataclasses.replace(record, metrics={"train_acc": 1.0}))


def test_jacobian_norm_matches_the_explicit_jacobians() -> None:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2)).eval()
    x = np.random.default_rng(0).normal(size=(16, 3)).astype(np.float32)
    w1 = net[0].weight.detach().double().numpy()
    w2 = net[2].weight.detach().double().numpy()
    b1 = net[0].bias.detach().double().numpy()
    first, second = [], []
    for row in x.astype(np.float64):
        active = (w1 @ row + b1 > 0).astype(float)
        first.append(np.mean((w2 @ np.diag(active) @ w1) ** 2))  # d logits / d input
        second.append(np.mean(w2**2))  # d logits / d (input of the last layer)
    expected = np.mean([np.mean(first), np.mean(second)])
    rec = ModelRecord(model=net, train_x=x, train_y=np.zeros(16, dtype=np.int64))
    assert get_measure("jacobian_norm", n_batches=1)(rec) == pytest.approx(expected, rel=1e-6)


def test_sharpness_of_an_unshakeable_network_is_the_upper_end() -> None:
    """Zero weights and a dominant bias: no box changes a prediction, so m climbs to the top."""
    net = torch.nn.Sequential(torch.nn.Linear(2, 3)).eval()
    with torch.no_grad():
        net[0].weight.zero_()
        net[0].bias.copy_(torch.tensor([2.0, 0.0, 0.0]))
    x = np.random.default_rng(0).normal(size=(30, 2)).astype(np.float32)
    rec = ModelRecord(model=net, train_x=x, train_y=np.zeros(30, dtype=np.int64))
    value = get_measure("sharpness", search_depth=6, ascent_steps=2, n_restarts=1)(rec)
    assert value == pytest.approx(1 / (0.5 * (1 - 2**-6)))


def _record_trials(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, float]]:
    """Every (scale, accuracy drop) the sharpness search tries, in order (the search itself unchanged)."""
    from fitaudit.measures import _torch

    trials: list[tuple[float, float]] = []
    search = _torch.bisect_sigma

    def recording(drop_at, **settings):
        def recorded(a: float) -> float:
            trials.append((a, drop := drop_at(a)))
            return drop

        return search(recorded, **settings)

    monkeypatch.setattr(_torch, "bisect_sigma", recording)
    return trials


def _hand_bisection(trials: list[tuple[float, float]], upper: float, depth: int) -> float:
    """The scale a bisection of [0, upper] in at most ``depth`` steps ends at, given the drops the search saw.

    Each trial must be the midpoint of the interval left by the drops before it (a drop above 0.1 moves the
    upper end down, below it the lower end up); the search stops early only at a drop within 1e-2 of 0.1.
    """
    assert 1 <= len(trials) <= depth, trials
    low, high = 0.0, upper
    for k, (a, drop) in enumerate(trials):
        assert a == (low + high) / 2, (k, trials)
        if abs(drop - 0.1) < 1e-2:
            assert k == len(trials) - 1, trials
            break
        low, high = (low, a) if drop > 0.1 else (a, high)
    else:
        assert len(trials) == depth, trials
    return trials[-1][0]


def test_sharpness_of_a_trained_net_is_the_hand_run_bisection(record: ModelRecord, monkeypatch) -> None:
    """m is the last midpoint of a bisection of [0, 0.5] in 4 steps: an odd multiple of 0.5 / 2^k, k <= 4."""
    trials = _record_trials(monkeypatch)
    value = get_measure("sharpness", search_depth=4, ascent_steps=3, eval_batches=2, n_restarts=1)(record)
    m = 1 / value
    assert m == pytest.approx(_hand_bisection(trials, upper=0.5, depth=4), rel=1e-12)
    assert m * 2**4 / 0.5 == pytest.approx(round(m * 2**4 / 0.5), abs=1e-9) and 0 < m < 0.5


def test_ascent_boxes_and_settings() -> None:
    from fitaudit.measures._ascent import absolute_box, magnitude_box, relative_box

    w = torch.tensor([-2.0, 0.0, 0.5])
    assert torch.allclose(relative_box(w, 0.1), torch.tensor([0.2, 0.0, 0.05]))
    assert torch.allclose(absolute_box(w, 0.1), torch.full((3,), 0.1))
    assert torch.allclose(magnitude_box(w, 0.1), torch.tensor([0.201, 0.001, 0.051]))
    with pytest.raises(InputError, match="`search_depth` must be a positive integer; got 0"):
        get_measure("sharpness", search_depth=0)


def test_worst_case_flatness_is_a_scaled_inverse_square(record: ModelRecord, monkeypatch) -> None:
    """1 / alpha'^2 scaled by sqrt(. / m), alpha' the last midpoint of a bisection of [0, 2] in 4 steps."""
    trials = _record_trials(monkeypatch)
    value = get_measure(
        "sharpness_flatness", search_depth=4, ascent_steps=2, eval_batches=2, n_restarts=1
    )(record)
    alpha = 1 / np.sqrt(value**2 * len(record.train_x))
    assert alpha == pytest.approx(_hand_bisection(trials, upper=2.0, depth=4), rel=1e-9)
    assert alpha * 2**4 / 2 == pytest.approx(round(alpha * 2**4 / 2), abs=1e-6) and 0 < alpha < 2
