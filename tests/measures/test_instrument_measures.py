"""Measures that wrap fitaudit's other instruments (family "fitaudit")."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fitaudit._errors import InputError  # noqa: E402
from fitaudit.measures import ModelRecord, get_measure  # noqa: E402
from fitaudit.measures.pmv_slope import retrain  # noqa: E402
from fitaudit.models import as_classifier  # noqa: E402
from fitaudit.pmv import flip_labels  # noqa: E402
from fitaudit.random import check_random_state, spawn_seeds  # noqa: E402
from reference_translation import naive_translation_aeg  # noqa: E402


def test_adversarial_gap_matches_the_naive_translation_aeg(record: ModelRecord) -> None:
    x, y = record.train_x[:40], record.train_y[:40]
    rec = ModelRecord(model=record.model, train_x=x, train_y=y)
    ours = get_measure("adversarial_gap", max_examples=None)(rec)
    # by hand: zero-pad by 3 eps, map the canvases to [0, 1], enumerate every shift
    canvases = np.pad(x, ((0, 0), (0, 0), (3, 3), (3, 3)))
    lo, span = canvases.min(), canvases.max() - canvases.min()

    class Clf:
        n_classes = 3

        def logits(self, u):
            with torch.no_grad():
                return record.model(
                    torch.as_tensor(lo + span * np.asarray(u), dtype=torch.float32)
                ).numpy()

    out = naive_translation_aeg(
        Clf(), (canvases - lo) / span, y, eps=1, margin=3, variant="strongest"
    )
    plain = np.mean(np.asarray(as_classifier(record.model, n_classes=3).predict(x)) != y)
    assert ours == pytest.approx(np.mean(out.adv_loss * out.weight) - plain, abs=1e-12)


def test_adversarial_gap_refuses_vectors() -> None:
    net = torch.nn.Sequential(torch.nn.Linear(4, 2)).eval()
    rec = ModelRecord(
        model=net, train_x=np.zeros((10, 4), np.float32), train_y=np.zeros(10, np.int64)
    )
    with pytest.raises(InputError, match="adversarial_gap"):
        get_measure("adversarial_gap")(rec)


def test_pmv_slope_is_minus_the_absolute_least_squares_slope(record: ModelRecord) -> None:
    rates = (0.1, 0.3, 0.5)
    value = get_measure("pmv_slope", rates=rates, epochs=2, max_examples=None, random_state=5)(
        record
    )
    rng = check_random_state(5)
    seeds = spawn_seeds(rng, 6)
    accs = []
    for i, rate in enumerate(rates):
        noisy = np.asarray(
            flip_labels(record.train_y, rate, random_state=seeds[2 * i]), dtype=np.int64
        )
        accs.append(
            retrain(record.initial_model, record.train_x, noisy, epochs=2, lr=0.02, batch_size=64,
                    weight_decay=0.0, random_state=seeds[2 * i + 1])
        )  # fmt: skip
    slope = np.polyfit(np.asarray(rates), np.asarray(accs), 1)[0]
    assert value == pytest.approx(-abs(slope), abs=1e-12)
    assert value <= 0


def test_pmv_slope_rejects_a_single_rate() -> None:
    with pytest.raises(InputError, match="`rates` must be a list of at least 2 noise rates"):
        get_measure("pmv_slope", rates=(0.1,))


def test_examiner_transform_matches_integer_shifts_by_hand() -> None:
    from fitaudit.measures.examiner_worst_case import transform

    x = np.random.default_rng(0).uniform(size=(2, 1, 5, 6)).astype(np.float32)
    factors = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, -2.0, 0.1, 1.2]])
    out = transform(x, factors, value_range=2.0)
    right = np.zeros_like(x[0])
    right[:, :, 1:] = x[0, :, :, :-1]  # content moved one pixel right
    np.testing.assert_allclose(out[0], right, atol=1e-5)
    mean = x[1].mean()
    adjusted = (x[1] - mean) * 1.2 + mean + 0.2
    up = np.zeros_like(adjusted)
    up[:, :-2, :] = adjusted[:, 2:, :]  # content moved two pixels up
    np.testing.assert_allclose(out[1], up, atol=1e-5)


def test_examiner_worst_case_of_an_indifferent_network(record: ModelRecord) -> None:
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 3)).eval()
    with torch.no_grad():
        net[1].weight.zero_()
        net[1].bias.zero_()
    rec = ModelRecord(model=net, train_x=record.train_x, train_y=record.train_y)
    assert get_measure("examiner_worst_case", steps=2, n_instances=5)(rec) == pytest.approx(-1 / 3)
    value = get_measure("examiner_worst_case", steps=2, n_instances=5)(record)
    assert -1.0 <= value <= 0.0
