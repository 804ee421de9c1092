"""report.verdicts: one reading per result, and every place that words a result says the same.

For every result type with a reading, a real result is made on tiny data and
its reading (status, sentence) must appear unchanged in the CLI summary of
the command that prints it, in the markdown and HTML renderers, in the audit
part built from it (and the audit's page), and in a part re-read from its
saved form. ``tests/test_demo.py`` checks the demo's parts the same way.
"""

from __future__ import annotations

import dataclasses
import html

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.linear_model import LogisticRegression
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

from fitaudit.auditing.parts import (
    examination_part,
    leaderboard_part,
    overfit_result_part,
    part_from_result,
    pmv_result_part,
)
from fitaudit.auditing.result import AuditResult, load_part
from fitaudit.data import GaussianMargin
from fitaudit.options import RunOptions
from fitaudit.overfit import LinearGradientAEG, n_model_test, overfit_test, train_logistic_models
from fitaudit.pmv import compare_estimators, pmv_score
from fitaudit.pmv.decision import GOOD_FIT_SLOPE
from fitaudit.report import audit_page, render
from fitaudit.report.audit import summary_text
from fitaudit.report.badges import known_answer, known_answers
from fitaudit.report.numbers import pvalue
from fitaudit.report.verdicts import (
    read,
    read_part,
    readable_types,
    split_headline,
    word_audit,
)
from fitaudit.verdict import Verdict
from headline_check import check_headline

#: the result types this file makes and checks (every registered reading must be here)
CHECKED = {"OverfitTestResult", "PairwiseTestResult", "CITestResult", "NModelTestResult", "OverfitCommandResult",
           "PMVResult", "PMVComparison", "ExaminationResult", "WeaknessReport", "Leaderboard", "TaskScores",
           "MeasureScore", "AuditResult", "AccuracyResult", "LeakageResult", "AgreementResult", "BaselineResult",
           "CalibrationResult", "SliceResult", "LabelResult"}


def _audit(*parts):
    return AuditResult(title="t", subject={}, parts=list(parts), settings={"out": "."}, environment={},
                       random_state=0, seconds=0.0, created="now")


def _everywhere(result, part, *, cli=None):
    """The reading of ``result`` is what ``cli``, the renderers, the part and the page say."""
    context = {k: part.settings[k] for k in ("role", "threshold", "tolerance") if k in part.settings}
    status, sentence = read(result, **context)
    assert status == result.verdict(**context).status  # the words never decide: the status is the result's own
    check_headline(sentence, result.verdict(**context))
    assert status in ("pass", "fail", "inconclusive", "info") and sentence
    if cli is not None:
        assert _printed(read(result, **context), cli(result))
    assert part.sentence == "" or part.status == "skipped"  # the audit decides; it does not word
    worded = word_audit(_audit(part)).parts[0]  # the report layer words it
    assert (worded.status, worded.sentence) == (status, sentence)
    assert read_part(part) == (status, sentence)
    assert read_part(load_part(part.to_dict())) == (status, sentence)
    page = audit_page(_audit(part))  # the card: the headline in bold, then the details
    headline, details = split_headline(sentence)
    assert f"<strong>{html.escape(headline, quote=True)}</strong>" in page and html.escape(details, quote=True) in page
    return status, sentence


def _printed(reading, text):
    """The command line prints the reading's headline at the end of a line, its details on the next."""
    return f"{reading.headline}\n{reading.details}" in text if reading.details else f"{reading.headline}\n" in text + "\n"


def _renders(result, sentence):
    check_headline(sentence, result.verdict())
    assert sentence in render(result, "markdown")
    assert html.escape(sentence, quote=True) in render(result, "html")


@pytest.fixture(scope="module")
def margin():
    dist = GaussianMargin(d=30)
    x, y = dist.sample(400, random_state=0)
    dependent = train_logistic_models(x[:200], y[:200], steps=300, first_coordinate_penalty=1e4, random_state=0)[0]
    x_other, y_other = dist.sample(200, random_state=5)
    independent = train_logistic_models(x_other, y_other, steps=300, random_state=1)[0]
    return dist, x, y, dependent, independent


