"""The demo's agreement parts: a choice by the score strong enough for the agreement check to see, and its control.

The agreement check (Jiang et al., ICLR 2022, Eq. 1; docs/first-questions.md#do-independent-runs-agree)
sees a choice made on the scored labels only when it inflates the measured
accuracy by more than its detectable gain (about 0.05 at 800 test digits).
Picking the best of 40 runs that differ in their seed gains only 0.02-0.03
there, which no check can see at this n (the user guide says so); a choice
with many more degrees of freedom gains more. Here R runs of a small MLP on
scikit-learn's digits are assembled into one model *region by region*: the
inputs are cut into :data:`REGIONS` regions (k-means on the training
inputs, a few test digits each) and each region is predicted by the run
that is most accurate on that region's digits of the choosing data, a
search over R^160 assemblies. Chosen on the test labels, the assembly's
test accuracy is inflated well beyond its accuracy on fresh digits;
chosen on validation data, it is not.

The agreement of each assembly is measured against another run of the same
procedure: the assembly of R other runs chosen on validation data (Jiang et
al.'s estimate needs two runs of one training, and an assembly is more
accurate than any single run). Known answers (:func:`selection_known_answers`):
the check fails the assembly chosen on the test labels, whose gain over its
accuracy on fresh digits exceeds the check's detectable gain; it does not
fail the one chosen on validation data.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from fitaudit.auditing.first import INSTRUMENT
from fitaudit.auditing.parts import part_from_result
from fitaudit.auditing.result import AuditPart
from fitaudit.random import spawn_seeds

#: the runs: a small MLP's hidden layer and iterations (briefly trained: runs that disagree on 20-35% of the digits)
HIDDEN, ITERATIONS = (32,), 30
#: training and validation rows of the digits (the other 797 are the test digits)
SPLIT = (500, 500)
#: regions of the inputs each assembly chooses a run for (about 5 test digits each)
REGIONS = 160
#: the two parts, by what their assembly was chosen on
PART_IDS = {"test": "agreement-chosen-on-test", "validation": "agreement-chosen-on-validation"}
#: names of the chosen-on-test part's numbers: its accuracy on fresh digits and its selection gain
FRESH, GAIN = "accuracy on fresh digits (validation rows, not used for the choice)", "selection gain (test minus fresh)"


def assemble(correct: np.ndarray, regions: np.ndarray, n_regions: int) -> np.ndarray:
    """The run chosen for each region: the most accurate on the choosing data's inputs in it (run 0 where none).

    ``correct`` (R, m) says which of the m choosing inputs each of the R
    runs gets right; ``regions`` (m,) their regions. Ties go to the lower
    run index.
    """
    counts = np.zeros((n_regions, len(correct)))
    np.add.at(counts, regions, correct.T.astype(float))
    return np.argmax(counts, axis=1)


def assembled(predictions: np.ndarray, chosen: np.ndarray, regions: np.ndarray) -> np.ndarray:
    """An assembly's predictions: input i is predicted by run ``chosen[regions[i]]`` (``predictions``: (R, n))."""
    return predictions[chosen[regions], np.arange(predictions.shape[1])]


