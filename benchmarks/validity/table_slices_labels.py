"""The weak-slice search and the label problems on real tables: false fails, power, peers, speed.

Printed, in order:

1. **False fails on clean splits** of 9 real tables that ship with packages
   (scikit-learn's breast_cancer, wine, digits and iris; palmerpenguins;
   vega_datasets' cars and seattle-weather; statsmodels' star98 and anes96),
   ``--splits`` 60/40 stratified splits each, two honest models (a scaled
   logistic regression with one-hot categories, and histogram gradient
   boosting): how often ``slices`` and ``labels`` fail. A real model's errors
   do concentrate where the classes overlap, and real labels do hold errors,
   so a fail here is not always false; the level of each is 5%.
2. **Calibration by simulation**: errors that fall regardless of the columns
   (10% of rows, 10 numeric and 2 category columns) at n = 200, 1,000,
   10,000: the slice check's fail rate (at most 5% by its construction); and
   the label check's on labels drawn from the model's own probabilities (the
   world of 3b's label share: a fail there is false).
3. **Power**: the smallest planted gap detected in 80% of the draws for a
   slice of 10% of the rows (``f0`` above its 90th percentile, accuracy 0.9
   elsewhere; detected: a fail named by ``f0``), and the smallest share of
   changed labels detected in 80% of the draws (3 classes, a logistic
   regression on ``make_classification``), at n = 200, 1,000, 10,000; beside
   them the gap a slice of ``min_rows`` rows is seen at (``detectable``).
4. **Side by side** on the same cases: fitaudit, deepchecks'
   WeakSegmentsPerformance and ConflictingLabels (installed for this
   benchmark only: deepchecks 0.19.1 needs numpy < 2 and scikit-learn < 1.6,
   so this section runs in a virtual environment of its own, see below) and
   cleanlab's ``find_label_issues``:
   a gradient boosting model fit with flipped labels where ``worst area`` is
   in its top fifth (breast_cancer), the honest logistic model, and digits
   with 5% of the test labels changed and clean, with what each flags and
   its time; and deepchecks' false alarms on clean splits.
5. **Speed** at 100,000 rows x 30 columns.
6. **Do the fails on clean splits replicate?** 50/25/25 splits (fit, scored,
   held out) of the real tables, the honest logistic model: every slice the
   search names on the scored quarter is measured on the held-out quarter
   (one-sided Fisher exact test at 5%, and its gap). A fail whose slice is
   weaker on rows the search never saw is a weakness of the model, not a
   false discovery.
7. **Clean by construction on real columns**: the honest logistic model's
   errors on the scored rows of each clean split shuffled across the rows
   (the same number of errors, independent of every column: no slice is
   weaker in truth), on the real tables' own columns with their ties,
   categories and missing values: the share of fails, at most the level.

Run (about 15 minutes on two shared cores)::

    python benchmarks/validity/table_slices_labels.py --sections 1,2,3,5,6,7 \\
        > benchmarks/validity/results/table_slices_labels.txt
    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install "numpy<2" "scikit-learn<1.6" "pandas<2.3" \\
        "scipy<1.15" deepchecks==0.19.1 cleanlab==2.9.0 "setuptools<81" statsmodels
    PYTHONPATH=src /tmp/peers/bin/python benchmarks/validity/table_slices_labels.py --sections 4 \\
        >> benchmarks/validity/results/table_slices_labels.txt
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.compose import make_column_transformer
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_iris,
    load_wine,
    make_classification,
)
from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

from fitaudit.labels import find_label_problems
from fitaudit.slices import find_weak_slices
from fitaudit.slices.power import detectable_gap

NS = (200, 1000, 10_000)


def real_tables() -> dict[str, tuple[pd.DataFrame, np.ndarray]]:
    """Nine real tables as (features with their own names, integer labels)."""
    import palmerpenguins
    import statsmodels.api as sm
    import vega_datasets

    def codes(values: Any) -> np.ndarray:
        return np.unique(np.asarray(values).astype(str), return_inverse=True)[1]

    out: dict[str, tuple[pd.DataFrame, np.ndarray]] = {}
    for name, loader in (("breast_cancer", load_breast_cancer), ("wine", load_wine), ("digits", load_digits),
                         ("iris", load_iris)):
        data = loader(as_frame=True)
        out[name] = (data.data, data.target.to_numpy())
    penguins = palmerpenguins.load_penguins().dropna()
    out["penguins"] = (penguins.drop(columns=["species"]).reset_index(drop=True), codes(penguins["species"]))
    cars = vega_datasets.data.cars().dropna()
    out["cars"] = (cars.drop(columns=["Name", "Origin", "Year"]).reset_index(drop=True), codes(cars["Origin"]))
    weather = vega_datasets.data.seattle_weather()
    out["seattle-weather"] = (weather[["precipitation", "temp_max", "temp_min", "wind"]], codes(weather["weather"]))
    star = sm.datasets.star98.load_pandas().data
    passed = star["NABOVE"] / (star["NABOVE"] + star["NBELOW"])
    out["star98"] = (star.drop(columns=["NABOVE", "NBELOW"]), (passed > passed.median()).to_numpy(int))
    anes = sm.datasets.anes96.load_pandas().data
    out["anes96"] = (anes.drop(columns=["vote"]), codes(anes["vote"]))
    return out


def honest_models(frame: pd.DataFrame) -> dict[str, Any]:
    """A scaled logistic regression (categories one-hot) and histogram gradient boosting (categories ordinal)."""
    categories = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    numbers = [c for c in frame.columns if c not in categories]
    linear = make_column_transformer((StandardScaler(), numbers), (OneHotEncoder(handle_unknown="ignore"), categories))
    trees = make_column_transformer(("passthrough", numbers),
                                    (OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1), categories))
    return {"logistic": make_pipeline(linear, LogisticRegression(max_iter=3000)),
            "HGB": make_pipeline(trees, HistGradientBoostingClassifier(max_iter=100, random_state=0))}


def clean_splits(splits: int) -> None:
    print("## 1. False fails on clean splits (60/40 stratified; level 5% each)\n")
    print(f"{'table':16} {'n scored':>8} {'model':9} {'slices fail':>12} {'labels fail':>12} {'flagged labels':>15}")
    total = {"slices": 0, "labels": 0, "runs": 0, "inconclusive": 0}
    for table, (frame, y) in real_tables().items():
        for name in ("logistic", "HGB"):
            fails = {"slices": 0, "labels": 0}
            flagged, named = [], []
            for seed in range(splits):
                x_train, x_test, y_train, y_test = train_test_split(frame, y, test_size=0.4, stratify=y,
                                                                    random_state=seed)
                model = honest_models(frame)[name].fit(x_train, y_train)
                slices = find_weak_slices(x_test, y_test, model.predict(x_test))
                fails["slices"] += slices.verdict().failed
                if slices.groups:
                    g = slices.groups[0]
                    named.append(f"{g['text']}: {g['accuracy']:.2f} on {g['rows']} vs {g['rest_accuracy']:.2f}")
                labels = find_label_problems(x_test, y_test, model.predict_proba(x_test))
                fails["labels"] += labels.verdict().failed
                total["inconclusive"] += labels.verdict().status == "inconclusive"
                flagged.append(labels.n_flagged)
            total["slices"] += fails["slices"]
            total["labels"] += fails["labels"]
            total["runs"] += splits
            print(f"{table:16} {len(y_test):>8} {name:9} {fails['slices']:>7} of {splits:<2} "
                  f"{fails['labels']:>7} of {splits:<2} {np.mean(flagged):>10.1f} mean"
                  + (f"   e.g. {named[0]}" if named else ""))
    print(f"\nall: slices fail {total['slices']} of {total['runs']} ({total['slices'] / total['runs']:.1%}), "
          f"labels fail {total['labels']} of {total['runs']} ({total['labels'] / total['runs']:.1%}; inconclusive "
          f"{total['inconclusive']}: flags the model's own uncertainty explains)\n")


def synthetic(n: int, rng: np.random.Generator) -> pd.DataFrame:
    frame = pd.DataFrame(rng.normal(size=(n, 10)), columns=[f"f{i}" for i in range(10)])
    frame["c0"] = rng.choice(["a", "b", "c", "d"], n)
    frame["c1"] = rng.choice(["u", "v", "w", "x"], n)
    return frame


def simulated_null(reps: dict[int, int]) -> None:
    print("## 2. Calibration by simulation (errors regardless of the columns, 10% of rows)\n")
    rng = np.random.default_rng(0)
    for n in NS:
        fails = 0
        for _ in range(reps[n]):
            frame = synthetic(n, rng)
            wrong = (rng.random(n) < 0.1).astype(int)
            fails += find_weak_slices(frame, np.zeros(n, int), wrong).verdict().failed
        print(f"n = {n:>6,}: slices fail {fails} of {reps[n]} ({fails / reps[n]:.1%})")
    print("\nThe label check on labels drawn from the model's own probabilities (3 classes, the world of 3b: "
          "every label is what the probabilities say, so a fail is false)\n")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from table_checks_clean import drawn

    x, _, model = label_world()
    for n in NS:
        fails = 0
        for _ in range(reps[n]):
            probabilities = model.predict_proba(x[rng.choice(np.arange(2000, len(x)), n, replace=False)])
            fails += find_label_problems(None, drawn(rng, probabilities), probabilities).verdict().failed
        print(f"n = {n:>6,}: labels fail {fails} of {reps[n]} ({fails / reps[n]:.1%})")
    print()


def slice_power(reps: dict[int, int]) -> None:
    print("## 3a. Power: a planted slice of 10% of the rows (f0 above its 90th percentile; accuracy 0.9 elsewhere)\n")
    rng = np.random.default_rng(1)
    gaps = (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    for n in NS:
        found = None
        rates = []
        for gap in gaps:
            hits = 0
            for _ in range(reps[n]):
                frame = synthetic(n, rng)
                inside = (frame["f0"] > frame["f0"].quantile(0.9)).to_numpy()
                wrong = rng.random(n) < np.where(inside, 0.1 + gap, 0.1)
                result = find_weak_slices(frame, np.zeros(n, int), wrong.astype(int))
                first = result.groups[0] if result.groups else None
                hits += first is not None and any(t.startswith("f0 ") for t in [first["text"], *first["same_rows"]])
            rates.append(hits / reps[n])
            if found is None and hits >= 0.8 * reps[n]:
                found = gap
                break
        seen = detectable_gap(n, 20, 0.9, 0.025 / 500, 0.05)
        shown = ", ".join(f"{g:g}: {r:.0%}" for g, r in zip(gaps, rates))
        print(f"n = {n:>6,}: smallest gap detected in 80% of {reps[n]} draws: {found} (detected: {shown}); "
              f"a slice of 20 rows is seen from a gap of {seen if seen is None else round(seen, 3)} "
              "(80% power, 500 single slices)")
    print()


def label_world() -> tuple[np.ndarray, np.ndarray, Any]:
    """3 classes from 10 columns, a logistic regression fit on the first 2,000 rows (the rest to score)."""
    x, y = make_classification(n_samples=2000 + max(NS), n_features=10, n_informative=6, n_classes=3,
                               class_sep=1.5, random_state=0)
    return x, y, LogisticRegression(max_iter=2000).fit(x[:2000], y[:2000])


def label_power(reps: dict[int, int]) -> None:
    print("## 3b. Power: a planted share of changed labels (3 classes, logistic regression, accuracy about 0.9)\n")
    rng = np.random.default_rng(2)
    shares = (0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2)
    x, y, model = label_world()
    for n in NS:
        found, rates = None, []
        for share in shares:
            hits = 0
            for _ in range(reps[n]):
                rows = rng.choice(np.arange(2000, 2000 + max(NS)), n, replace=False)
                labels = y[rows].copy()
                changed = rng.choice(n, max(1, int(round(share * n))), replace=False)
                labels[changed] = (labels[changed] + rng.integers(1, 3, len(changed))) % 3
                hits += find_label_problems(None, labels, model.predict_proba(x[rows])).verdict().failed
            rates.append(hits / reps[n])
            if hits >= 0.8 * reps[n]:
                found = share
                break
        shown = ", ".join(f"{s:g}: {r:.0%}" for s, r in zip(shares, rates))
        print(f"n = {n:>6,}: smallest changed share detected in 80% of {reps[n]} draws: {found} (detected: {shown})")
    print()


def _deepchecks() -> Any:
    """deepchecks' tabular checks and its version, or None (said) where it does not import."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import deepchecks.tabular as tabular
            import deepchecks.tabular.checks as checks
        return tabular, checks, __import__("deepchecks").__version__
    except Exception as exc:  # an install that does not import here is reported, not fatal
        print(f"(deepchecks does not import here: {type(exc).__name__}: {exc})\n")
        return None