@pytest.fixture(scope="module")
def rejected():
    """A real rejection: a model trained on half its scored set (as tests/overfit/test_overfit_test.py)."""
    dist = GaussianMargin(500)
    x, y = dist.sample(1000, random_state=13)
    model = train_logistic_models(x[:500], y[:500], steps=300, first_coordinate_penalty=1e4, random_state=14)[0]
    result = overfit_test(model, x, y, LinearGradientAEG(10.0, dist))
    assert result.reject
    return result


@pytest.mark.slow
def test_overfitting_tests_read_the_same_everywhere(margin, rejected):
    dist, x, y, dependent, independent = margin
    aeg = LinearGradientAEG(5.0, dist)
    kept = overfit_test(independent, x, y, aeg)  # d = 30: the shifts change 4% of its answers
    assert not kept.reject
    big = GaussianMargin(500)  # d = 500: the shifts change 15% of an independent model's answers
    x_big, y_big = big.sample(1000, random_state=13)
    other = train_logistic_models(*big.sample(500, random_state=5), steps=300, random_state=1)[0]
    powered = overfit_test(other, x_big, y_big, LinearGradientAEG(10.0, big))
    assert not powered.reject
    for result, role, status in ((rejected, "test", "fail"), (powered, "test", "pass"), (kept, "test", "inconclusive"),
                                 (rejected, "train", "info")):
        part = overfit_result_part("overfit-test", "t", result, role=role)
        assert _everywhere(result, part)[0] == status
    assert "could not have rejected" in read(kept).sentence and "risk estimate" not in read(kept).sentence
    # without a control a pass never reads the error rate as a risk estimate, and says first what hides from it
    assert "risk estimate" not in read(powered).sentence
    assert read(powered).headline.startswith("Passes: no dependence on this data shown")
    assert read(powered).headline.endswith("but training on random crops or shifts would hide it.")
    assert "training on random crops or shifts hides overfitting from this test" in read(powered).details
    _renders(rejected, read(rejected).sentence)
    assert "is not independent" in read(rejected).sentence and f"p = {pvalue(rejected.pvalue)} < 0.05" in read(rejected).sentence
    assert "p = 1 >= 0.05" in read(kept).sentence
    for inner in (kept.pairwise, kept.ci):  # the two tests inside the overfitting test
        for verdict in (inner, dataclasses.replace(inner, reject=True)):
            status, sentence = read(verdict)
            assert status == ("fail" if verdict.reject else "pass")
            _renders(verdict, sentence)
    runs = n_model_test([dependent, independent], x, y, aeg)
    part = part_from_result("overfit-nmodel", "overfit", "t", runs)
    _everywhere(runs, part)
    _renders(runs, read(runs).sentence)


def test_overfit_command_reads_as_its_test(margin):
    """``fitaudit overfit``'s result is read as the test it ran."""
    from fitaudit.overfit.runs import OverfitCommandResult
    dist, x, y, dependent, _ = margin
    result = overfit_test(dependent, x, y, LinearGradientAEG(5.0, dist))
    command = OverfitCommandResult(pvalue=result.pvalue, reject=result.reject, test=result, runs=[], variant="v",
                                   eps=1, margin=1, m=len(y), n_models=1, warning="")
    assert read(command) == read(result)


@pytest.fixture(scope="module")
def moons():
    return make_moons(200, noise=0.3, random_state=0)