class RegionChoice:
    """Two pools of R runs (a small MLP on the digits, seeds differ) and the assemblies chosen from them.

    Built once, on first use: the parts (:attr:`parts`) for the
    assembly of the first pool chosen on the test labels and on validation
    data, each beside the second pool's assembly chosen on validation data.
    """

    def __init__(self, runs: int, random_state: int, progress: bool) -> None:
        self.runs, self.random_state, self.progress = runs, random_state, progress

    @functools.cached_property
    def parts(self) -> list[AuditPart]:
        import warnings

        from sklearn.cluster import KMeans
        from sklearn.datasets import load_digits
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPClassifier
        from tqdm.auto import tqdm

        from fitaudit.stats.agreement import agreement
        from fitaudit.stats.binomial import accuracy

        x, y = load_digits(return_X_y=True)
        x = x / 16.0
        split_seed, runs_seed, region_seed = spawn_seeds(self.random_state, 3)
        rows = np.random.default_rng(split_seed).permutation(len(y))
        n_train, n_validation = SPLIT
        train, validation, test = rows[:n_train], rows[n_train:n_train + n_validation], rows[n_train + n_validation:]
        on_test, on_validation = [], []
        for run_seed in tqdm(spawn_seeds(runs_seed, 2 * self.runs), desc="runs (digits MLP)",
                             disable=not self.progress, leave=False):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                net = MLPClassifier(HIDDEN, max_iter=ITERATIONS, random_state=run_seed).fit(x[train], y[train])
            on_test.append(net.predict(x[test]))
            on_validation.append(net.predict(x[validation]))
        tests, validations = np.array(on_test), np.array(on_validation)
        cut = KMeans(REGIONS, n_init=1, random_state=region_seed).fit(x[train])
        regions = {"test": cut.predict(x[test]), "validation": cut.predict(x[validation])}
        labels = {"test": y[test], "validation": y[validation]}
        pools = {"first": slice(0, self.runs), "other": slice(self.runs, 2 * self.runs)}

        def chosen(pool: str, on: str) -> np.ndarray:
            own = {"test": tests, "validation": validations}[on][pools[pool]]
            return assemble(own == labels[on], regions[on], REGIONS)

        other = assembled(tests[pools["other"]], chosen("other", "validation"), regions["test"])
        mean_accuracy = float(np.mean(tests[pools["first"]] == labels["test"]))
        parts = []
        for on, how in (("test", "on the test labels"), ("validation", "on validation data")):
            choice = chosen("first", on)
            predicted = assembled(tests[pools["first"]], choice, regions["test"])
            result = agreement(predicted, other, measured=accuracy(labels["test"], predicted))
            numbers: dict[str, Any] = {"agreement estimate": result.estimate,
                                       "measured accuracy": result.measured.accuracy if result.measured else None,
                                       "measured minus estimate": result.gap,
                                       "mean test accuracy of the runs": mean_accuracy}
            if on == "test":
                fresh = float(np.mean(assembled(validations[pools["first"]], choice, regions["validation"])
                                      == labels["validation"]))
                numbers.update({FRESH: fresh, GAIN: numbers["measured accuracy"] - fresh})
            parts.append(part_from_result(
                PART_IDS[on], INSTRUMENT, f"Agreement: {self.runs} runs assembled region by region, chosen {how}",
                result, numbers=numbers, settings={
                    "group": "selection", "runs": self.runs, "regions": REGIONS, "chosen_on": on,
                    "learner": f"MLPClassifier({HIDDEN}, max_iter={ITERATIONS}), seeds differ",
                    "other_run": f"the assembly of {self.runs} other runs, chosen on validation data",
                    "dataset": "load_digits", "random_state": self.random_state,
                    "rows": {"train": len(train), "validation": len(validation), "test": len(test)},
                    "group_title": f"{self.runs} runs of a small MLP on the digits, assembled into one model region "
                                   f"by region ({REGIONS} regions of the inputs): chosen on the test labels vs on "
                                   "validation data, each beside the same assembly of other runs"}))
        return parts

    def part(self, part_id: str) -> AuditPart:
        """The part named ``part_id`` (one of :data:`PART_IDS`' values)."""
        return next(part for part in self.parts if part.id == part_id)


def selection_known_answers(by_id: dict[str, AuditPart]) -> dict[str, dict[str, Any]]:
    """The two assemblies' known answers, from their results and numbers (again whenever a report is rebuilt).

    Chosen on the test labels: its selection gain (test accuracy minus its
    accuracy on fresh digits) is above the gain the check sees with 80%
    probability at this n, and the check fails it. Chosen on validation
    data: not above its agreement estimate beyond both intervals.
    ``{part id: {"text", "met"}}`` for the parts present with a result.
    """
    answers: dict[str, dict[str, Any]] = {}
    by_test, by_validation = by_id.get(PART_IDS["test"]), by_id.get(PART_IDS["validation"])
    if by_test is not None and by_test.result is not None:
        result: Any = by_test.result  # an AgreementResult
        verdict = result.verdict()
        gain, seen = by_test.numbers[GAIN], verdict.numbers["detectable_gain"]
        visible = seen is not None and gain > seen
        answers[by_test.id] = {
            "text": f"chosen on the test labels, its test accuracy is above its accuracy on fresh digits by {gain:.3f}, "
                    f"{'more' if visible else 'not more'} than the smallest gain the check sees at n = {result.n} "
                    f"({'n/a' if seen is None else f'{seen:.3f}'}): the check fails it",
            "met": bool(visible and verdict.status == "fail")}
    if by_validation is not None and by_validation.result is not None:
        honest: Any = by_validation.result
        answers[by_validation.id] = {
            "text": "chosen on validation data, its test accuracy is not above its agreement estimate beyond both "
                    "intervals", "met": not honest.measured_above()}
    return answers
