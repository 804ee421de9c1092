"""Can the overfitting test see a CNN trained with random-crop augmentation? Shifts beyond the augmentation.

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 3 and 5: the pairwise
test on T_i = L(f, g(X_i)) h_g(g(X_i)) - L(f, X_i) with the translational
AEG (strongest variant), its importance weight ``h_g = 1 / (1 + n(x))``
valid under (G3). A model trained on random crops of up to ``a`` pixels has
seen its training images at every shift the AEG makes when ``eps <= a``, so
those shifts cannot reveal it (issue 50: such a CNN passed on its own
training crops). The AEG's only parameter the augmentation does not fix is
``eps``: shifts of ``a + 1`` pixels and more were never seen, and the
pipeline allows them where the canvas has ``P >= 3 eps`` spare pixels a
side (the weight looks that far). This benchmark measures whether they do
reveal the augmented CNN.

World: scikit-learn's two bundled photographs (``load_sample_images``:
china and flower, 427 x 640, grey), each cut in four quadrants, one class
each (eight classes). Canvases of ``32 + 2 P`` pixels (P = 12) are cut at
random places, training canvases from the top half of each quadrant,
unseen ones from its bottom half (G3 holds: crops of larger scenes); the
images are their centre 32-pixel crops. Per seed, two CNNs
(``shapes_alexnet``, width 12, Adam at :data:`LEARNING_RATE`, :data:`EPOCHS`
epochs, batch 64, batch-norm statistics recomputed over the centre crops at
the end) are trained on the same :data:`N_TRAIN` training canvases:

* ``plain``: on the centre crops;
* ``augmented``: on a crop at a random offset of up to ``a`` = :data:`AUGMENT`
  pixels per axis and a random horizontal flip, drawn anew for every image
  at every epoch (the usual augmentation, as ``RandomCrop(32, padding=a)``
  and ``RandomHorizontalFlip`` draw it).

Then the test (strongest AEG, delta 0.05, with its G3 check) runs at eps
in :data:`EPS` on the training canvases (``fail`` is the dependence caught)
and on :data:`N_TRAIN` unseen canvases (``fail`` is a false alarm). The table
gives, per model and eps, the training and unseen error, how many of the
seeds' training samples were rejected and how many unseen ones, and the
median p-value on the training samples.

Resumable: every (seed, model) run is saved in
``results/overfit_augmented/<seed>-<model>.json`` and read back on a rerun.
The table is printed and written to ``results/overfit_augmented.txt``.

Run: ``python benchmarks/validity/overfit_augmented.py [--seeds 3] [--quick]``
(``--quick``: 5 epochs on 160 canvases, a smoke run that saves nothing).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from photo_world import canvases as photo_canvases  # noqa: E402
from photo_world import fit, random_crops  # noqa: E402

RESULTS = Path(__file__).parent / "results"
CROP, MARGIN, AUGMENT = 32, 12, 2
EPS = (1, 2, 3, 4)
N_TRAIN, EPOCHS, DELTA, LEARNING_RATE = 200, 150, 0.05, 3e-3


def regions() -> list[np.ndarray]:
    """The eight classes: the quadrants of scikit-learn's two sample photos, grey (luma) in [0, 1]."""
    from sklearn.datasets import load_sample_images

    found = []
    for photo in load_sample_images().images:
        grey = photo.astype(np.float64) @ np.array([0.299, 0.587, 0.114]) / 255.0
        rows, cols = grey.shape[0] // 2, grey.shape[1] // 2
        found += [grey[r * rows : (r + 1) * rows, c * cols : (c + 1) * cols] for r in (0, 1) for c in (0, 1)]
    return found