@pytest.mark.slow
def test_pmv_reads_the_same_everywhere(moons):
    from fitaudit.cli.pmv import summary

    x, y = moons
    memoriser = pmv_score(DecisionTreeClassifier(random_state=0), x, y, random_state=0)
    fitting = pmv_score(SVC(), x, y, random_state=0)  # removes 85% of the majority-class learner's errors
    for result, status in ((memoriser, "inconclusive"), (fitting, "pass")):
        part = pmv_result_part(result)
        assert _everywhere(result, part, cli=summary)[0] == status
        _renders(result, read(result).sentence)
    assert "memorises its training labels" in read(memoriser).sentence
    assert "PMV cannot tell whether it generalises" in read(memoriser).sentence
    # |k_S| = 0 with these sizes: 1 + 3 sqrt(ln(40) / 400) = 1.29 > 1, a vacuous bound, said so
    assert memoriser.bound > 1 and "(vacuous: above 1, it bounds nothing)" in read(memoriser).sentence
    assert fitting.bound < 1 and "vacuous" not in read(fitting).sentence
    assert "fits the signal" in read(fitting).sentence
    # a threshold from the part's settings is the reading's context
    strict = pmv_result_part(fitting, threshold=0.99)
    assert strict.status == "inconclusive" and read_part(strict).status == "inconclusive"
    mutation = pmv_score(LogisticRegression(), x, y, criterion="mutation", random_state=0)
    assert read(mutation).status == "info" and _printed(read(mutation), summary(mutation))
    comparison = compare_estimators({"tree": DecisionTreeClassifier(random_state=0), "logistic": LogisticRegression()},
                                    x, y, random_state=0)
    _renders(comparison, read(comparison).sentence)


def test_pmv_is_inconclusive_on_a_partly_memorising_learner(moons):
    """A forest-like reading: high clean accuracy, |k_S| under the line, still high accuracy on flipped labels."""
    x, y = moons
    fitted = pmv_score(LogisticRegression(), x, y, random_state=0)
    forest_like = dataclasses.replace(fitted, statistic=0.2, score=0.2,
                                      mean_accuracy=np.linspace(1.0, 0.85, len(fitted.rates)))
    status, sentence = read(forest_like)
    assert status == "inconclusive" and "partly memorises its training labels" in sentence
    assert "PMV cannot tell whether it generalises" in sentence


def test_pmv_flags_an_underfitting_learner_with_a_large_slope(moons):
    """A learner near a 90/10 majority class: its slope alone would read as a good fit, its clean accuracy
    (0.92) passed the old 0.75 cut-off, but it removes only 20% of the majority-class learner's errors."""
    x, y = moons
    fitted = pmv_score(LogisticRegression(), x, y, random_state=0)
    rates = np.asarray(fitted.rates)
    near_majority = dataclasses.replace(fitted, mean_accuracy=0.92 - 0.8 * rates,
                                        baseline_accuracy=0.90 - 0.8 * rates, statistic=0.8, score=0.8)
    assert near_majority.statistic >= GOOD_FIT_SLOPE
    status, sentence = read(near_majority)
    assert status == "fail" and "underfits" in sentence and "fits the signal" not in sentence
    assert "training accuracy 0.920 on the clean labels" in sentence and "it removes 20% of the errors" in sentence


@pytest.fixture(scope="module")
def examination(tiny_torch_net):
    from fitaudit.data.shapes import ShapesGenerator
    from fitaudit.examine import examine

    generator = ShapesGenerator(1, classes=["sphere", "cube", "torus"], split="test")
    return examine(tiny_torch_net, generator, examiner="random", steps=4, random_state=0, progress=False), generator


@pytest.mark.slow
def test_examinations_read_the_same_everywhere(examination, tmp_path):
    from fitaudit.cli.examine import summary

    result, generator = examination
    queries = dict(result.queries)
    part = examination_part(result, generator, tolerance=0.2, queries_path=tmp_path / "q.npz")
    assert result.queries.keys() == queries.keys()  # the instrument's result is left as it was
    _everywhere(result, part, cli=summary)
    _renders(result, read(result).sentence)
    strict = examination_part(result, generator, tolerance=-1.0)  # any gap fails
    assert strict.status == "fail" and read_part(load_part(strict.to_dict())).status == "fail"
    if result.weakness is not None:
        assert read(result.weakness).sentence in render(result.weakness, "markdown")


