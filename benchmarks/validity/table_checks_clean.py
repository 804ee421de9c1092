"""Do the baseline, calibration and label checks fail clean models at most at their level on real tables?

``table_baseline_calibration.py`` and ``table_slices_labels.py`` count fails
on clean *splits* of real tables, where the truth is unknown: several fail far
above 5% (calibration of gradient boosting on 6 of 11 tables, the label check
of gradient boosting on cars, seattle-weather, anes96). A fail there is false
only where the model is in truth calibrated (its labels right, as accurate as
the reference). This benchmark separates the two, on the same 11 tables
(``table_cases.tables``) and the same two models (a scaled
logistic regression, histogram gradient boosting):

Both on 50/25/25 splits (fit, scored, held out), the models fitted once:

A. **Clean by construction** (the null each test is of, on real rows, real
   fitted models and their real probability shapes: ties, confidences near
   1, up to 10 classes): the model fitted on the 50% training split, and the
   other 50% relabelled with labels *drawn from the model's own
   probabilities*, independently row by row. The model is then calibrated on
   those rows and their labels are what its probabilities say, so a
   calibration or label fail is false; for the baseline, the model's and the
   reference's predictions are swapped on a random half of the rows (the two
   are then exchangeable: equally accurate), and a ``worse_than_reference``
   fail is false. Each must fail at most at its level (5%). (The logistic
   model is the reference learner itself, so its baseline columns are 0 by
   construction; gradient boosting's are the test.)
B. **Real labels, replicated**: every fail
   on the scored quarter is tested again on the held-out quarter, in the same
   direction at 5% (baseline: the one-sided exact McNemar test of a loss to
   the reference; calibration: the calibration check itself); a fail that
   replicates on rows the check never saw is a property of the model, not a
   false alarm. Label problems are properties of rows and do not replicate;
   their fails are set beside the calibration check of the same rows (the
   label check trusts the model's probabilities: an overconfident model
   makes honest labels look wrong).

Dependence between rows breaks every test here (each assumes independent
scored rows): modechoice is in long format (4 rows per traveller, exactly one
chosen) and grunfeld a panel (10 firms x 20 years, the label the firm), so
their real-label fails say little either way; design A draws its labels
independently and is unaffected.

Run from the repository root (resumable: each finished (table, seed) is kept in
``--state``, ``results/table_checks_clean.jsonl``, with a key of everything it
depends on: fitaudit's and this folder's code, the libraries' versions, the
table's rows; a stopped run resumes and a larger ``--seeds`` adds to the seeds
done; a split takes about 16 s on two shared cores at load 12, 35 minutes at
``--seeds 12``)::

    python benchmarks/validity/table_checks_clean.py \\
        --out benchmarks/validity/results/table_checks_clean.txt
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).parent))
from table_cases import scaled_logistic, tables  # noqa: E402

from fitaudit.baseline import baseline_check, fit_reference, majority_of  # noqa: E402
from fitaudit.calibration import calibration_check  # noqa: E402
from fitaudit.labels import find_label_problems  # noqa: E402
from fitaudit.stats.intervals import binomial_interval  # noqa: E402
from fitaudit.stats.paired import one_sided_pvalue  # noqa: E402

LEVEL = 0.05
MODELS = ("logistic", "HGB")


def model(name: str, seed: int) -> Any:
    return scaled_logistic() if name == "logistic" else HistGradientBoostingClassifier(random_state=seed)


def drawn(rng: np.random.Generator, probabilities: np.ndarray) -> np.ndarray:
    """One label per row drawn from its probabilities (the model's classes are 0..k-1)."""
    cumulative = np.cumsum(probabilities, axis=1)
    return np.minimum((rng.random(len(probabilities))[:, None] > cumulative).sum(axis=1), probabilities.shape[1] - 1)


def one_split(X: np.ndarray, y: np.ndarray, seed: int) -> tuple[dict[str, int], dict[str, list[int]]]:
    """Both designs on one 50/25/25 split (the models fitted once): A on the 50% not fitted on, relabelled;
    B on the scored quarter with its real labels, replicated on the held-out quarter."""
    rng = np.random.default_rng(1000 + seed)
    X_train, X_rest, y_train, y_rest = train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)
    X_test, X_held, y_test, y_held = train_test_split(X_rest, y_rest, test_size=0.5, stratify=y_rest,
                                                      random_state=seed)
    reference = fit_reference(X_train, y_train)
    majority = majority_of(y_train)
    a: dict[str, int] = {}
    b: dict[str, list[int]] = {}
    for name in MODELS:
        fitted = model(name, seed).fit(X_train, y_train)
        # A: labels drawn from the model's own probabilities (calibrated, labels right by construction)
        probabilities = fitted.predict_proba(X_rest)
        codes = drawn(rng, probabilities)
        a[f"calibration {name}"] = int(calibration_check(codes, probabilities, random_state=seed).verdict().failed)
        a[f"labels {name}"] = int(find_label_problems(X_rest, codes, probabilities).verdict().failed)
        predicted, rival = fitted.predict(X_rest), reference.predict(X_rest)
        swap = rng.random(len(y_rest)) < 0.5  # exchangeable: equally accurate in truth
        result = baseline_check(y_rest, np.where(swap, rival, predicted), reference_pred=np.where(swap, predicted, rival),
                                majority_label=majority)
        a[f"baseline {name}"] = int(result.verdict().reason == "worse_than_reference")
        # B: real labels on the scored quarter, the same test on the held-out quarter
        truth = {"test": np.searchsorted(fitted.classes_, y_test), "held": np.searchsorted(fitted.classes_, y_held)}
        base = baseline_check(y_test, fitted.predict(X_test), reference_pred=reference.predict(X_test),
                              majority_label=majority)
        worse = base.verdict().reason == "worse_than_reference"
        held = baseline_check(y_held, fitted.predict(X_held), reference_pred=reference.predict(X_held),
                              majority_label=majority)
        b[f"baseline {name}"] = [int(worse), int(worse and one_sided_pvalue(
            held.losses_vs_reference, held.wins_vs_reference) < LEVEL)]
        scored = calibration_check(truth["test"], fitted.predict_proba(X_test), random_state=seed).verdict()
        again = calibration_check(truth["held"], fitted.predict_proba(X_held), random_state=seed,
                                  level=2 * LEVEL).verdict()  # each of its two tests at 5%
        same = again.failed and (again.reason == scored.reason or "miscalibrated" in (again.reason, scored.reason))
        b[f"calibration {name}"] = [int(scored.failed), int(scored.failed and same)]
        labels = find_label_problems(X_test, truth["test"], fitted.predict_proba(X_test)).verdict()
        b[f"labels {name}"] = [int(labels.failed), int(labels.failed and scored.failed
                                                        and scored.reason == "overconfident")]
    return a, b


