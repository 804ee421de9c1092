"""The calibration check (issue 48): top-label ECE, its debiased estimate and interval, the exact tests.

References: a slow loop of Guo et al.'s ECE, netcal's ECE and relplot's
binned ECE (when installed), Kumar et al.'s resampling form of the debiased
estimate, scipy's binomtest, a row-by-row bootstrap; simulation for the
level; the breast_cancer cases of the issue: GaussianNB fails, the honest
scaled logistic regression does not.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fitaudit._errors import InputError
from fitaudit.calibration import CalibrationResult, calibration_check
from fitaudit.calibration.result import bin_index, bootstrap_debiased, debiased_from_bins, top_label
from fitaudit.report.verdicts import read
from fitaudit.results import load_result


def _dirichlet_case(n, seed, k=3):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 0.7, n)
    y = np.array([rng.choice(k, p=row) for row in p])
    return p, y


def _slow_ece(probabilities, y, n_bins=15):
    """Guo et al. (2017), Eq. 3, by loops: bins (m-1)/M < conf <= m/M."""
    confidence = [max(row) for row in probabilities]
    right = [int(np.argmax(row)) == label for row, label in zip(probabilities, y)]
    total = 0.0
    for m in range(1, n_bins + 1):
        members = [i for i, c in enumerate(confidence) if (m - 1) / n_bins < c <= m / n_bins or (m == 1 and c == 0)]
        if members:
            accuracy = sum(right[i] for i in members) / len(members)
            mean = sum(confidence[i] for i in members) / len(members)
            total += len(members) / len(confidence) * abs(accuracy - mean)
    return total


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return train_test_split(X, y, test_size=0.4, stratify=y, random_state=0)


def test_ece_matches_a_slow_loop_and_bin_edges_are_guos():
    p, y = _dirichlet_case(700, 0)
    result = calibration_check(y, p, n_boot=50)
    assert result.ece == pytest.approx(_slow_ece(p, y), abs=1e-12)
    assert bin_index(np.array([0.0, 1 / 15, 1 / 15 + 1e-9, 1.0]), 15).tolist() == [0, 0, 1, 14]
    rows = result.reliability()
    assert sum(r["count"] for r in rows) == 700 and all(r["accuracy_low"] <= r["accuracy"] <= r["accuracy_high"]
                                                       for r in rows)


def test_ece_matches_netcal_and_relplot():
    p, y = _dirichlet_case(900, 1)
    ece = calibration_check(y, p, n_boot=50).ece
    netcal = pytest.importorskip("netcal.metrics")
    assert ece == pytest.approx(netcal.ECE(bins=15).measure(p, y), abs=1e-9)
    relplot = pytest.importorskip("relplot")
    confidence, right, _ = top_label(y, p)
    assert ece == pytest.approx(relplot.metrics.binnedECE(confidence, right.astype(float), nbins=15), abs=1e-9)


def test_the_debiased_estimate_is_kumar_et_als_resampling_estimate_in_the_limit():
    """Kumar et al.'s ``normal_debiased_ce``: 2 ECE - mean ECE over Gaussian resamples of each bin's accuracy."""
    p, y = _dirichlet_case(400, 2)
    result = calibration_check(y, p, n_boot=50)
    rng = np.random.default_rng(3)
    count = result.bin_count.astype(float)
    filled = count > 0
    accuracy, confidence = result.bin_accuracy[filled], result.bin_confidence[filled]
    sd = np.sqrt(accuracy * (1 - accuracy) / count[filled])
    draws = rng.normal(accuracy, sd, size=(200_000, accuracy.size))
    resampled = (np.abs(draws - confidence) @ (count[filled] / count.sum())).mean()
    assert result.ece_debiased == pytest.approx(2 * result.ece - resampled, abs=2e-4)


def test_the_gap_test_is_scipys_binomial_test():
    p, y = _dirichlet_case(500, 4)
    result = calibration_check(y, p, n_boot=50, tolerance=0.0)
    less = binomtest(result.correct, 500, result.mean_confidence, alternative="less").pvalue
    greater = binomtest(result.correct, 500, result.mean_confidence, alternative="greater").pvalue
    assert result.gap_pvalue == pytest.approx(min(1, 2 * min(less, greater)))


def test_the_cell_bootstrap_matches_a_row_bootstrap():
    p, y = _dirichlet_case(600, 5)
    confidence, right, _ = top_label(y, p)
    bins = bin_index(confidence, 15)
    rng = np.random.default_rng(6)
    fast = bootstrap_debiased(bins, right, confidence, 15, 4000, rng)
    slow = []
    for _ in range(4000):
        rows = rng.integers(0, 600, 600)
        b = bins[rows]
        slow.append(float(debiased_from_bins(np.bincount(b, minlength=15).astype(float),
                                             np.bincount(b, weights=right[rows].astype(float), minlength=15),
                                             np.bincount(b, weights=confidence[rows], minlength=15))))
    for q in (0.025, 0.5, 0.975):
        assert np.quantile(fast, q) == pytest.approx(np.quantile(slow, q), abs=0.003)


@pytest.mark.parametrize("tolerance", [0.0, 0.02])
def test_well_calibrated_probabilities_fail_at_most_at_the_level(tolerance):
    """200 draws of labels from the model's own probabilities (perfect calibration): fails at most 5%."""
    rng = np.random.default_rng(7)
    fails = 0
    for draw in range(200):
        logits = rng.normal(0, 2, (300, 3))
        p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        y = (rng.random(300)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
        fails += calibration_check(y, p, n_boot=200, tolerance=tolerance, random_state=draw).verdict().failed
    assert fails / 200 <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 200)