@pytest.mark.slow
def test_leaderboards_read_the_same_everywhere(tiny_pgdl_task, tmp_path):
    from fitaudit.cli.pgdl import leaderboard_summary, score_summary
    from fitaudit.pgdl.harness import score_task
    from fitaudit.pgdl.leaderboard import leaderboard

    board = leaderboard(tiny_pgdl_task, ["noisy_gap", "parameter_count"], budget_s=None, options=RunOptions(random_state=0, progress=False),
                        checkpoint_dir=tmp_path / "scores")
    _everywhere(board, leaderboard_part(board), cli=leaderboard_summary)
    _renders(board, read(board).sentence)
    assert "ranks first by the competition's score" in read(board).sentence
    scores = score_task(tiny_pgdl_task, ["noisy_gap", "parameter_count"], options=RunOptions(random_state=0, progress=False))
    assert _printed(read(scores), score_summary(scores))
    _renders(scores, read(scores).sentence)
    assert read(scores.scores[0]).sentence in render(scores.scores[0], "markdown")


def test_an_audit_reads_the_same_in_its_summary_and_page():
    from fitaudit.auditing.result import AuditPart, PartVerdict
    from fitaudit.cli.audit import summary

    failed = AuditPart(id="a", instrument="pmv", title="A", verdict=PartVerdict("fail", "toy", {}, "bad"))
    passed = AuditPart(id="b", instrument="pmv", title="B", verdict=PartVerdict("pass", "toy", {}, "good"))
    result = _audit(failed, passed)
    status, sentence = read(result)
    assert (status, sentence) == ("fail", "1 problem found by 2 checks.")
    assert sentence in summary(result) and html.escape(sentence) in audit_page(result)
    assert sentence in render(result, "markdown")
    # where the answer is known (the demo's hook, AuditResult.known_answers), a failure that is the right
    # answer is no problem
    answers = {"a": {"text": "rejected", "met": True}, "b": {"text": "not rejected", "met": True}}
    known = _Known(**{f.name: getattr(result, f.name) for f in dataclasses.fields(result)})
    known.answers = answers
    assert read(known) == ("pass", "2 of 2 known answers found.")
    assert known_answer(failed) is None  # outside the drawing of an audit that knows its answers
    with known_answers(known):
        assert known_answer(failed) == answers["a"]
    page = audit_page(known)  # the badge keeps the status; the known answer is a marker beside it
    assert "<span class='pill fail'>failed</span><span class='answer met'>known answer found</span>" in page
    assert "known answer: rejected (found)" in render(known, "markdown")
    answers["b"]["met"] = False
    assert read(known) == ("fail", "1 of 2 known answers found; 1 wrong answer.")
    assert "[ok  ] [WRONG] B" in summary_text(known) and "[FAIL] [found] A" in summary_text(known)
    assert "known answer" not in summary_text(result) and "class='answer" not in audit_page(result)


class _Known(AuditResult):
    """An audit that knows its answers (as the demo's DemoResult): the hook the report and the verdict ask."""

    answers: dict = {}

    def known_answers(self):
        return self.answers


