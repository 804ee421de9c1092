"""Validity of the baseline and calibration checks (issue 48): false fails on clean data, and power.

1. Clean splits of 11 real tables that ship with packages (scikit-learn's
   breast_cancer, wine, digits, iris; palmerpenguins; vega_datasets'
   seattle-weather and cars; statsmodels' modechoice, grunfeld, anes96,
   star98: the loaders of ``pmv_heldout.py``) x seeds, 60/40 stratified:
   the share of fails of each check for ordinary models. Real tables have no
   known answer: a fail here is false only where the model is in truth as
   accurate as the reference (calibrated). For the baseline the model is the
   reference learner up to its regularisation (C = 0.3), usually as accurate,
   and a gradient boosting model beside it; for calibration the scaled
   logistic regression and the gradient boosting model. Where one fails
   every seed the effect is real (grunfeld: C = 0.3 scores 0.52-0.57 against
   0.60-0.68 for C = 1, and the logistic regression's mean confidence is
   0.36-0.38 at accuracy 0.60-0.68, ECE 0.24-0.30, on seeds 0-2); the
   level itself is checked where the truth is known, in part 2.
2. Simulation, where the truth is known: perfectly calibrated probabilities
   (labels drawn from them) at n = 200, 1,000, 10,000 at tolerance 0 and the
   default; model and reference equally accurate for the baseline.
3. Power: the smallest planted effect failed in at least 80% of draws at
   n = 200, 1,000, 10,000: a gap g in accuracy to the reference (wins at 5%
   of the rows, losses at 5% + g) for the baseline; temperature-scaled
   probabilities softmax(z / T) of labels drawn from softmax(z) for
   calibration (T < 1: overconfident), sized by their true ECE.
4. Side by side on the same cases: the issue's breast_cancer models (a
   depth-1 tree, Gaussian naive Bayes, the honest scaled logistic
   regression) and part 1's first 3 seeds of clean splits (the reference
   learner at C = 0.3 and gradient boosting for the baseline, the honest
   logistic regression for calibration), with time: fitaudit's checks (part
   ``4``) and deepchecks' SimpleModelComparison, at its default strategy
   (the most frequent class) and its tree strategy, each with its gain
   condition (0.1), and CalibrationScore, which has no condition (part
   ``d``). deepchecks 0.19.1 needs scikit-learn < 1.6 and numpy < 2, fitaudit
   scikit-learn >= 1.6, so part ``d`` runs in an environment of its own
   (this script imports fitaudit only inside the parts that use it).

Run from the repository root (with ``OMP_NUM_THREADS=1`` on a shared machine:
gradient boosting's OpenMP threads slow it many times over at a high load;
parts ``1234t`` about 5 minutes on two shared cores at load 12, part ``d``
about 2)::

    python benchmarks/validity/table_baseline_calibration.py \\
        --out benchmarks/validity/results/table_baseline_calibration.txt
    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install "numpy<2" "scikit-learn<1.6" "pandas<2.3" \\
        "scipy<1.15" deepchecks==0.19.1 "setuptools<81" statsmodels palmerpenguins vega_datasets
    /tmp/peers/bin/python benchmarks/validity/table_baseline_calibration.py --parts d \\
        >> benchmarks/validity/results/table_baseline_calibration.txt

(``--quick``: fewer seeds and draws in parts 1-3, nothing saved).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.tree import DecisionTreeClassifier

sys.path.insert(0, str(Path(__file__).parent))
from table_cases import scaled_logistic, tables  # noqa: E402

SIZES = (200, 1000, 10000)
GAPS = (0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2)
TEMPERATURES = (1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5, 0.4)


def clean_splits(seeds: int, out: list[str]) -> None:
    from fitaudit.baseline import compare_with_baselines
    from fitaudit.calibration import calibration_check

    out.append("## 1. Clean splits of real tables (60/40 stratified), share failed")
    out.append("")
    out.append(f"{'table':<16}{'rows':>6}  {'baseline C=0.3':>14}  {'baseline HGB':>12}  {'calib. logistic':>15}"
               f"  {'calib. HGB':>10}")
    totals = {"near": [0, 0], "hgb": [0, 0], "cal": [0, 0], "cal_hgb": [0, 0]}
    for name, (X, y) in tables().items():
        counts = {key: 0 for key in totals}
        for seed in range(seeds):
            X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.4, stratify=y, random_state=seed)
            near = scaled_logistic(0.3).fit(X_train, y_train)
            hgb = HistGradientBoostingClassifier(random_state=seed).fit(X_train, y_train)
            honest = scaled_logistic().fit(X_train, y_train)
            counts["near"] += compare_with_baselines(near, X_test, y_test, X_train=X_train,
                                                     y_train=y_train).verdict().failed
            counts["hgb"] += compare_with_baselines(hgb, X_test, y_test, X_train=X_train,
                                                    y_train=y_train).verdict().failed
            counts["cal"] += calibration_check(y_test, honest.predict_proba(X_test), random_state=seed).verdict().failed
            counts["cal_hgb"] += calibration_check(y_test, hgb.predict_proba(X_test),
                                                   random_state=seed).verdict().failed
        for key in totals:
            totals[key][0] += counts[key]
            totals[key][1] += seeds
        out.append(f"{name:<16}{len(y):>6}  {counts['near']:>10}/{seeds:<3}  {counts['hgb']:>8}/{seeds:<3}  "
                   f"{counts['cal']:>11}/{seeds:<3}  {counts['cal_hgb']:>6}/{seeds:<3}")
    out.append(f"{'all':<22}  {totals['near'][0]:>10}/{totals['near'][1]:<3}  {totals['hgb'][0]:>8}/"
               f"{totals['hgb'][1]:<3}  {totals['cal'][0]:>11}/{totals['cal'][1]:<3}  {totals['cal_hgb'][0]:>6}/"
               f"{totals['cal_hgb'][1]:<3}")
    out.append("")


def _calibrated_draw(rng: np.random.Generator, n: int, temperature: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    logits = rng.normal(0, 2, (n, 3))
    truth = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1)
    shown = np.exp(logits / temperature)
    return y, shown / shown.sum(axis=1, keepdims=True)


def true_ece(temperature: float, n: int = 400_000, n_bins: int = 15) -> float:
    """The binned top-label ECE of softmax(z / T) against labels drawn from softmax(z), on many rows (no noise)."""
    from fitaudit.calibration.result import bin_index

    rng = np.random.default_rng(12345)
    logits = rng.normal(0, 2, (n, 3))
    truth = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    shown = np.exp(logits / temperature)
    shown /= shown.sum(axis=1, keepdims=True)
    top = shown.argmax(axis=1)
    confidence, right = shown.max(axis=1), truth[np.arange(n), top]  # P(correct) of the shown top label
    bins = bin_index(confidence, n_bins)
    gap = np.bincount(bins, weights=right - confidence, minlength=n_bins)
    return float(np.abs(gap).sum() / n)


def simulation(draws: int, out: list[str]) -> None:
    from fitaudit.calibration import calibration_check

    rng = np.random.default_rng(0)
    out.append("## 2. Simulation: perfectly calibrated probabilities (3 classes), share failed (level 0.05)")
    out.append("")
    for tolerance in (0.0, 0.02):
        cells = []
        for n in SIZES:
            reps = draws if n < 10000 else max(20, draws // 4)
            fails = sum(calibration_check(*_calibrated_draw(rng, n), tolerance=tolerance,
                                          random_state=r).verdict().failed for r in range(reps))
            cells.append(f"n={n}: {fails}/{reps}")
        out.append(f"tolerance {tolerance:g}: " + ", ".join(cells))
    out.append("")
    out.append("Baseline: model and reference equally accurate (wins and losses each at 5% of rows), share failed")
    cells = []
    for n in SIZES:
        fails = 0
        for _ in range(draws * 5):
            wins, losses, _rest = rng.multinomial(n, [0.05, 0.05, 0.9])
            fails += _planted_baseline(n, wins, losses).verdict().reason == "worse_than_reference"
        cells.append(f"n={n}: {fails}/{draws * 5}")
    out.append(", ".join(cells))
    out.append("")


def _planted_baseline(n: int, wins: int, losses: int) -> Any:
    """A result with the given discordant counts: the model right and the reference wrong on `wins` rows, ..."""
    from fitaudit.baseline import baseline_check

    truth = np.zeros(n, int)
    own = np.zeros(n, int)
    other = np.zeros(n, int)
    own[wins:wins + losses] = 1
    other[:wins] = 1
    return baseline_check(truth, own, reference_pred=other, majority_label=1)


def power(draws: int, out: list[str]) -> None:
    from fitaudit.calibration import calibration_check

    rng = np.random.default_rng(1)
    out.append("## 3. Power: share failed per planted effect; the smallest failed in >= 80% of draws")
    out.append("")
    out.append("Baseline, planted loss g to the reference (wins at 5% of rows, losses at 5% + g):")
    for n in SIZES:
        shares = []
        for gap in GAPS:
            fails = sum(_planted_baseline(n, *rng.multinomial(n, [0.05, 0.05 + gap, 0.9 - gap])[:2]).verdict()
                        .reason == "worse_than_reference" for _ in range(draws))
            shares.append((gap, fails / draws))
        smallest = next((g for g, s in shares if s >= 0.8), None)
        row = "  ".join(f"{g:g}:{s:.2f}" for g, s in shares)
        out.append(f"n={n:>6}: smallest gap {smallest if smallest is not None else '> 0.2'}   ({row})")
    out.append("")
    out.append("Calibration, temperature T (true ECE in brackets), share failed:")
    eces = {t: true_ece(t) for t in TEMPERATURES}
    for n in SIZES:
        reps = draws // 2 if n < 10000 else max(20, draws // 8)
        shares = []
        for temperature in TEMPERATURES:
            fails = sum(calibration_check(*_calibrated_draw(rng, n, temperature), random_state=r).verdict().failed
                        for r in range(reps))
            shares.append((temperature, fails / reps))
        smallest = next((eces[t] for t, s in shares if s >= 0.8), None)
        row = "  ".join(f"T={t:g}[{eces[t]:.3f}]:{s:.2f}" for t, s in shares)
        shown = f"{smallest:.3f}" if smallest is not None else f"> {eces[TEMPERATURES[-1]]:.3f}"
        out.append(f"n={n:>6}: smallest ECE detected {shown}   ({row})")
    out.append("")


def timing(out: list[str]) -> None:
    from fitaudit.baseline import baseline_check
    from fitaudit.calibration import calibration_check

    rng = np.random.default_rng(2)
    out.append("## Time per check (one call, this machine)")
    for n in (1000, 10000, 100000):
        y, p = _calibrated_draw(rng, n)
        start = time.perf_counter()
        calibration_check(y, p)
        middle = time.perf_counter()
        baseline_check(y, p.argmax(axis=1), reference_pred=rng.integers(0, 3, n), majority_label=0).verdict()
        end = time.perf_counter()
        out.append(f"n={n:>6}: calibration {middle - start:.2f} s, baseline {end - middle:.3f} s")
    out.append("")


#: the clean splits of the side-by-side parts (seeds 0 .. PEER_SEEDS - 1 of part 1's 60/40 splits)
PEER_SEEDS = 3


def issue_cases() -> tuple[tuple[np.ndarray, ...], dict[str, Any]]:
    """The issue's breast_cancer split (60/40 stratified, seed 0) and its three models, unfitted."""
    X, y = load_breast_cancer(return_X_y=True)
    split = tuple(train_test_split(X, y, test_size=0.4, stratify=y, random_state=0))
    return split, {"stump": DecisionTreeClassifier(max_depth=1, random_state=0), "naive Bayes": GaussianNB(),
                   "honest logistic": scaled_logistic()}