def loaded_code() -> list[Path]:
    """The source files this process has imported from fitaudit and from this folder (the scripts)."""
    import fitaudit

    package = Path(fitaudit.__file__).parent.resolve()
    here = Path(__file__).parent.resolve()
    files = {Path(m.__file__).resolve() for m in list(sys.modules.values()) if getattr(m, "__file__", None)}
    return sorted(f for f in files if f.is_relative_to(package) or f.parent == here)


def warm_up() -> None:
    """Both designs on two small synthetic tables (2 and 3 classes), results discarded: every module a run
    imports, the checks' lazy imports included, is then loaded and goes into the key."""
    from sklearn.datasets import make_classification

    for classes in (2, 3):
        X, y = make_classification(n_samples=160, n_features=5, n_informative=3, n_classes=classes, random_state=0)
        one_split(X, y, 0)


def run_key(tables_found: dict[str, tuple[np.ndarray, np.ndarray]], code: list[Path]) -> dict[str, str]:
    """What every run depends on besides its table and seed: the source files it imports (``code``: fitaudit's
    modules loaded after :func:`warm_up`, and the benchmark scripts loaded from this folder), the libraries'
    versions, and each table's rows and labels (a digest of the arrays). A cached run is reused only where all
    of it matches; :func:`main` refuses to keep a run that loaded a file outside ``code``."""
    import hashlib
    import importlib.metadata

    import fitaudit

    root = Path(fitaudit.__file__).parent.parent.resolve()
    here = Path(__file__).parent.resolve()
    digest = hashlib.sha256()
    for path in code:
        digest.update(str(path.relative_to(root if path.is_relative_to(root) else here)).encode()
                      + b"\0" + path.read_bytes())
    versions = ",".join(f"{lib}={importlib.metadata.version(lib)}" for lib in ("numpy", "scipy", "scikit-learn",
                                                                               "cleanlab"))
    key = {"code": digest.hexdigest()[:16], "versions": versions, "files": str(len(code))}
    for table, (X, y) in tables_found.items():
        key[table] = hashlib.sha256(np.ascontiguousarray(X, dtype=np.float64).tobytes()
                                    + np.asarray(y).astype(str).tobytes()).hexdigest()[:16]
    return key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=12, help="splits per table (seeds 0 .. seeds-1)")
    parser.add_argument("--state", type=Path, default=Path(__file__).parent / "results" / "table_checks_clean.jsonl",
                        help="the cache of finished runs, one (table, seed) a line; runs whose key matches are "
                             "skipped, so a stopped run resumes and more seeds add to the ones done")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--report-only", action="store_true",
                        help="report the cached runs with this key, running none (a partial table says how many)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    found = tables()
    warm_up()
    code = loaded_code()
    key = run_key(found, code)
    done: dict[tuple[str, int], dict[str, Any]] = {}
    if args.state.exists():
        for line in args.state.read_text().splitlines():
            row = json.loads(line)
            if row.get("key") == {name: key[name] for name in ("code", "versions", "files", row["table"])}:
                done[(row["table"], row["seed"])] = row
    print(f"{len(done)} runs cached in {args.state} with this key (code {key['code']} over {len(code)} files)",
          file=sys.stderr, flush=True)
    for seed in range(0 if args.report_only else args.seeds):  # seed by seed: a stopped run leaves whole rounds
        for table, (X, y) in found.items():
            if (table, seed) in done:
                continue
            start = time.perf_counter()
            a, b = one_split(X, y, seed)
            outside = sorted(set(loaded_code()) - set(code))
            if outside:
                raise RuntimeError(f"{table} seed {seed} loaded files the key does not cover: {outside}; "
                                   "make warm_up() load them")
            row = {"table": table, "seed": seed, "rows": len(y), "classes": int(np.unique(y).size), "a": a, "b": b,
                   "seconds": time.perf_counter() - start,
                   "key": {name: key[name] for name in ("code", "versions", "files", table)}}
            done[(table, seed)] = row
            with args.state.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
            print(f"{table} seed {seed}: {row['seconds']:.0f} s", file=sys.stderr, flush=True)
    lines = report([[done[(t, seed)] for seed in range(args.seeds) if (t, seed) in done] for t in found],
                   args.seeds, key)
    print("\n".join(lines))
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n")