def test_planted_overconfidence_fails_and_its_size_is_detected():
    rng = np.random.default_rng(8)
    p = rng.uniform(0.5, 0.9, 2000)
    y = (rng.random(2000) < p).astype(int)
    honest = calibration_check(y, p, random_state=0)
    assert honest.verdict().status == "pass"
    detectable = honest.verdict().numbers["detectable"]
    assert 0.02 < detectable < 0.06
    sharp = np.clip(p + detectable + 0.03, 0, 1)
    assert calibration_check(y, sharp, random_state=0).verdict().reason == "overconfident"


def test_naive_bayes_fails_and_the_honest_model_does_not_on_breast_cancer(cancer):
    X_train, X_test, y_train, y_test = cancer
    bayes = calibration_check(y_test, GaussianNB().fit(X_train, y_train).predict_proba(X_test))
    assert (round(bayes.mean_confidence, 3), round(bayes.accuracy, 3)) == (0.994, 0.934)  # the numbers
    assert bayes.verdict().status == "fail" and bayes.verdict().reason == "overconfident"
    assert read(bayes).sentence.startswith("Fails: the model is overconfident: its accuracy is 0.059 below its "
                                           "mean confidence.")
    honest = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X_train, y_train)
    result = calibration_check(y_test, honest.predict_proba(X_test))
    assert result.verdict().status == "pass"
    assert read(result).sentence.startswith(f"Passes: no miscalibration shown (ECE {result.ece:.3f}).")


def test_few_rows_cannot_tell():
    p, y = _dirichlet_case(25, 9)
    verdict = calibration_check(y, p, n_boot=100).verdict()
    assert verdict.status in ("inconclusive", "fail")
    if verdict.status == "inconclusive":
        assert verdict.reason == "cannot_tell" and (verdict.numbers["detectable"] is None or
                                                    verdict.numbers["detectable"] > 0.1)


def test_bad_input_names_the_argument():
    with pytest.raises(InputError, match="`probabilities` rows must sum to 1"):
        calibration_check([0, 1], [[0.2, 0.2], [0.5, 0.5]])
    with pytest.raises(InputError, match="`y_true` must be class indices 0..1"):
        calibration_check([0, 2], [[0.8, 0.2], [0.5, 0.5]])
    with pytest.raises(InputError, match="`y_true` must hold one label per row"):
        calibration_check([0], [[0.8, 0.2], [0.5, 0.5]])
    with pytest.raises(InputError, match="`n_bins`"):
        calibration_check([0, 1], [0.2, 0.7], n_bins=0)
    assert calibration_check([0, 1], [0.2, 0.7], n_boot=10).n_classes == 2  # (n,): the probability of class 1


def test_a_saved_result_reads_back_and_an_edited_one_is_refused():
    p, y = _dirichlet_case(300, 10)
    result = calibration_check(y, p, n_boot=100)
    saved = result.to_dict()
    assert load_result(saved, CalibrationResult).verdict() == result.verdict()
    saved["ece"] = 0.5
    with pytest.raises(InputError, match="`ece` is 0.5, but its evidence gives"):
        load_result(saved)
    saved = result.to_dict()
    saved["bin_count"] = saved["bin_count"][:-1]
    with pytest.raises(InputError, match="must have one length each"):
        load_result(saved)