def clean_cases(seeds: int) -> Iterator[tuple[str, int, tuple[np.ndarray, ...], dict[str, Any]]]:
    """Part 1's clean splits of the real tables, seeds 0 .. seeds - 1, with its two baseline models (the
    reference learner at C = 0.3, gradient boosting) and the honest logistic regression, fitted."""
    for name, (X, y) in tables().items():
        for seed in range(seeds):
            split = tuple(train_test_split(X, y, test_size=0.4, stratify=y, random_state=seed))
            X_train, _, y_train, _ = split
            models = {"C=0.3": scaled_logistic(0.3), "HGB": HistGradientBoostingClassifier(random_state=seed),
                      "logistic": scaled_logistic()}
            yield name, seed, split, {key: m.fit(X_train, y_train) for key, m in models.items()}


def side_by_side(out: list[str], seeds: int = PEER_SEEDS) -> None:
    """fitaudit's baseline and calibration checks on the issue's cases and on clean splits, with time (part ``d``
    runs deepchecks on the same cases, in an environment of its own)."""
    from fitaudit.baseline import compare_with_baselines
    from fitaudit.calibration import calibration_check

    (X_train, X_test, y_train, y_test), models = issue_cases()
    out.append("## 4. fitaudit on the issue's breast_cancer cases (60/40 stratified, seed 0)")
    for name, model in models.items():
        model.fit(X_train, y_train)
        start = time.perf_counter()
        base = compare_with_baselines(model, X_test, y_test, X_train=X_train, y_train=y_train).verdict()
        calibration = calibration_check(y_test, model.predict_proba(X_test)).verdict()
        out.append(f"{name:<16} baseline {base.status} ({base.reason}), calibration {calibration.status} "
                   f"({calibration.reason}, ECE {calibration.numbers['ece']:.3f}); both {time.perf_counter() - start:.2f} s")
    fails = {"baseline C=0.3": 0, "baseline HGB": 0, "calibration logistic": 0}
    runs, seconds = 0, 0.0
    for _, seed, (X_train, X_test, y_train, y_test), fitted in clean_cases(seeds):
        start = time.perf_counter()
        for key in ("C=0.3", "HGB"):
            fails[f"baseline {key}"] += compare_with_baselines(fitted[key], X_test, y_test, X_train=X_train,
                                                               y_train=y_train).verdict().failed
        fails["calibration logistic"] += calibration_check(y_test, fitted["logistic"].predict_proba(X_test),
                                                           random_state=seed).verdict().failed
        seconds += time.perf_counter() - start
        runs += 1
    if not runs:
        out.append("")
        return
    out.append(f"Clean splits ({len(tables())} tables x seeds 0-{seeds - 1}, part 1's first {seeds}): "
               + ", ".join(f"{key} fails {count}/{runs}" for key, count in fails.items())
               + f"; {seconds:.1f} s for the {3 * runs} checks")
    out.append("")


