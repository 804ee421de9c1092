"""The synthetic experiment's LinearModel is a classifier like any other."""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.models import ClassifierProtocol, as_classifier, is_classifier_adapter
from fitaudit.overfit import LinearModel


@pytest.fixture
def model() -> LinearModel:
    return LinearModel(coef_=np.array([1.0, -2.0, 0.5]), intercept_=0.25)


def test_linear_model_follows_the_protocol_and_passes_through(model):
    assert isinstance(model, ClassifierProtocol) and is_classifier_adapter(model)
    assert as_classifier(model) is model
    x = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    score = x @ model.coef_ + model.intercept_  # 1.25, -1.75
    np.testing.assert_allclose(model.logits(x), np.stack([np.zeros(2), score], axis=1))
    np.testing.assert_allclose(model.predict_proba(x)[:, 1], 1 / (1 + np.exp(-score)))
    np.testing.assert_array_equal(model.predict(x), [1, 0])
    with pytest.raises(InputError, match="`n_classes` is 3 but the given adapter has 2 classes"):
        as_classifier(model, n_classes=3)


@pytest.mark.parametrize(
    ("x", "message"),
    [
        (np.zeros((4, 2)), r"`x` must have 3 features per example for this LinearModel, shape \(n, 3\); got shape \(4, 2\)"),
        (np.zeros(3), r"`x` must have 2 dimension\(s\); got shape \(3,\)"),
        (np.array([[np.nan, 0.0, 0.0]]), "`x` must be finite"),
    ],
)
def test_linear_model_bad_input(model, x, message):
    for method in (model.predict, model.logits, model.predict_proba):
        with pytest.raises(InputError, match=message):
            method(x)
