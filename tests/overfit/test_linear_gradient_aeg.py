"""Linear-gradient AEG with exact weights, and the AEG protocol checks."""

from __future__ import annotations

import numpy as np
import pytest
from test_gaussian_margin import direct_density

from fitaudit import InputError
from fitaudit.data.gaussian_margin import GaussianMargin
from fitaudit.models import softmax
from fitaudit.overfit import (
    AdversarialExampleGenerator,
    AEGOutput,
    LinearGradientAEG,
    LinearModel,
    overfit_test,
)
from fitaudit.overfit.linear_gradient import LinearProjections, linear_gradient_step


def slow_linear_aeg(dist, model, x, y, eps):
    """The AEG and h_g written out point by point from the paper's definitions."""
    w = model.coef_
    u = w / np.linalg.norm(w)
    x_adv, weights = x.copy(), np.ones(len(x))
    for i in range(len(x)):
        sign = 1.0 if y[i] == 1 else -1.0
        candidate = x[i] - eps * sign * u
        correct = model.predict(x[i : i + 1])[0] == y[i]
        if correct and (candidate[0] > 0) == (y[i] == 1):
            x_adv[i] = candidate
        if model.predict(x_adv[i : i + 1])[0] != y[i]:
            pre = x_adv[i] + eps * sign * u
            pre_ok = model.predict(pre[None])[0] == y[i] and (pre[0] > 0) == (y[i] == 1)
            rho_adv = direct_density(dist, x_adv[i : i + 1])[0]
            rho_pre = direct_density(dist, pre[None])[0] if pre_ok else 0.0
            weights[i] = rho_adv / (rho_adv + rho_pre)
    return x_adv, weights


@pytest.fixture
def small_problem():
    dist = GaussianMargin(5)
    x, y = dist.sample(400, random_state=3)
    model = LinearModel(coef_=np.array([0.6, 0.9, -0.4, 0.3, 0.1]), intercept_=0.2)
    return dist, model, x, y


@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
def test_matches_the_slow_definition(small_problem, eps):
    dist, model, x, y = small_problem
    loss = (model.predict(x) != y).astype(float)
    out = LinearGradientAEG(eps, dist).generate(model, x, y, loss=loss)
    x_adv, weights = slow_linear_aeg(dist, model, x, y, eps)
    np.testing.assert_allclose(out.x_adv, x_adv, atol=1e-12)
    adv_loss = (model.predict(x_adv) != y).astype(float)
    np.testing.assert_array_equal(out.adv_loss, adv_loss)
    np.testing.assert_allclose(out.weighted_adv_loss, adv_loss * weights, rtol=1e-9, atol=1e-15)
    assert np.array_equal(out.success, (loss == 0) & (adv_loss == 1))
    assert out.success.sum() > 5 and np.any((weights > 0) & (weights < 1))


def test_vectorised_step_for_many_models_matches_the_aeg():
    dist = GaussianMargin(50)
    x, y = dist.sample(300, random_state=4)
    rng = np.random.default_rng(5)
    weights, biases = rng.normal(size=(3, 50)), rng.normal(size=3)
    proj = LinearProjections.compute(weights, biases, x, y)
    step = linear_gradient_step(dist, proj, 8.0)
    for k in range(3):
        model = LinearModel(weights[k], float(biases[k]))
        loss = (model.predict(x) != y).astype(float)
        out = LinearGradientAEG(8.0, dist).generate(model, x, y, loss=loss)
        np.testing.assert_array_equal(step.loss[k], loss)
        np.testing.assert_allclose(step.weighted_adv_loss[k], out.weighted_adv_loss, rtol=1e-9)


def test_weighted_risk_is_unbiased_for_an_independent_model():
    # E[L(f, g(X)) h_g(g(X))] = E[L(f, X)]: the pairwise terms average to 0
    dist = GaussianMargin(5)
    model = LinearModel(coef_=np.array([0.6, 0.9, -0.4, 0.3, 0.1]), intercept_=0.2)
    x, y = dist.sample(200_000, random_state=6)
    proj = LinearProjections.compute(model.coef_[None], np.array([model.intercept_]), x, y)
    step = linear_gradient_step(dist, proj, 1.0)
    terms = (step.weighted_adv_loss - step.loss)[0]
    successes = (step.loss == 0) & (step.adv_loss == 1)
    assert successes.mean() > 0.05
    assert abs(terms.mean()) < 4 * terms.std() / np.sqrt(len(terms))
    unweighted = (step.adv_loss - step.loss)[0].mean()
    assert unweighted > 20 * terms.std() / np.sqrt(len(terms))  # without h_g: clearly biased


def test_range_is_two_for_the_linear_aeg():
    assert LinearGradientAEG(1.0, GaussianMargin(3)).pairwise_range == 2.0


class _MovesEverything(AdversarialExampleGenerator):
    def _generate(self, model, x, y):
        return AEGOutput(
            x_adv=x + 1.0,
            weight=np.ones(len(x)),
            adv_loss=np.ones(len(x)),
            success=np.zeros(len(x), bool),
        )


class _BadWeights(AdversarialExampleGenerator):
    deterministic = False

    def _generate(self, model, x, y):
        return AEGOutput(x_adv=x.copy(), weight=np.full(len(x), 1.5), adv_loss=np.ones(len(x)), success=np.zeros(len(x), bool))


def test_protocol_checks(small_problem):
    dist, model, x, y = small_problem
    loss = (model.predict(x) != y).astype(float)
    with pytest.raises(InputError, match=r"_MovesEverything broke \(G2\): it changed \d+ misclassified"):
        _MovesEverything().generate(model, x, y, loss=loss)
    with pytest.raises(InputError, match=r"weights h_g outside \[0, 1\]"):
        _BadWeights().generate(model, x, y, loss=loss)
    assert _BadWeights().pairwise_range == 2.0


def test_aeg_bad_input(small_problem):
    dist, model, x, y = small_problem
    loss = (model.predict(x) != y).astype(float)
    with pytest.raises(InputError, match=r"`eps` must be in \(0, inf\); got 0"):
        LinearGradientAEG(0.0, dist)
    with pytest.raises(InputError, match="`eps` must be finite; got inf"):
        LinearGradientAEG(np.inf, dist)
    with pytest.raises(InputError, match="`y` must be the true labels"):
        LinearGradientAEG(1.0, dist).generate(model, x, 1 - y, loss=1 - loss)
    with pytest.raises(InputError, match="needs a linear model with `coef_`"):
        overfit_test(_NoCoef(), x, y, LinearGradientAEG(1.0, dist))


class _NoCoef:
    """A classifier (the protocol's four members) that is not a linear model."""

    n_classes = 2

    def logits(self, x):
        return np.stack([np.zeros(len(x)), x[:, 0]], axis=1)

    def predict_proba(self, x):
        return softmax(self.logits(x))

    def predict(self, x):
        return (x[:, 0] > 0).astype(int)


def test_scikit_learn_logistic_regression_through_the_adapter():
    from sklearn.linear_model import LogisticRegression

    dist = GaussianMargin(20)
    x_train, y_train = dist.sample(300, random_state=30)
    x, y = dist.sample(300, random_state=31)
    estimator = LogisticRegression().fit(x_train, y_train)
    result = overfit_test(estimator, x, y, LinearGradientAEG(2.0, dist))
    same = LinearModel(estimator.coef_[0], float(estimator.intercept_[0]))
    assert result.pvalue == overfit_test(same, x, y, LinearGradientAEG(2.0, dist)).pvalue
    assert result.n_success > 0
