"""The leakage decision: the training data's own rows as the null (calibration on clean splits), planted copies
found, a scored set too small to tell."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.datasets import load_breast_cancer, load_iris, load_wine

from fitaudit.leakage import tabular_leakage
from fitaudit.leakage.decision import LEAKAGE_LEVEL, excess_pvalue, minimum_scored
from fitaudit.report.verdicts import read


@pytest.mark.parametrize(("k", "n", "j", "c"), [(0, 10, 3, 50), (3, 10, 1, 50), (7, 40, 2, 300), (12, 12, 0, 5),
                                                (5, 900, 40, 4000), (1, 1, 3, 368)])
def test_excess_pvalue_is_fishers_exact_test(k: int, n: int, j: int, c: int) -> None:
    expected = stats.fisher_exact([[k, n - k], [j, c - j]], alternative="greater").pvalue
    assert excess_pvalue(k, n, j, c) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(("j", "c"), [(0, 10), (2, 367), (4, 561), (1994, 5584), (30, 31)])
@pytest.mark.slow
def test_minimum_scored_is_the_first_size_that_could_fail(j: int, c: int) -> None:
    level = LEAKAGE_LEVEL / 2
    n = 1
    while excess_pvalue(n, n, j, c) >= level:  # the slow way: one size at a time
        n += 1
    assert minimum_scored(j, c, level) == n
    assert minimum_scored(c, c, level) is None  # every training row has a twin: no size could tell


def _clean_split(x: np.ndarray, share: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    order = rng.permutation(len(x))
    n = int(round(share * len(x)))
    return x[order[:n]], x[order[n:]]


@pytest.mark.slow
def test_clean_random_splits_fail_at_most_at_the_level() -> None:
    """Clean splits of bundled tables and of a survey-like table full of natural duplicates.

    The previous calibration (scored-to-scored distances) failed 31 of 60 such splits; under the null
    about 1% may fail, so more than 2 of these 24 would be a miscalibration.
    """
    rng = np.random.default_rng(3)
    survey = rng.integers(1, 5, size=(1500, 4)).astype(float)  # 256 possible answers: most rows repeat
    tables = [load_breast_cancer().data, load_wine().data, load_iris().data, survey]
    failed, verdicts = 0, []
    for x in tables:
        for share in (0.1, 0.2, 0.3, 0.4, 0.5, 0.3):
            scored, train = _clean_split(x, share, rng)
            verdict = tabular_leakage(scored, train, random_state=0).verdict()
            failed += verdict.failed
            verdicts.append(verdict)
    assert failed <= 2, [v for v in verdicts if v.failed]
    survey_verdict = verdicts[-1]
    # equal rows, no excess; but when most rows repeat, a copy cannot be told from a natural repeat
    assert survey_verdict.numbers["n_exact"] > 100 and not survey_verdict.failed
    assert survey_verdict.status == "inconclusive" and survey_verdict.reason == "rows_mostly_repeat"


def test_planted_exact_and_noisy_copies_are_found_and_paired() -> None:
    rng = np.random.default_rng(0)
    x = load_breast_cancer().data
    scored, train = _clean_split(x, 0.3, rng)
    sources = rng.choice(len(train), size=20, replace=False)
    noisy = train[sources[10:]] * (1 + rng.normal(0, 0.002, (10, x.shape[1])))
    planted = np.concatenate([scored, train[sources[:10]], noisy])
    result = tabular_leakage(planted, train)
    pairs = dict(zip(result.near_scored.tolist(), result.near_train.tolist()))
    rows = range(len(scored), len(planted))
    assert all(pairs.get(r) == s for r, s in zip(rows, sources.tolist()))
    verdict = result.verdict()
    assert verdict.failed and verdict.reason == "exact_copies_beyond_duplicate_rate"
    only_noisy = tabular_leakage(np.concatenate([scored, noisy]), train).verdict()
    assert only_noisy.failed and only_noisy.reason == "near_twins_beyond_null"


def test_a_scored_set_too_small_to_tell_is_inconclusive_with_the_minimum() -> None:
    rng = np.random.default_rng(1)
    survey = rng.integers(1, 4, size=(800, 3)).astype(float)  # 27 answers: every row has a duplicate
    train = survey[:700]
    result = tabular_leakage(survey[700:702], train)
    verdict = result.verdict()
    assert verdict.status == "inconclusive" and verdict.reason == "rows_mostly_repeat"
    reading = read(result)
    assert reading.status == "inconclusive" and "a copy cannot be told from a natural repeat" in reading.sentence
    x = load_wine().data
    scored, train = _clean_split(x, 0.5, rng)
    far = tabular_leakage(scored[:1] + 100, train)  # far from everything: no twin, one example
    wine = far.verdict()
    assert wine.status == "inconclusive" and wine.reason == "too_few_scored"
    assert "too few scored examples to tell" in read(far).sentence
    need = wine.numbers["minimum_scored"]
    assert need is not None and need > 1
    copies = tabular_leakage(train[:need] * 1.0001, train).verdict()  # that many near copies: enough to fail
    assert copies.failed


@pytest.mark.slow
def test_pairs_name_their_files_in_the_report() -> None:
    """Features that know their files (image folders) give pairs that name both files everywhere they are shown."""
    from fitaudit.leakage import image_features, image_leakage
    from fitaudit.report import render
    from fitaudit.report.first_questions import pair_caption
    from fitaudit.results import Result

    rng = np.random.default_rng(2)
    images = rng.random((40, 3, 4, 4)).repeat(4, axis=2).repeat(4, axis=3).astype(np.float32)
    train, scored = image_features(images[:30]), image_features(np.concatenate([images[30:], images[[4]]]))
    train.names = tuple(f"train/c/{i}.png" for i in range(30))
    scored.names = tuple(f"val/c/{i}.png" for i in range(11))
    result = image_leakage(scored, train)
    assert dict(zip(result.near_scored_file, result.near_train_file))["val/c/10.png"] == "train/c/4.png"
    again = Result.from_dict(result.to_dict())
    for text in (render(again, "html"), render(again, "markdown")):
        assert "val/c/10.png" in text and "train/c/4.png" in text
    position = int(np.flatnonzero(result.near_scored == 10)[0])
    caption = pair_caption({"scored": 10, "train": 4, "distance": 0.0, "scored_file": result.near_scored_file[position],
                            "train_file": result.near_train_file[position]})
    assert caption == "scored 10 (val/c/10.png) | training 4 (train/c/4.png): distance 0.0000"


def test_rows_that_mostly_repeat_are_inconclusive_before_the_tests() -> None:
    """A clean split of randhie (benchmarks/validity/leakage_tables.py): its equal rows come in clusters, so the
    Fisher tests' independent rows do not hold and gave p = 0.002; the verdict says a copy cannot be told apart."""
    from fitaudit.leakage.decision import leakage_verdict

    class Counts:  # what the decision reads of a LeakageResult
        n_scored, n_near, n_exact = 6815, 6632, 6632
        null_near, n_calibration, null_exact, n_train = 4819, 5000, 12916, 13375
        accuracy = accuracy_without = None

    verdict = leakage_verdict(Counts())
    assert verdict.numbers["exact_pvalue"] < LEAKAGE_LEVEL / 2  # the test alone would fail this clean split
    assert verdict.status == "inconclusive" and verdict.reason == "rows_mostly_repeat"