@pytest.mark.slow
def test_first_questions_read_the_same_everywhere():
    from fitaudit.auditing.first import INSTRUMENT
    from fitaudit.cli.leakage import summary as leakage_summary
    from fitaudit.leakage import tabular_leakage
    from fitaudit.stats import accuracy, agreement

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 300)
    predictions = np.where(rng.random(300) < 0.8, y, (y + 1) % 3)
    measured = accuracy(y, predictions, class_names=["a", "b", "c"])
    other = np.where(rng.random(300) < 0.6, predictions, (predictions + 1) % 3)  # agreement ~0.6 << 0.8
    x_train = rng.random((400, 4))
    x_scored = rng.random((300, 4))
    big_train, big_scored = rng.random((4000, 4)), rng.random((2000, 4))  # power to see a 2% leak
    big_y = rng.integers(0, 3, 20000)  # enough examples to see a selection gain of 0.02
    big_predictions = np.where(rng.random(20000) < 0.92, big_y, (big_y + 1) % 3)
    big_other = np.where(rng.random(20000) < 0.92, big_predictions, (big_predictions + 2) % 3)
    sharp = np.where(np.random.default_rng(1).random(300) < 0.95, y, (y + 1) % 3)  # little room for gain
    cases = [
        (measured, "info", None),
        (agreement(predictions, other, measured=measured), "fail", None),
        (agreement(big_predictions, big_other, measured=accuracy(big_y, big_predictions)), "pass", None),
        (agreement(predictions, predictions, measured=measured), "inconclusive", None),  # copies: uninformative
        (agreement(predictions, np.where(rng.random(300) < 0.8, predictions, (predictions + 1) % 3),
                   measured=measured), "inconclusive", None),  # 300 examples cannot see a gain of 0.02
        (agreement(predictions, other), "info", None),
        (tabular_leakage(x_scored, x_train), "inconclusive", leakage_summary),  # no model: a 2% leak unseen
        (tabular_leakage(big_scored, big_train), "pass", leakage_summary),
        (tabular_leakage(np.concatenate([x_train[:30], x_scored[30:]]), x_train, y_true=y, y_pred=predictions),
         "fail", leakage_summary),
        # with a 95%-accurate model: what the leak the twins allow does to the accuracy is small against its interval
        (tabular_leakage(x_scored, x_train, y_true=y, y_pred=sharp), "pass", leakage_summary),
    ]
    for result, status, cli in cases:
        part = part_from_result("first", INSTRUMENT, "First question", result)
        assert _everywhere(result, part, cli=cli)[0] == status, read(result)
        sentence = read(result).sentence
        assert sentence in render(result, "markdown")
        assert html.escape(sentence, quote=True) in render(result, "html")
    assert read(cases[1][0]).headline.startswith("Fails: the measured accuracy is above the agreement estimate beyond "
                                                 "both intervals")
    assert "a sign that the model or its settings were chosen" in read(cases[1][0]).details
    gain = cases[2][0].verdict().numbers["detectable_gain"]
    assert f"it sees a selection gain of {gain:.3f} or more with 80% probability" in read(cases[2][0]).sentence
    assert read(cases[3][0]).sentence.startswith("Inconclusive: the runs nearly never disagree")
    weak = cases[4][0].verdict()
    assert weak.status == "inconclusive" and weak.reason == "gain_below_detection"
    assert read(cases[4][0]).sentence.startswith("Inconclusive:")
    assert f"selection gain of {weak.numbers['detectable_gain']:.3f} or more" in read(cases[4][0]).sentence
    assert "30 of them equal to a training row" in read(cases[8][0]).sentence
    low, high, bounded = (cases[i][0].verdict().numbers for i in (6, 7, 9))
    assert low["detectable_share"] > 0.02 >= high["detectable_share"]
    assert read(cases[6][0]).sentence.startswith(
        "Inconclusive: without predictions, a missed leak could raise the accuracy by up to its share, "
        f"{low['detectable_share']:.1%}, more than a pass allows (2%). {cases[6][0].n_near} of 300 scored examples "
        "have a twin in training, no more than the training data's own repeats explain. Details: ")
    assert (f"the check detects a leaked share of {high['detectable_share']:.1%} or more with 80% power (near twins "
            f"from {high['detectable_share_near']:.1%}, exact copies from {high['detectable_share_exact']:.1%}) at "
            "n = 2000") in read(cases[7][0]).sentence
    assert read(cases[7][0]).sentence.startswith("No sign of leakage: ")
    assert bounded["detectable_share"] == low["detectable_share"]  # the same counts: the same share, now bounded
    assert bounded["accuracy_bound_high"] <= bounded["bound_limit"]
    assert read(cases[9][0]).headline == (
        f"No sign of leakage: an undetected leak could raise the accuracy by at most "
        f"{bounded['accuracy_bound_high']:.2g}.")
    assert read(cases[9][0]).details.startswith(f"{cases[9][0].n_near} of 300 scored examples ")
    for leaked, _, _ in cases[6:]:  # the excess tests' p-values are in the saved form, the ones the sentence prints
        saved, numbers = leaked.to_dict(), leaked.verdict().numbers
        assert (saved["near_pvalue"], saved["exact_pvalue"]) == (numbers["near_pvalue"], numbers["exact_pvalue"])
        assert 0 <= saved["near_pvalue"] <= 1 and 0 <= saved["exact_pvalue"] <= 1