def _weak_segments(dc: Any, x_test, y_test, model) -> tuple[str, float]:
    """deepchecks' WeakSegmentsPerformance with its default condition on the scored rows: what it names."""
    tabular, checks, _ = dc
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            test = tabular.Dataset(x_test.assign(target=y_test), label="target", cat_features=[])
            result = checks.WeakSegmentsPerformance().add_condition_segments_relative_performance_greater_than() \
                .run(test, model=model)  # a single-dataset check: the scored rows
    except Exception as exc:  # deepchecks gives up on some models: said as its answer
        return f"no answer ({type(exc).__name__}: {str(exc)[:90]})", time.perf_counter() - start
    seconds = time.perf_counter() - start
    segments = result.value["weak_segments_list"]
    condition = "passes" if result.passed_conditions() else "fails"
    if len(segments) == 0:
        return f"condition {condition}; no segment", seconds
    top = segments.iloc[0]
    where = " and ".join(f"{top[f'Feature{i}']} in {top[f'Feature{i} Range']}" for i in (1, 2)
                         if isinstance(top.get(f"Feature{i}"), str) and top[f"Feature{i}"])
    ties = int(np.sum(np.isclose(segments["Accuracy Score"].to_numpy(float), float(top["Accuracy Score"]))))
    return (f"condition {condition} (average accuracy {result.value['avg_score']:.3f}); {len(segments)} segments, "
            f"the first {where}: {len(top['Samples in Segment'])} rows, accuracy {float(top['Accuracy Score']):.3f} "
            f"({ties} segments tie at it)"), seconds