def deepchecks_side(out: list[str], seeds: int = PEER_SEEDS) -> None:
    """deepchecks' SimpleModelComparison (default strategy, the most frequent class, and its tree strategy, each
    with its gain condition at the default 0.1) and CalibrationScore on the cases of :func:`side_by_side`."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import deepchecks
            import sklearn
            from deepchecks.tabular import Dataset
            from deepchecks.tabular.checks import CalibrationScore, SimpleModelComparison
    except ImportError as exc:
        out.append(f"## d. deepchecks does not import here ({exc}): run this part in its own environment")
        return

    def run(check: Any, train: Any, test: Any, model: Any, both: bool = True) -> tuple[Any, float]:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = check.run(train, test, model) if both else check.run(test, model)
        return result, time.perf_counter() - start

    def datasets(split: tuple[np.ndarray, ...]) -> tuple[Any, Any]:
        X_train, X_test, y_train, y_test = split
        width = X_train.shape[1]
        return tuple(Dataset(np.column_stack([x, y]), label=width, cat_features=[])
                     for x, y in ((X_train, y_train), (X_test, y_test)))

    out.append(f"## d. deepchecks {deepchecks.__version__} on the same cases (its own environment: scikit-learn "
               f"{sklearn.__version__}, numpy {np.__version__}; deepchecks needs scikit-learn < 1.6)")
    split, models = issue_cases()
    train, test = datasets(split)
    for name, model in models.items():
        model.fit(split[0], split[2])
        cells = []
        for strategy in ("most_frequent", "tree"):
            result, seconds = run(SimpleModelComparison(strategy=strategy).add_condition_gain_greater_than(),
                                  train, test, model)
            cells.append(f"SimpleModelComparison({strategy}) {'passes' if result.passed_conditions() else 'fails'} "
                         f"({seconds:.2f} s)")
        result, seconds = run(CalibrationScore(), train, test, model, both=False)
        briers = ", ".join(f"{float(v):.3f}" for v in result.value.values())
        cells.append(f"CalibrationScore Brier {briers} per class, {len(result.conditions_results)} conditions "
                     f"({seconds:.2f} s)")
        out.append(f"{name:<16} " + "; ".join(cells))
    fails = {"most_frequent C=0.3": 0, "most_frequent HGB": 0, "tree C=0.3": 0, "tree HGB": 0}
    runs, seconds = 0, 0.0
    for _, _, split, fitted in clean_cases(seeds):
        train, test = datasets(split)
        for strategy in ("most_frequent", "tree"):
            for key in ("C=0.3", "HGB"):
                result, took = run(SimpleModelComparison(strategy=strategy).add_condition_gain_greater_than(),
                                   train, test, fitted[key])
                fails[f"{strategy} {key}"] += not result.passed_conditions()
                seconds += took
        runs += 1
    if not runs:
        out.append("")
        return
    out.append(f"Clean splits (the same {runs}): SimpleModelComparison "
               + ", ".join(f"{key} fails {count}/{runs}" for key, count in fails.items())
               + f"; {seconds:.1f} s for the {4 * runs} checks. CalibrationScore has no condition: it never fails "
               "(a plot and Brier scores), so it has no false alarm and no power.")
    out.append("")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--peer-seeds", type=int, default=PEER_SEEDS,
                        help="clean splits per table in parts 4 and d (0: the issue's cases only)")
    parser.add_argument("--parts", default="1234t", help="which parts, in order (d: deepchecks, its own environment)")
    args = parser.parse_args()
    seeds, draws = (2, 20) if args.quick else (10, 200)
    warnings.simplefilter("ignore", ConvergenceWarning)
    out = [f"# Baseline and calibration checks: validity (seeds {seeds}, draws {draws})", ""]
    steps = {"1": lambda: clean_splits(seeds, out), "2": lambda: simulation(draws, out),
             "3": lambda: power(draws, out), "4": lambda: side_by_side(out, args.peer_seeds),
             "d": lambda: deepchecks_side(out, args.peer_seeds),
             "t": lambda: timing(out)}
    for part in args.parts:
        start = time.perf_counter()
        steps[part]()
        print("\n".join(out), flush=True)
        out.append(f"(part {part}: {time.perf_counter() - start:.0f} s)")
        out.append("")
    if args.out is not None and not args.quick:
        args.out.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
