"""The audit page shows the (G3) check's own numbers where it was made, not the general note on (G3)."""

from __future__ import annotations

import dataclasses

import numpy as np

from fitaudit.auditing.parts import overfit_result_part
from fitaudit.auditing.result import AuditResult
from fitaudit.overfit.g3 import G3ShiftTest
from fitaudit.report import audit_page


def _result(g3):
    from fitaudit.overfit import TranslationAEG, overfit_test

    rng = np.random.default_rng(0)
    canvases = rng.random((8, 3, 14, 14)).astype(np.float32)

    def model(x):  # scores by brightness: a plain callable with two classes
        mean = x.reshape(len(x), -1).mean(axis=1)
        return np.stack([mean, 1 - mean], axis=1)

    from fitaudit.models import as_classifier

    result = overfit_test(as_classifier(model, n_classes=2), canvases, np.arange(8) % 2,
                          TranslationAEG(eps=1, margin=3), check_density=False)
    return dataclasses.replace(result, g3=g3)


def test_the_page_shows_the_g3_numbers_instead_of_the_general_note():
    g3 = G3ShiftTest(statistic=41, n_test=80, accuracy=41 / 80, pvalue=0.46, low=0.42, level=0.05,
                 violated=False, n_images=160, eps=1)
    checked = overfit_result_part("overfit-test", "Overfitting test on the scored data", _result(g3), role="test",
                                  settings={"label": "scored data"})
    unchecked = overfit_result_part("overfit-train", "Overfitting test on the training data", _result(None),
                                    role="train", settings={"label": "training data"})

    def page(*parts):
        return audit_page(AuditResult(title="t", subject={}, parts=list(parts), settings={}, environment={},
                                      random_state=0, seconds=0.0, created="now"))

    shown = page(checked)
    assert "scored data: G3 check (160 images): a classifier tells shifted from centre crops 51.2% of the time" in shown
    assert "G3 holds (no sign against it)" in shown
    assert "not valid for centred datasets" not in shown
    assert "not valid for centred datasets" in page(unchecked)  # G3 not checked: the general note stays