def _conflicts(dc: Any, x_test, y_test) -> tuple[str, float]:
    tabular, checks, _ = dc
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            data = tabular.Dataset(x_test.assign(target=y_test), label="target", cat_features=[])
            result = checks.ConflictingLabels().run(data)
    except Exception as exc:  # said as its answer
        return f"no answer ({type(exc).__name__}: {str(exc)[:90]})", time.perf_counter() - start
    value = result.value
    share = value.get("percent_of_conflicting_samples", value.get("percent")) if isinstance(value, dict) else value
    return f"{float(share):.1%} of rows conflict", time.perf_counter() - start


def side_by_side(clean: int) -> None:
    from cleanlab.filter import find_label_issues

    print("## 4. Side by side on the same cases\n")
    dc = _deepchecks()
    if dc is not None:
        print(f"(deepchecks {dc[2]})\n")
    data = load_breast_cancer(as_frame=True)
    x_train, x_test, y_train, y_test = train_test_split(data.data, data.target.to_numpy(), test_size=0.4,
                                                        stratify=data.target, random_state=0)
    cut = x_train["worst area"].quantile(0.8)
    top_fifth = (x_train["worst area"] > cut).to_numpy()
    planted_rows = (x_test["worst area"] > cut).to_numpy()
    planted = GradientBoostingClassifier(random_state=0).fit(x_train, np.where(top_fifth, 1 - y_train, y_train))
    honest = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(x_train, y_train)
    for case, model in (("breast_cancer, planted slice (worst area in its top fifth)", planted),
                        ("breast_cancer, honest logistic model", honest)):
        predicted = model.predict(x_test)
        print(f"### {case}: accuracy {np.mean(predicted == y_test):.3f} on {len(y_test)} rows; "
              f"{planted_rows.sum()} rows with worst area > {cut:,.0f}, accuracy there "
              f"{np.mean(predicted[planted_rows] == y_test[planted_rows]):.3f}")
        start = time.perf_counter()
        slices = find_weak_slices(x_test, y_test, predicted)
        seconds = time.perf_counter() - start
        first = slices.groups[0] if slices.groups else None
        named = f"{first['text']} ({first['accuracy']:.3f} on {first['rows']} rows; same rows: " \
                f"{', '.join(first['same_rows'][:3])})" if first else "no weak slice"
        print(f"- fitaudit slices: {slices.verdict().status}: {named}; {slices.n_groups} distinct group(s) "
              f"[{seconds:.2f} s]")
        probabilities = model.predict_proba(x_test)
        start = time.perf_counter()
        issues = find_label_issues(y_test, probabilities, n_jobs=1)
        seconds = time.perf_counter() - start
        print(f"- cleanlab find_label_issues: {issues.sum()} rows called label errors, {issues[planted_rows].sum()} "
              f"of them in the planted slice [{seconds:.2f} s]")
        labels = find_label_problems(x_test, y_test, probabilities)
        print(f"- fitaudit labels: {labels.verdict().status}: {labels.n_flagged} flagged (corrected accuracy "
              f"{labels.corrected_accuracy:.3f} vs interval {labels.low:.3f}-{labels.high:.3f})")
        if dc is not None:
            text, seconds = _weak_segments(dc, x_test, y_test, model)
            print(f"- deepchecks WeakSegmentsPerformance: {text} [{seconds:.1f} s]")
        print()
    x, y = load_digits(return_X_y=True, as_frame=True)
    x_train, x_test, y_train, y_test = train_test_split(x, y.to_numpy(), test_size=0.4, stratify=y, random_state=0)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(x_train, y_train)
    probabilities = model.predict_proba(x_test)
    rng = np.random.default_rng(0)
    changed = rng.choice(len(y_test), int(round(0.05 * len(y_test))), replace=False)
    noisy = y_test.copy()
    noisy[changed] = (noisy[changed] + rng.integers(1, 10, len(changed))) % 10
    truth = np.zeros(len(y_test), dtype=bool)
    truth[changed] = True
    for case, labels_given in (("digits, 5% of the test labels changed", noisy), ("digits, clean", y_test)):
        print(f"### {case}: {truth.sum() if labels_given is noisy else 0} of {len(y_test)} labels changed")
        start = time.perf_counter()
        ours = find_label_problems(x_test, labels_given, probabilities)
        seconds = time.perf_counter() - start
        mask = np.zeros(len(y_test), dtype=bool)
        mask[ours.flagged] = True
        start = time.perf_counter()
        theirs = find_label_issues(labels_given, probabilities, n_jobs=1)
        their_seconds = time.perf_counter() - start
        for name, flagged, spent in (("fitaudit labels", mask, seconds), ("cleanlab find_label_issues", theirs,
                                                                          their_seconds)):
            line = f"- {name}: {flagged.sum()} flagged"
            if labels_given is noisy:
                hit = (flagged & truth).sum()
                line += f", recall {hit / truth.sum():.3f}, precision {hit / max(flagged.sum(), 1):.3f}"
            print(line + f" [{spent:.2f} s]")
        print(f"  fitaudit's verdict: {ours.verdict().status} (corrected accuracy {ours.corrected_accuracy:.3f} "
              f"vs interval {ours.low:.3f}-{ours.high:.3f})")
        if dc is not None:
            text, seconds = _conflicts(dc, x_test, labels_given)
            print(f"- deepchecks ConflictingLabels: {text} [{seconds:.1f} s]")
        print()
    if dc is not None:
        print(f"### deepchecks WeakSegmentsPerformance's default condition on {clean} clean splits (honest logistic)")
        for table, loader in (("breast_cancer", load_breast_cancer), ("wine", load_wine)):
            data = loader(as_frame=True)
            fails = ours_fails = unanswered = 0
            spent = 0.0
            for seed in range(clean):
                x_train, x_test, y_train, y_test = train_test_split(
                    data.data, data.target.to_numpy(), test_size=0.4, stratify=data.target, random_state=seed)
                model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(x_train, y_train)
                text, seconds = _weak_segments(dc, x_test, y_test, model)
                fails += text.startswith("condition fails")
                unanswered += text.startswith("no answer")
                spent += seconds
                ours_fails += find_weak_slices(x_test, y_test, model.predict(x_test)).verdict().failed
            print(f"- {table}: deepchecks fails {fails} of {clean}, no answer on {unanswered} [{spent / clean:.1f} s "
                  f"each]; fitaudit slices fail {ours_fails} of {clean}")
        print()


