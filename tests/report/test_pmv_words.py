"""PMV's words are built for the reason that decided only: another reason's numbers may be absent.

The held-out reading of a memorising learner without a reference learner
(inputs that are not numeric) has no gap to a reference; before the words
were one function per reason, every reason's sentence was formatted and
``fitaudit audit`` on such a table stopped with a TypeError.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fitaudit.report.pmv_words import say_pmv
from fitaudit.verdict import Verdict

RESULT = SimpleNamespace(mean_accuracy=[0.93, 0.71], rates=[0.0, 0.2], score=0.41, statistic=0.37, bound=0.8,
                         delta=0.05, baseline_statistic=0.11)
FACTS = {"threshold": 0.5, "baseline_gain": 0.42, "majority_share": 0.6}
#: a memoriser's cross-validated reading without a reference learner: no reference, gap nor material gap
HELDOUT = {"cv_accuracy": 0.81, "cv_majority_accuracy": 0.6, "cv_folds": 5, "cv_rows": 300, "cv_repeats": 3,
           "cv_gain_low": 0.15, "cv_gain_high": 0.27, "material_gap": 0.03, "pvalue_above_majority": 0.001}


@pytest.mark.parametrize(("reason", "status", "deciding"), [
    ("memorises_no_better_than_majority", "fail", "(0.810 against 0.600)"),
    ("memorises_but_generalises", "pass", "no reference learner: the inputs are not numeric"),
])
def test_a_memoriser_without_a_reference_learner_is_worded(reason, status, deciding):
    text = say_pmv(RESULT, Verdict(status, reason, {**FACTS, **HELDOUT}))
    assert text.startswith("Fails:" if status == "fail" else "Passes:") and deciding in text
    assert "5-fold cross-validated accuracy 0.810 on its 300 training rows" in text and "reference minus" not in text


@pytest.mark.parametrize("reason", ["underfits", "fits_part_of_signal", "memorises_labels", "partly_memorises_labels",
                                    "slope_undefined"])
def test_a_reason_that_does_not_name_the_majority_learner_needs_none_of_its_numbers(reason):
    """Only at_majority_baseline and fits_signal say what the majority-class learner reaches."""
    without = SimpleNamespace(**{**vars(RESULT), "baseline_statistic": None})
    text = say_pmv(without, Verdict("inconclusive", reason, FACTS))
    assert "|k_S| = 0.370 with training accuracy 0.930 on the clean labels and 0.710 with 20% flipped" in text
    assert "majority-class learner reaches" not in text
    with pytest.raises(TypeError):  # the two that do format it
        say_pmv(without, Verdict("pass", "fits_signal", FACTS))