def test_slices_and_labels_read_the_same_everywhere():
    """The new checks' parts read the same in the words, a part read back and the page."""
    from fitaudit.labels import find_label_problems
    from fitaudit.slices import find_weak_slices

    pytest.importorskip("cleanlab")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 3))
    y = rng.integers(0, 2, 400)
    wrong = (rng.random(400) < 0.1) | ((x[:, 0] > 1) & (rng.random(400) < 0.9))
    probabilities = np.where(y[:, None] == np.arange(2), 0.99, 0.01)  # sure: 40 changed labels are more than 1%
    changed = y.copy()
    changed[:40] = 1 - changed[:40]
    cases = [(find_weak_slices(x, y, np.where(wrong, 1 - y, y)), "fail"),
             (find_weak_slices(x, y, np.where(rng.random(400) < 0.1, 1 - y, y)), "pass"),
             (find_weak_slices(x[:30], y[:30], y[:30]), "inconclusive"),
             (find_label_problems(x, changed, probabilities), "fail"),
             (find_label_problems(x, y, probabilities), "pass")]
    for result, expected in cases:
        part = part_from_result("p", "first", "t", result)
        status, sentence = read(result)
        worded = word_audit(_audit(part)).parts[0]
        assert status == expected == result.verdict().status and (worded.status, worded.sentence) == (status, sentence)
        assert read_part(load_part(part.to_dict())) == (status, sentence)
        check_headline(sentence, result.verdict())
        headline, details = split_headline(sentence)
        assert f"<strong>{html.escape(headline, quote=True)}</strong>" in audit_page(_audit(part))
    assert cases[0][0].groups[0]["text"].startswith("x[0] > ")


def test_every_reading_is_checked_here():
    """A new reading must come with its case above (and its name in ``CHECKED``)."""
    missing = set(readable_types()) - CHECKED
    assert not missing, f"readings without an agreement check: {sorted(missing)}"


def test_a_new_reading_is_a_decision_and_its_words(monkeypatch):
    """The result decides (``verdict``); the words in WORDS only put that decision into a sentence."""
    from fitaudit.report import verdicts

    def say_toy(result, verdict, **_):
        return f"value {result.value} against {verdict.numbers['level']}"

    class _Toy:
        value = 0.7

        def verdict(self, *, level=0.5, **_):
            return Verdict("fail" if self.value > level else "pass", "toy", {"level": level})

    monkeypatch.setitem(verdicts.WORDS, "_Toy", say_toy)
    assert read(_Toy()) == ("fail", "value 0.7 against 0.5") and read(_Toy(), level=0.9).status == "pass"
    with pytest.raises(Exception, match="no reading of"):
        read(np.zeros(1))


def test_baseline_and_calibration_read_the_same_everywhere():
    """The table audit's checks (issue 48): each status they can give, read alike in part, page and file."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB

    from fitaudit.baseline import baseline_check, compare_with_baselines
    from fitaudit.calibration import calibration_check

    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.4, stratify=y, random_state=0)
    stump = DecisionTreeClassifier(max_depth=1, random_state=0).fit(X_train, y_train)
    truth = np.array([0, 1, 1, 0, 1, 0, 1, 1, 0, 1])
    seen = set()
    for result in (compare_with_baselines(stump, X_test, y_test, X_train=X_train, y_train=y_train),
                   compare_with_baselines(stump, X_test, y_test),
                   baseline_check(truth, np.array([0, 1, 1, 0, 1, 1, 1, 1, 1, 1]), majority_label=1)):
        part = part_from_result("baseline", "first", "Is the model better than a simple baseline?", result)
        seen.add(_everywhere(result, part)[0])
    bayes = GaussianNB().fit(X_train, y_train)
    for probabilities in (bayes.predict_proba(X_test), bayes.predict_proba(X_test)[:30]):
        result = calibration_check(y_test[:len(probabilities)], probabilities, n_boot=200)
        part = part_from_result("calibration", "first", "Are the model's probabilities right?", result)
        seen.add(_everywhere(result, part)[0])
    assert seen == {"pass", "fail", "inconclusive"}