def speed() -> None:
    print("## 5. Speed at 100,000 rows x 30 columns (one process)\n")
    rng = np.random.default_rng(3)
    n = 100_000
    frame = pd.DataFrame(rng.normal(size=(n, 30)), columns=[f"f{i}" for i in range(30)])
    y = (frame["f0"] + frame["f1"] + rng.normal(size=n) > 0).astype(int).to_numpy()
    model = LogisticRegression(max_iter=1000).fit(frame[:20_000], y[:20_000])
    start = time.perf_counter()
    predicted = model.predict(frame)
    probabilities = model.predict_proba(frame)
    predict = time.perf_counter() - start
    start = time.perf_counter()
    slices = find_weak_slices(frame, y, predicted)
    slice_seconds = time.perf_counter() - start
    start = time.perf_counter()
    labels = find_label_problems(frame, y, probabilities)
    label_seconds = time.perf_counter() - start
    print(f"find_weak_slices: {slice_seconds:.2f} s ({slices.n_tried:,} slices tried, {slices.verdict().status}); "
          f"find_label_problems: {label_seconds:.2f} s ({labels.n_flagged:,} flagged, {labels.verdict().status}); "
          f"the model's predictions and probabilities: {predict:.2f} s\n")


def _rows_of(frame: pd.DataFrame, conditions: list[list[Any]]) -> np.ndarray:
    """The rows of ``frame`` a slice's conditions hold for."""
    inside = np.ones(len(frame), dtype=bool)
    for column, op, value in conditions:
        values = frame[column]
        inside &= (values.isna() if op == "is missing" else values <= value if op == "<=" else values > value
                   if op == ">" else values == value).to_numpy()
    return inside


