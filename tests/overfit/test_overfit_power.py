"""What the overfitting test could have seen (fitaudit.overfit.power), and the audit's control.

The detectable T is checked by simulating the pairwise test itself; the rule
and the control on a small version of the power study's world
(``benchmarks/validity/overfit_power.py``: scikit-learn's digits at uniform
positions in 32-pixel crops, margin 3, the strongest translational AEG at
eps = 1): a model fitted to its training images whose answers survive the
shifts (the study's CNNs; here a shift-invariant memoriser, exact by
construction) and one that memorises each image at its pixel position (the
study's MLPs).
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from fitaudit.options import RunOptions
from fitaudit.overfit.decision import overfit_verdict
from fitaudit.overfit.independence import pairwise_test
from fitaudit.overfit.power import base_variance, detectable_statistic, reachable_statistic
from fitaudit.report.overfit_words import say_nmodel
from fitaudit.report.verdicts import say_overfit as say

MARGIN, CROP, SIDE = 3, 32, 16


def _rejection_rate(m: int, p: float, tau: float, runs: int, seed: int) -> float:
    """The pairwise test (U = 3/2) on T_i in {-1/2, 0, 1/2}: P(-1/2) = p, P(1/2) = p + 2 tau (mean tau)."""
    rng = np.random.default_rng(seed)
    rejected = 0
    for _ in range(runs):
        u = rng.random(m)
        error, success = u < p, (u >= p) & (u < 2 * p + 2 * tau)
        loss = error.astype(float)  # an error keeps its point: L = 1, weighted 1/2, T_i = -1/2
        weighted = np.where(error | success, 0.5, 0.0)
        rejected += pairwise_test(loss, weighted, U=1.5, delta=0.05).reject
    return rejected / runs


@pytest.mark.parametrize("m, p", [(300, 0.0), (300, 0.05), (2000, 0.05)])
@pytest.mark.slow
def test_the_detectable_T_is_rejected_80_percent_of_the_time(m, p):
    """By simulation of the test itself: 80% power at the detectable T, far less at half of it."""
    tau = detectable_statistic(m, 2 * p * 0.25, 0.05, 1.5)  # the null's variance: p/4 + p/4
    assert tau is not None
    assert abs(_rejection_rate(m, p, tau, 1500, seed=m) - 0.8) < 0.05
    assert _rejection_rate(m, p, tau / 2, 500, seed=m + 1) < 0.3


def test_the_detectable_T_by_hand():
    """m = 300, no spread, delta = 0.05, U = 3/2: B = sqrt(2 Var ln 60 / 300) + 4.5 ln 60 / 300.

    At tau = 0.10: Var = 0.04, B = 0.0944 > 0.10 - 0.8416 sqrt(0.04 / 300) = 0.0903 (power below 80%);
    at tau = 0.11: Var = 0.0429, B = 0.0955 < 0.11 - 0.0101 = 0.0999 (above).
    """
    tau = detectable_statistic(300, 0.0, 0.05, 1.5)
    assert 0.10 < tau < 0.11
    assert detectable_statistic(2, 0.0, 0.05, 1.5) is None  # two examples: no T up to 1/2 is seen
    assert detectable_statistic(300, 0.0, 0.05, 1.0) is None  # no T_i above 0 (U = 1)
    assert detectable_statistic(3000, 0.0, 0.05, 1.5) < tau  # more examples, smaller effects


def test_base_variance_removes_the_spread_of_the_observed_effect():
    assert base_variance(0.1, 0.05, 1.5) == pytest.approx(0.05 - 0.1 * 0.4)
    assert base_variance(-0.1, 0.05, 1.5) == 0.05  # no effect to remove
    assert base_variance(0.3, 0.01, 1.5) == 0.0


def _result(*, statistic=0.0, n_success=3, m=300, variance=0.0, reject=False, pvalue=1.0):
    return types.SimpleNamespace(statistic=statistic, pvalue=pvalue, reject=reject, delta=0.05, U=1.5, m=m,
                                 variance=variance, n_success=n_success, risk_plain=0.0,
                                 risk_adversarial=statistic)


def test_shifts_that_change_few_answers_give_no_pass():
    few = _result(n_success=6)  # 2% of the answers: T could reach 0.01, the test needs 0.105
    verdict = overfit_verdict(few)
    assert (verdict.status, verdict.reason) == ("inconclusive", "shifts_change_few_answers")
    assert verdict.numbers["reachable_T"] == pytest.approx(0.01)
    sentence = say(few, verdict)
    assert "risk estimate" not in sentence and "could not have rejected here" in sentence
    assert "The shifts turn only 2.0% of the answers from right to wrong, so T could reach at most 0.010" in sentence and "0.105" in sentence and "m = 300" in sentence
    many = _result(n_success=90)  # 30%: T could reach 0.15
    verdict = overfit_verdict(many)
    assert verdict.reason == "pvalue_at_or_above_level"
    sentence = say(many, verdict)
    assert "risk estimate" not in sentence and "--train-data or --train-images" in sentence
    assert "training on random crops or shifts would hide it" in sentence.split(". ")[0]  # in the headline


def test_an_n_model_pass_without_a_control_says_first_what_hides_from_it():
    runs = _result(n_success=90)
    runs.n_models = 3
    verdict = overfit_verdict(runs)
    assert verdict.reason == "pvalue_at_or_above_level"
    sentence = say_nmodel(runs, verdict)
    headline = sentence.split(". ")[0]
    assert "3 runs" in headline and headline.endswith("but random-crop training would hide it")
    assert "risk estimate" not in sentence and "--train-data or --train-images" in sentence
    assert "training on random crops or shifts hides overfitting from this test" in sentence


def test_the_control_decides_the_pass():
    result = _result(n_success=90)
    blind = overfit_verdict(result, control={"status": "info", "reject": False, "pvalue": 0.6})
    assert (blind.status, blind.reason) == ("inconclusive", "control_not_rejected")
    assert say(result, blind).startswith("Inconclusive: the test does not reject even the model's training data "
                                         "(p = 0.6)")
    seen = overfit_verdict(result, control={"status": "info", "reject": True, "pvalue": 1e-6})
    assert (seen.status, seen.reason) == ("pass", "control_rejected")
    assert "and the test rejects the model's training data (p = 1.0e-06)" in say(result, seen)
    stopped = overfit_verdict(result, control={"status": "inconclusive", "reject": False, "pvalue": 0.6})
    assert stopped.reason == "pvalue_at_or_above_level"  # a control that could not conclude says nothing
    failed = overfit_verdict(_result(reject=True, pvalue=1e-4), control={"status": "info", "reject": False,
                                                                          "pvalue": 0.6})
    assert failed.status == "fail"  # a rejection stands whatever the control


# --------------------------------------------------------------------------- the power study's world, small


def _digit_world(n: int):
    """``2 n`` of scikit-learn's digits (upsampled to 16 px) at uniform positions on 38-px canvases (32 crop + 3)."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    rng = np.random.default_rng(0)
    rows = rng.permutation(len(bunch.target))[: 2 * n]
    digits = np.kron(bunch.images[rows] / 16.0, np.ones((1, 2, 2))).astype(np.float32)
    canvases = np.zeros((2 * n, 3, CROP + 2 * MARGIN, CROP + 2 * MARGIN), np.float32)
    corners = rng.integers(MARGIN, CROP - SIDE - MARGIN + 1, size=(2 * n, 2))
    for canvas, digit, (r, c) in zip(canvases, digits, corners):
        canvas[:, MARGIN + r: MARGIN + r + SIDE, MARGIN + c: MARGIN + c + SIDE] = digit
    labels = bunch.target[rows].astype(np.int64)
    return (canvases[:n], labels[:n]), (canvases[n:], labels[n:])