def upper_bound(failed: int, runs: int) -> float:
    """The one-sided 95% Clopper-Pearson upper bound of a fail rate from ``failed`` of ``runs`` (the upper end of
    the two-sided 90% exact interval, :func:`fitaudit.stats.intervals.binomial_interval`)."""
    return binomial_interval(failed, runs, confidence_level=1 - 2 * LEVEL).high


def report(runs: list[list[dict[str, Any]]], seeds: int, key: dict[str, str]) -> list[str]:
    """The two tables of counts, from each table's runs (one per seed done; a table with none is left out), with
    each check's bound on its rate, and how many of the ``seeds`` x tables runs are done."""
    rows = [{"table": r[0]["table"], "rows": r[0]["rows"], "classes": r[0]["classes"], "runs": len(r),
             "a": {k: sum(run["a"][k] for run in r) for k in r[0]["a"]},
             "b": {k: [sum(run["b"][k][0] for run in r), sum(run["b"][k][1] for run in r)] for k in r[0]["b"]},
             "seconds": sum(run["seconds"] for run in r)} for r in runs if r]
    runs_done = sum(row["runs"] for row in rows)
    wanted = seeds * len(runs)
    keys = [f"{check} {name}" for check in ("baseline", "calibration", "labels") for name in MODELS]
    head = f"{'table':<16}{'rows':>6}{'k':>4}  " + "".join(f"{k:>18}" for k in keys)
    lines = [f"# {runs_done} of {wanted} runs done ({len(runs)} tables x seeds 0-{seeds - 1}"
             + ("" if runs_done == wanted else "; the counts below are of the runs done") + ")", "",
             "## A. Clean by construction, 50/25/25 splits: share failed (level 5%; labels drawn from "
             "the model's probabilities on the 50% not fitted on, baseline predictions swapped on half of them)", "",
             head]
    total = dict.fromkeys(keys, 0)
    for row in rows:
        lines.append(f"{row['table']:<16}{row['rows']:>6}{row['classes']:>4}  "
                     + "".join(f"{row['a'][k]:>13}/{row['runs']:<4}" for k in keys))
        for k in keys:
            total[k] += row["a"][k]
    lines.append(f"{'all':<26}" + "".join(f"{total[k]:>13}/{runs_done:<4}" for k in keys))
    lines.append(f"{'share':<26}" + "".join(f"{total[k] / runs_done:>17.3f} " for k in keys))
    lines.append(f"{'95% upper bound':<26}" + "".join(f"{upper_bound(total[k], runs_done):>17.3f} " for k in keys))
    lines.append(f"(95% upper bound: one-sided Clopper-Pearson bound of the false-alarm rate from the fails of the "
                 f"{runs_done} runs; the logistic baseline column is 0 by construction and bounds nothing)")
    lines += ["", "## B. Real labels: fails on the scored quarter, and how many replicate on the held-out "
              "quarter", "(baseline: a loss to the reference, one-sided exact McNemar p < 0.05 on the held-out "
              "rows; calibration: the check fails there too, same direction; labels: the calibration check of the "
              "same rows shows the model overconfident)", "", head]
    total_b = {k: [0, 0] for k in keys}
    for row in rows:
        lines.append(f"{row['table']:<16}{row['rows']:>6}{row['classes']:>4}  "
                     + "".join(f"{row['b'][k][0]:>9} ({row['b'][k][1]:>2})/{row['runs']:<3}" for k in keys))
        for k in keys:
            total_b[k][0] += row["b"][k][0]
            total_b[k][1] += row["b"][k][1]
    lines.append(f"{'all':<26}" + "".join(f"{total_b[k][0]:>9} ({total_b[k][1]:>2})/{runs_done:<3}" for k in keys))
    lines.append(f"{'not replicated':<26}" + "".join(f"{(total_b[k][0] - total_b[k][1]) / runs_done:>17.3f} "
                                                      for k in keys))
    lines.append(f"\n(ran {sum(r['seconds'] for r in rows):.0f} s in all, summed over the runs, some from the cache; "
                 f"key: code {key['code']} over {key['files']} files (the fitaudit modules and scripts of this "
                 f"folder a run imports), {key['versions']})")
    return lines


if __name__ == "__main__":
    main()