def replication(splits: int) -> None:
    from fitaudit.slices.search import fisher_greater

    print("## 6. Do the fails on clean splits replicate? (50/25/25 splits, honest logistic model)\n")
    print(f"{'table':16} {'fails':>6} {'weaker on held-out rows (p < 0.05)':>36} {'median gap: scored, held out':>30}")
    for table, (frame, y) in real_tables().items():
        fails = replicated = 0
        gaps: list[tuple[float, float]] = []
        for seed in range(splits):
            x_fit, x_rest, y_fit, y_rest = train_test_split(frame, y, test_size=0.5, stratify=y, random_state=seed)
            x_scored, x_held, y_scored, y_held = train_test_split(x_rest, y_rest, test_size=0.5, stratify=y_rest,
                                                                  random_state=seed)
            model = honest_models(frame)["logistic"].fit(x_fit, y_fit)
            result = find_weak_slices(x_scored, y_scored, model.predict(x_scored))
            if not result.groups:
                continue
            fails += 1
            group = result.groups[0]
            wrong = model.predict(x_held) != y_held
            inside = _rows_of(x_held.reset_index(drop=True), group["conditions"])
            if 0 < inside.sum() < len(inside):
                p = fisher_greater(np.array([wrong[inside].sum()]), np.array([inside.sum()]), wrong.sum(),
                                   len(wrong))[0]
                held_gap = (1 - wrong[~inside].mean()) - (1 - wrong[inside].mean())
                replicated += p < 0.05
                gaps.append((group["gap"], held_gap))
        shown = (f"{np.median([g[0] for g in gaps]):.2f}, {np.median([g[1] for g in gaps]):.2f}" if gaps else "-")
        print(f"{table:16} {fails:>3} of {splits:<2} {replicated:>28} of {fails:<3} {shown:>30}")
    print()