def _shift_invariant_memoriser(canvases: np.ndarray, labels: np.ndarray):
    """A model fitted to its training crops whose answers survive shifts up to the margin.

    Scores: minus the distance (on 4 x 4 pooled crops) to the nearest training crop of each class, over every
    shift of the training canvases up to ``MARGIN`` pixels: a training crop shifted by up to the margin is one
    of the bank (distance 0), so its answer is still right.
    """
    torch = pytest.importorskip("torch")
    from fitaudit.models import as_classifier

    def pooled(crops):
        return torch.nn.functional.avg_pool2d(crops[:, :1], 4).flatten(1)

    bank = torch.cat([pooled(torch.from_numpy(canvases[:, :, MARGIN + dy: MARGIN + dy + CROP,
                                                       MARGIN + dx: MARGIN + dx + CROP]))
                      for dy in range(-MARGIN, MARGIN + 1) for dx in range(-MARGIN, MARGIN + 1)])
    owner = torch.from_numpy(np.tile(labels, (2 * MARGIN + 1) ** 2))

    class Memoriser(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("bank", bank)
            self.register_buffer("owner", owner)
            self.head = torch.nn.Linear(10, 10)  # the identity: a last layer, as the audit's feature space needs
            with torch.no_grad():
                self.head.weight.copy_(torch.eye(10))
                self.head.bias.zero_()

        def forward(self, x):
            distances = torch.cdist(pooled(x), self.bank)
            return self.head(torch.stack([-distances[:, self.owner == k].min(dim=1).values for k in range(10)], 1))

    return as_classifier(Memoriser().eval(), n_classes=10, backend="torch")


@pytest.fixture(scope="module")
def world():
    return _digit_world(100)


@pytest.mark.slow
def test_a_model_whose_training_crops_survive_the_shifts_passes_without_a_risk_estimate(world):
    """The power study's CNN case: fitted to its training images, the test cannot see it (and says so)."""
    from fitaudit.overfit import TranslationAEG, overfit_test

    (x_train, y_train), _ = world
    model = _shift_invariant_memoriser(x_train, y_train)
    result = overfit_test(model, x_train, y_train, TranslationAEG(eps=1, margin=MARGIN), check_density=False)
    assert result.risk_plain == 0.0 and result.n_success == 0 and not result.reject
    verdict = result.verdict()
    assert (verdict.status, verdict.reason) == ("inconclusive", "shifts_change_few_answers")
    assert result.statistic <= reachable_statistic(result.n_success, result.m, result.U)
    assert "risk estimate" not in say(result, verdict)


@pytest.mark.slow
def test_a_model_fitted_at_its_pixel_positions_is_rejected(world):
    """The power study's MLP case: its training images, shifted by one pixel, are often misread."""
    from fitaudit.models.training import train_classifier
    from fitaudit.overfit import TranslationAEG, overfit_test
    from fitaudit.overfit.translation import centre_crop

    (x_train, y_train), _ = world
    crops = centre_crop(x_train, MARGIN)
    model, _ = train_classifier(crops, y_train, architecture="mlp", epochs=30, batch_size=32, augment=False,
                                kwargs={"in_features": int(np.prod(crops.shape[1:])), "hidden_sizes": [128]},
                                random_state=0, progress=False)
    result = overfit_test(model.eval(), x_train, y_train, TranslationAEG(eps=1, margin=MARGIN), check_density=False)
    assert result.risk_plain == 0.0 and result.reject
    assert 0 < result.statistic <= reachable_statistic(result.n_success, result.m, result.U)


@pytest.mark.slow
def test_the_audit_reads_its_control(world):
    """With training data the test cannot reject, the scored data's pass is inconclusive, in the file too."""
    import json

    from fitaudit import audit
    from fitaudit.auditing.result import load_audit
    from fitaudit.overfit import TranslationAEG

    (x_train, y_train), (x_test, y_test) = world
    model = _shift_invariant_memoriser(x_train, y_train)
    result = audit(model, (x_test, y_test), train_data=(x_train, y_train), aeg=TranslationAEG(eps=1, margin=MARGIN),
                   instruments=["overfit"], options=RunOptions(progress=False))
    train, test = result.part("overfit-train"), result.part("overfit-test")
    assert (train.status, train.verdict.reason) == ("info", "no_dependence_on_training_data")
    assert (test.status, test.verdict.reason) == ("inconclusive", "control_not_rejected")
    assert test.sentence.startswith("Inconclusive: the test does not reject even the model's training data")
    data = json.loads(json.dumps(result.to_dict()))
    data["parts"][[p["id"] for p in data["parts"]].index("overfit-test")]["settings"]["control"]["reject"] = True
    assert load_audit(data).part("overfit-test").status == "inconclusive"  # the control is read from its part
    data["parts"] = [p for p in data["parts"] if p["id"] != "overfit-train"]
    assert load_audit(data).part("overfit-test").verdict.reason != "control_not_rejected"  # no part, no control
