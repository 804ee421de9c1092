"""PMVSearchCV against GridSearchCV on held-out accuracy, over bundled real tables.

Zhang et al. (2019) select hyper-parameters by PMV's |k_S| on the whole
training sample, without a split. This benchmark asks how those choices fare
on data neither search saw: for each bundled table (scikit-learn's breast
cancer, wine, iris, digits; statsmodels' ``fair`` survey, 1,500 rows), each
learner with a grid running from most to least regularised (decision tree
depth, RBF SVM C, k nearest neighbours with k falling) and each split seed,
both searches run on the same 70% training split and their chosen models are
scored on the held-out 30%. It prints one row per run and then the counts:
runs where PMV chose a worse / equal / better model than 5-fold
cross-validation, the mean held-out accuracies, and where in the grid each
search chose (0 = most regularised end).

Run: ``python benchmarks/bench_pmv_vs_cv.py [--seeds 5]`` (about 10 minutes
on one core); results in ``benchmarks/results/pmv_vs_cv.txt``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

from fitaudit.pmv import PMVSearchCV


def tables() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The bundled tables, as (X, y) with integer labels."""
    import statsmodels.api as sm

    fair = sm.datasets.fair.load_pandas().data
    rows = np.random.default_rng(0).permutation(len(fair))[:1500]
    x_fair = fair.drop(columns=["affairs"]).to_numpy(float)[rows]
    y_fair = (fair["affairs"].to_numpy()[rows] > 0).astype(int)
    return {
        "breast_cancer": load_breast_cancer(return_X_y=True),
        "wine": load_wine(return_X_y=True),
        "iris": load_iris(return_X_y=True),
        "digits": load_digits(return_X_y=True),
        "fair": (x_fair, y_fair),
    }


#: learner, the grid's parameter, its values from the most to the least regularised
LEARNERS = {
    "tree": (DecisionTreeClassifier(random_state=0), "max_depth", [1, 2, 4, 8, None]),
    "svc_rbf": (make_pipeline(StandardScaler(), SVC()), "svc__C", [0.01, 0.1, 1.0, 10.0, 100.0]),
    "knn": (make_pipeline(StandardScaler(), KNeighborsClassifier()), "kneighborsclassifier__n_neighbors",
            [81, 27, 9, 3, 1]),
}


def run(seeds: int) -> list[dict[str, object]]:
    rows = []
    for table, (x, y) in tables().items():
        for learner, (estimator, key, values) in LEARNERS.items():
            grid = {key: values}
            for seed in range(seeds):
                x_train, x_test, y_train, y_test = train_test_split(
                    x, y, test_size=0.3, random_state=seed, stratify=y)
                pmv = PMVSearchCV(estimator, grid, random_state=seed).fit(x_train, y_train)
                cv = GridSearchCV(estimator, grid, cv=5).fit(x_train, y_train)
                row = {
                    "table": table, "learner": learner, "seed": seed,
                    "pmv_choice": values.index(pmv.best_params_[key]),
                    "cv_choice": values.index(cv.best_params_[key]),
                    "pmv_acc": float(pmv.score(x_test, y_test)),
                    "cv_acc": float(cv.score(x_test, y_test)),
                }
                rows.append(row)
                print(f"{table:14s} {learner:8s} seed {seed}: PMV chose #{row['pmv_choice']} "
                      f"(held-out {row['pmv_acc']:.3f}), CV chose #{row['cv_choice']} "
                      f"(held-out {row['cv_acc']:.3f})", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    start = time.perf_counter()
    rows = run(args.seeds)
    pmv = np.array([r["pmv_acc"] for r in rows])
    cv = np.array([r["cv_acc"] for r in rows])
    worse, better = int(np.sum(pmv < cv - 1e-12)), int(np.sum(pmv > cv + 1e-12))
    pmv_choice = np.array([r["pmv_choice"] for r in rows])
    cv_choice = np.array([r["cv_choice"] for r in rows])
    print()
    print(f"{len(rows)} runs ({args.seeds} split seeds x {len(LEARNERS)} learners x 5 tables), "
          f"{time.perf_counter() - start:.0f} s")
    print(f"held-out accuracy, PMVSearchCV vs GridSearchCV(cv=5): PMV worse in {worse}, equal in "
          f"{len(rows) - worse - better}, better in {better}; mean {pmv.mean():.3f} vs {cv.mean():.3f}")
    print(f"grid position chosen (0 = most regularised, 4 = least): PMV mean {pmv_choice.mean():.2f} "
          f"(at 0 in {int(np.sum(pmv_choice == 0))} runs), CV mean {cv_choice.mean():.2f} "
          f"(at 0 in {int(np.sum(cv_choice == 0))} runs); PMV more regularised than CV in "
          f"{int(np.sum(pmv_choice < cv_choice))} runs, less in {int(np.sum(pmv_choice > cv_choice))}")


if __name__ == "__main__":
    main()