def canvases(n: int, half: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` grey canvases (n, 3, 56, 56) in [0, 1] (8-bit values) from the top (0) or bottom (1) halves
    (:func:`photo_world.canvases` of the :func:`regions`)."""
    return photo_canvases([region[..., None] for region in regions()], n, half, seed, CROP + 2 * MARGIN, channels=3)


def train(x: np.ndarray, y: np.ndarray, *, augmented: bool, epochs: int, seed: int) -> Any:
    """``shapes_alexnet`` (width 12) trained on the centre crops, or on random crops of up to AUGMENT px and flips
    (:func:`photo_world.random_crops`); its batch-norm statistics are then recomputed over the centre crops, as
    fitaudit's trainer does."""
    import torch

    from fitaudit.models.architectures import build_architecture
    from fitaudit.models.training import recalibrate_batch_norm

    torch.manual_seed(seed)
    net = build_architecture({"architecture": "shapes_alexnet", "kwargs": {"n_classes": 8, "width": 12}})
    rng = np.random.default_rng([seed, 7])
    fit(net, y, lambda rows: random_crops(x, rows, rng, margin=MARGIN, crop=CROP, augment=AUGMENT if augmented else 0),
        epochs=epochs, rng=rng, lr=LEARNING_RATE)
    recalibrate_batch_norm(net, np.ascontiguousarray(x[:, :, MARGIN : MARGIN + CROP, MARGIN : MARGIN + CROP]))
    return net


def one_run(seed: int, kind: str, quick: bool) -> dict[str, Any]:
    """Train one model, run the test at every eps on its training canvases and on unseen ones."""
    from fitaudit.models import as_classifier
    from fitaudit.overfit import TranslationAEG, overfit_test

    start = time.perf_counter()
    n = 160 if quick else N_TRAIN
    (x_train, y_train), (x_unseen, y_unseen) = canvases(n, 0, seed), canvases(n, 1, seed)
    model = as_classifier(train(x_train, y_train, augmented=kind == "augmented", epochs=5 if quick else EPOCHS,
                                seed=seed), n_classes=8)
    row: dict[str, Any] = {"seed": seed, "model": kind, "n": n, "tests": []}
    for eps in EPS:
        aeg = TranslationAEG(eps=eps, margin=MARGIN)
        for sample, (x, y) in (("train", (x_train, y_train)), ("unseen", (x_unseen, y_unseen))):
            result = overfit_test(model, x, y, aeg, delta=DELTA)
            verdict = result.verdict(role="train" if sample == "train" else "test")
            row["tests"].append({"eps": eps, "sample": sample, "pvalue": result.pvalue, "reject": bool(result.reject),
                                 "risk_plain": result.risk_plain, "risk_adversarial": result.risk_adversarial,
                                 "success": result.n_success / len(y), "status": verdict.status,
                                 "reason": verdict.reason,
                                 "g3_pvalue": None if result.g3 is None else result.g3.pvalue})
    row["seconds"] = time.perf_counter() - start
    return row


def table(rows: list[dict[str, Any]]) -> str:
    """Per model and eps: errors, rejections of the training and unseen samples, median training p-value."""
    head = (f"{'model':<10} {'eps':>3} {'train err':>9} {'unseen err':>10} {'train rejected':>14} "
            f"{'unseen rejected':>15} {'median train p':>14} {'train T':>7} {'train shifted':>13} {'G3 void':>7}")
    lines = [head, "-" * len(head)]
    for kind in ("plain", "augmented"):
        for eps in EPS:
            tests = [t for r in rows if r["model"] == kind for t in r["tests"] if t["eps"] == eps]
            if not tests:
                continue
            tr = [t for t in tests if t["sample"] == "train"]
            un = [t for t in tests if t["sample"] == "unseen"]
            void = sum(t["reason"] == "g3_violated" for t in tests)
            lines.append(
                f"{kind:<10} {eps:>3} {np.mean([t['risk_plain'] for t in tr]):>9.3f} "
                f"{np.mean([t['risk_plain'] for t in un]):>10.3f} "
                f"{sum(t['reject'] for t in tr):>9}/{len(tr):<4} {sum(t['reject'] for t in un):>10}/{len(un):<4} "
                f"{np.median([t['pvalue'] for t in tr]):>14.2g} "
                f"{np.mean([t['risk_adversarial'] - t['risk_plain'] for t in tr]):>7.3f} "
                f"{np.mean([t['success'] for t in tr]):>13.3f} "
                f"{void:>3}/{len(tests):<3}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="training seeds (default 3)")
    parser.add_argument("--quick", action="store_true", help="a smoke run (5 epochs, 160 canvases, nothing saved)")
    args = parser.parse_args()
    folder = RESULTS / "overfit_augmented"
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in range(args.seeds):
        for kind in ("plain", "augmented"):
            path = folder / f"{seed}-{kind}.json"
            if path.exists() and not args.quick:
                rows.append(json.loads(path.read_text()))
                continue
            row = one_run(seed, kind, args.quick)
            print(f"seed {seed} {kind}: {row['seconds']:.0f} s", flush=True)
            rows.append(row)
            if not args.quick:
                path.write_text(json.dumps(row, indent=1))
    text = (f"Overfitting test (strongest AEG, margin {MARGIN}, delta {DELTA}, G3 check) on CNNs trained "
            f"{EPOCHS} epochs on {N_TRAIN} grey crops of two photos ({CROP} px): plain (centre crops) and augmented (random "
            f"crops of up to {AUGMENT} px and horizontal flips); {len({r['seed'] for r in rows})} seeds.\n"
            "train/unseen err: error on the training / unseen canvases (mean over seeds); rejected: samples the "
            "test rejects (training: the dependence caught; unseen: false alarms); train T: R_g - R_S on the training "
            "canvases (mean); train shifted: share of the "
            "training images a shift turns from right to wrong; G3 void: tests stopped by the G3 check.\n\n"
            + table(rows))
    print(text)
    if not args.quick:
        (RESULTS / "overfit_augmented.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
