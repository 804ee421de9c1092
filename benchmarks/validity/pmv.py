"""Validity of PMV's verdict on real tables: learners whose answer is known.

Perturbed model validation (Zhang et al. 2019) reads a learner's |k_S|; the
verdict (:func:`fitaudit.pmv.decision.pmv_verdict`) must never call a learner
"a good fit" when it has learnt nothing, and must never fail a learner only
because it memorises its training labels (forests and boosting do, and still
generalise). On 70% training splits of five bundled real tables
(scikit-learn's breast cancer, wine, iris and digits; statsmodels' ``fair``
survey, 1,500 rows) and 3 split seeds, each learner of a known kind is scored
and its verdict counted:

* ``constant``: the majority-class and the stratified-random predictors
  (learn nothing): never ``pass``;
* ``underfit``: a depth-1 stump on the multi-class tables (it can name at
  most two of the classes): never ``pass``;
* ``regularised``: a heavily regularised logistic regression (C = 1e-4):
  reported (on standardised features its predictions keep the ranking of
  the classes, so it is not always an underfit: its held-out accuracy says);
* ``memoriser``: an unbounded tree, 1-nearest-neighbour, a random forest and
  gradient boosting (training accuracy 1; held-out accuracy printed beside):
  never ``fail`` (PMV cannot tell whether they generalise: ``inconclusive``);
* ``fit``: a scaled logistic regression and an RBF SVM: reported (their
  verdict depends on the table's noise).

Run: ``python benchmarks/validity/pmv.py > benchmarks/validity/results/pmv.txt``
(a few minutes on one core; the script prints every run and the table, and
writes no file itself).
"""

from __future__ import annotations

import time
import warnings
from collections import Counter, defaultdict

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

from fitaudit.pmv import pmv_score

SEEDS = 3

#: kind -> learner name -> (estimator, tables it applies to or None for all)
LEARNERS = {
    "constant": {
        "majority class": (DummyClassifier(strategy="most_frequent"), None),
        "stratified random": (DummyClassifier(strategy="stratified", random_state=0), None),
    },
    "underfit": {
        "stump (multi-class)": (DecisionTreeClassifier(max_depth=1, random_state=0), ("wine", "iris", "digits")),
    },
    "regularised": {
        "logistic C=1e-4": (make_pipeline(StandardScaler(), LogisticRegression(C=1e-4, max_iter=2000)), None),
    },
    "memoriser": {
        "unbounded tree": (DecisionTreeClassifier(random_state=0), None),
        "1-nearest neighbour": (make_pipeline(StandardScaler(), KNeighborsClassifier(n_neighbors=1)), None),
        "random forest": (RandomForestClassifier(n_estimators=100, random_state=0), None),
        "gradient boosting": (HistGradientBoostingClassifier(random_state=0), None),
    },
    "fit": {
        "logistic": (make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)), None),
        "RBF SVM": (make_pipeline(StandardScaler(), SVC()), None),
    },
}

#: the verdicts a kind must never get
NEVER = {"constant": "pass", "underfit": "pass", "memoriser": "fail"}


def tables() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    import statsmodels.api as sm

    fair = sm.datasets.fair.load_pandas().data
    rows = np.random.default_rng(0).permutation(len(fair))[:1500]
    return {
        "breast_cancer": load_breast_cancer(return_X_y=True),
        "wine": load_wine(return_X_y=True),
        "iris": load_iris(return_X_y=True),
        "digits": load_digits(return_X_y=True),
        "fair": (fair.drop(columns=["affairs"]).to_numpy(float)[rows],
                 (fair["affairs"].to_numpy()[rows] > 0).astype(int)),
    }


def main() -> None:
    warnings.filterwarnings("ignore")
    start = time.perf_counter()
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    held_out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for table, (x, y) in tables().items():
        for seed in range(SEEDS):
            x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.3, random_state=seed, stratify=y)
            for kind, learners in LEARNERS.items():
                for name, (estimator, only) in learners.items():
                    if only is not None and table not in only:
                        continue
                    result = pmv_score(estimator, x_train, y_train, random_state=seed)
                    verdict = result.verdict()
                    counts[kind, name][verdict.status] += 1
                    held_out[kind, name].append(float(estimator.fit(x_train, y_train).score(x_test, y_test)))
                    print(f"{table:14s} seed {seed} {name:20s} |k_S| {result.statistic:.3f} "
                          f"(majority-class learner {result.baseline_statistic:.3f}) -> {verdict.status} "
                          f"({verdict.reason})", flush=True)
    print()
    print(f"PMV verdicts on 70% splits of 5 bundled tables x {SEEDS} seeds ({time.perf_counter() - start:.0f} s)")
    print()
    print("| kind | learner | runs | pass | fail | inconclusive | must never | held-out accuracy (mean) |")
    print("|---|---|---|---|---|---|---|---|")
    wrong = 0
    for (kind, name), count in counts.items():
        never = NEVER.get(kind)
        wrong += count[never] if never else 0
        print(f"| {kind} | {name} | {sum(count.values())} | {count['pass']} | {count['fail']} | "
              f"{count['inconclusive']} | {never or '-'} | {np.mean(held_out[kind, name]):.3f} |")
    print()
    print(f"verdicts a learner's kind must never get: {wrong}")


if __name__ == "__main__":
    main()