def permuted_null(splits: int) -> None:
    from fitaudit.stats.intervals import binomial_interval

    print("## 7. Clean by construction on the real tables' columns: the honest logistic model's errors on the scored "
          "rows (60/40 splits) shuffled across the rows (as many errors, independent of every column), share failed "
          "(level 5%)\n")
    fails = runs = 0
    cells = []
    for table, (frame, y) in real_tables().items():
        rng = np.random.default_rng(7)
        failed = 0
        for seed in range(splits):
            x_train, x_test, y_train, y_test = train_test_split(frame, y, test_size=0.4, stratify=y,
                                                                random_state=seed)
            wrong = honest_models(frame)["logistic"].fit(x_train, y_train).predict(x_test) != y_test
            failed += find_weak_slices(x_test, np.zeros(len(y_test), int), rng.permutation(wrong).astype(int)) \
                .verdict().failed
        fails, runs = fails + failed, runs + splits
        cells.append(f"{table} {failed}/{splits}")
    bound = binomial_interval(fails, runs, confidence_level=0.9).high
    print(", ".join(cells))
    print(f"all: {fails} of {runs} ({fails / runs:.1%}; one-sided 95% Clopper-Pearson upper bound {bound:.3f})\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=20, help="clean splits per table and model")
    parser.add_argument("--sections", default="1,2,3,4,5,6,7", help="which sections to run (comma-separated)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: few splits and draws")
    args = parser.parse_args()
    splits = 2 if args.quick else args.splits
    reps = {200: 4, 1000: 3, 10_000: 2} if args.quick else {200: 200, 1000: 100, 10_000: 20}
    power_reps = {200: 4, 1000: 3, 10_000: 2} if args.quick else {200: 20, 1000: 20, 10_000: 10}
    warnings.simplefilter("ignore")
    sections = {int(part) for part in args.sections.split(",")}
    start = time.perf_counter()
    if 1 in sections:
        clean_splits(splits)
    if 2 in sections:
        simulated_null(reps)
    if 3 in sections:
        slice_power(power_reps)
        label_power(power_reps)
    if 4 in sections:
        side_by_side(2 if args.quick else 5)
    if 5 in sections:
        speed()
    if 6 in sections:
        replication(splits)
    if 7 in sections:
        permuted_null(splits)
    print(f"(ran {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
