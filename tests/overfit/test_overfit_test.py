"""overfit_test end to end on the Gaussian-margin problem: validity, power, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from threadpoolctl import threadpool_limits

from fitaudit import InputError
from fitaudit.data.gaussian_margin import GaussianMargin
from fitaudit.overfit import (
    AdversarialExampleGenerator,
    LinearGradientAEG,
    overfit_test,
    pairwise_test,
    train_logistic_models,
)

DIST = GaussianMargin(500)


@pytest.fixture(scope="module")
def independent_model():
    x, y = DIST.sample(500, random_state=10)
    return train_logistic_models(x, y, steps=300, random_state=11)[0]


@pytest.mark.slow
def test_calibration_over_200_independent_test_sets(independent_model):
    """Rejection rate at delta = 0.05 of an independent model, 200 fresh test sets."""
    n_sets, delta = 200, 0.05
    rng = np.random.default_rng(12)
    aeg = LinearGradientAEG(10.0, DIST)  # a step where the dependent model is rejected
    pvalues = []
    with threadpool_limits(limits=1, user_api="blas"):  # small products: faster on one thread
        for _ in range(n_sets):
            x, y = DIST.sample(1000, random_state=rng)
            pvalues.append(overfit_test(independent_model, x, y, aeg, delta=delta).pvalue)
    rate = float(np.mean(np.array(pvalues) < delta))
    slack = stats.binom.ppf(0.999, n_sets, delta) / n_sets  # 99.9% binomial upper quantile
    print(f"calibration: rejection rate {rate:.3f} over {n_sets} test sets (allowed {slack:.3f})")
    assert rate <= slack


def test_power_on_a_model_trained_on_half_the_test_set():
    x, y = DIST.sample(1000, random_state=13)
    model = train_logistic_models(
        x[:500], y[:500], steps=300, first_coordinate_penalty=1e4, random_state=14
    )[0]
    result = overfit_test(model, x, y, LinearGradientAEG(10.0, DIST))
    assert result.reject and result.pvalue < 0.01
    assert result.statistic > 0  # adversarial risk above the (optimistic) plain error rate
    assert result.n_success > 0 and result.warnings == []
    assert result.risk_plain == pytest.approx(np.mean(model.predict(x) != y))
    direct = pairwise_test(
        (model.predict(x) != y).astype(float),
        LinearGradientAEG(10.0, DIST).generate(model, x, y, loss=(model.predict(x) != y)).weighted_adv_loss,
        U=2.0,
    )
    assert result.pvalue == pytest.approx(direct.pvalue)
    assert result.ci.m == 1000 and "pvalue" in result.to_dict()["ci"]
    # eps -> 0 leaves every point in place: T = 0 and p = 1
    tiny = overfit_test(model, x, y, LinearGradientAEG(1e-9, DIST))
    assert tiny.pvalue == 1.0 and tiny.n_success == 0 and "no successful adversarial" in tiny.warnings[0]


class _TranslationLike(AdversarialExampleGenerator):
    requires_density_preservation = True

    def _generate(self, model, x, y):
        from fitaudit.overfit import AEGOutput

        m = len(x)
        return AEGOutput(x_adv=x.copy(), weight=np.ones(m), adv_loss=(model.predict(x) != y).astype(float), success=np.zeros(m, bool))


def test_density_preservation_warning_and_range(independent_model):
    x, y = DIST.sample(50, random_state=15)
    result = overfit_test(independent_model, x, y, _TranslationLike())
    assert result.U == 1.5
    assert any("not valid for centred datasets such as MNIST or CIFAR-10" in w for w in result.warnings)


def test_aeg_factory_is_called_with_the_model(independent_model):
    x, y = DIST.sample(100, random_state=16)
    seen = []

    def factory(model):
        seen.append(model)
        return LinearGradientAEG(5.0, DIST)

    overfit_test(independent_model, x, y, factory)
    assert seen == [independent_model]


def test_bad_input(independent_model):
    x, y = DIST.sample(20, random_state=17)
    aeg = LinearGradientAEG(1.0, DIST)
    with pytest.raises(InputError, match="`y` holds label 2 but the model has 2 classes"):
        overfit_test(independent_model, x, np.where(y == 1, 2, 0), aeg)
    with pytest.raises(InputError, match="`x` must have at least 2"):
        overfit_test(independent_model, x[:1], y[:1], aeg)
    bad = x.copy()
    bad[3, 4] = np.nan
    with pytest.raises(InputError, match="`x` must be finite"):
        overfit_test(independent_model, bad, y, aeg)
    with pytest.raises(InputError, match="`y` must have 20 entries"):
        overfit_test(independent_model, x, y[:10], aeg)
    with pytest.raises(InputError, match="`aeg` must be an AdversarialExampleGenerator"):
        overfit_test(independent_model, x, y, "linear")
    with pytest.raises(InputError, match="`delta` must be in"):
        overfit_test(independent_model, x, y, aeg, delta=0.7)
    with pytest.raises(InputError, match="`x` must be array-like"):
        overfit_test(independent_model, [list(x[0]), list(x[1][:3])], y[:2], aeg)
