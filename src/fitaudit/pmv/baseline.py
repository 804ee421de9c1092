"""The majority-class learner: the baseline every PMV score is read against.

PMV's criterion |k_S| (Zhang et al. 2019, Sec. 3) rewards a learner whose
training accuracy falls as labels are flipped. The majority-class learner
(scikit-learn's ``DummyClassifier(strategy="most_frequent")``) does exactly
that without learning anything: fitted on S_r it predicts the largest class
of S_r, so with a majority share p and two classes its training accuracy is
p - r (2p - 1) and |k_S| = 2p - 1 (0.80 on a table with 90% of one class,
more than most real learners reach). A score is therefore only evidence of
a fit when the learner does more than count the classes: it must remove at
least :data:`BASELINE_GAIN` of the majority-class learner's training errors
on the clean labels. fitaudit's convention, not the paper's (PMV draws no
line); see docs/pmv.md.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: smallest share of the majority-class learner's clean training errors a learner must remove
#: to count as fitting more than the class sizes (fitaudit's convention)
BASELINE_GAIN = 0.1


def baseline_gain(result: Any) -> float:
    """(a - p) / (1 - p): the share of the majority-class learner's training errors on the clean labels
    that the learner removes (a: its clean training accuracy, p: the majority share); NaN when p = 1."""
    accuracy = float(np.asarray(result.mean_accuracy, dtype=float)[0])
    majority = float(np.asarray(result.baseline_accuracy, dtype=float)[0])
    return (accuracy - majority) / (1.0 - majority) if majority < 1.0 else math.nan


def at_majority_baseline(result: Any) -> bool:
    """Whether the learner fits its clean labels no better than the majority-class learner
    (removes less than :data:`BASELINE_GAIN` of its errors, or the gain is undefined)."""
    gain = baseline_gain(result)
    return not (math.isfinite(gain) and gain >= BASELINE_GAIN)
