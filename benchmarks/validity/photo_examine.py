"""The image examination of an audit on real photographs: an ordinary CNN and two planted weaknesses (issue 50).

On the photo world (:mod:`benchmarks.validity.photo_world`: 32 px grey
crops of eight of scikit-image's photographs, 1,600 training crops from the
top halves, 800 unseen crops from the bottom halves; a new world per seed),
three small CNNs (:func:`benchmarks.validity.photo_world.cnn`,
30 epochs of Adam) are examined as ``fitaudit audit`` examines image data
(:func:`fitaudit.auditing.parts.run_image_examination`: 12 correctly
classified unseen crops, the per-factor screen, the BO examiner, T = 30,
32 random reference queries per crop, the default space):

* ``ordinary``: the usual augmentation (random crops +-3 px, horizontal
  flips, brightness +-0.1, contrast x 0.8-1.2; :func:`photo_space.augment`).
  Wanted: not ``foreign_space``, and a decided verdict: a pass, or a fail
  whose headline rule the random queries confirm.
* ``brightness``: the ordinary CNN trained, besides, on random draws of
  the default space (:class:`fitaudit.data.transforms.ImageTransformGenerator`)
  with brightness in [-0.1, 0] and its brightness jitter in [-0.3, 0]:
  robust to the rest, never shown a brighter image. Wanted: a headline
  rule that names brightness.
* ``rotation``: the same with rotation fixed at 0 (and the usual
  brightness jitter): robust to the rest, never rotated. Wanted: a
  headline rule that names rotation.

Every (seed, model) is one line of ``results/photo_examine.jsonl`` (a rerun
skips the lines already there); the table is printed from the file and
written to ``results/photo_examine.txt``.

Run: ``OMP_NUM_THREADS=1 nice python benchmarks/validity/photo_examine.py [--seeds 10]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from photo_space import EPOCHS, SIZE, augment, predict  # noqa: E402
from photo_world import cnn, fit, photo_world  # noqa: E402

MODELS = ("ordinary", "brightness", "rotation")
RESULTS = Path(__file__).resolve().parent / "results"


def train(kind: str, x: np.ndarray, y: np.ndarray, epochs: int, seed: int):
    """The CNN of ``kind`` (module docstring)."""
    import torch

    from fitaudit.data.transforms import ImageTransformGenerator

    planted = {"rotation": {"rotation": 0.0}, "brightness": {"brightness": (-0.1, 0.0)}}.get(kind)
    warp = (
        ImageTransformGenerator(x, y, random_state=seed, factors=planted) if planted is not None else None
    )
    torch.manual_seed(seed)
    net = cnn(int(y.max()) + 1)
    rng = np.random.default_rng(seed)
    brightness = (-0.3, 0.0) if kind == "brightness" else (-0.1, 0.1)

    def batch(rows: np.ndarray) -> np.ndarray:
        drawn = x[rows] if warp is None else warp.generate(rows, warp.factor_space.sample(len(rows), random_state=rng))
        return augment(rng, np.asarray(drawn, dtype=np.float32), brightness=brightness)

    return fit(net, y, batch, epochs=epochs, rng=rng)


def examine_one(net, x: np.ndarray, y: np.ndarray, seed: int, steps: int) -> dict:
    """The audit's image examination of ``net`` on the unseen crops, and what it says."""
    from fitaudit.auditing.parts import IMAGE_INSTANCES, run_image_examination
    from fitaudit.data.dataset import Dataset
    from fitaudit.examine.decision import EXAMINE_TOLERANCE

    with tempfile.TemporaryDirectory() as folder:
        part = run_image_examination(
            net,
            "photo",
            data=Dataset(x, y, "unseen crops"),
            steps=steps,
            instances=IMAGE_INSTANCES,
            tolerance=EXAMINE_TOLERANCE,
            random_state=seed,
            n_jobs=1,
            folder=Path(folder),
            progress=False,
            keep_queries=False,
        )
    result = part.result
    verdict = result.verdict()
    headline = result.weakness.headline if result.weakness is not None else None
    check = result.space_check
    alone = {row["factor"]: round(row["accuracy"], 3) for row in check["factors_alone"]}
    return {
        "status": verdict.status,
        "reason": verdict.reason,
        "headline": headline["text"] if headline else None,
        "headline_factors": sorted({c[0] for c in headline["conditions"]}) if headline else [],
        "average": verdict.numbers["average_accuracy"],
        "worst": verdict.numbers["worst_case_accuracy"],
        "random_drop": round(check["drop"], 3),
        "alone": alone,
        "left_out": [row["factor"] for row in check["factors_alone"] if row["left_out"]],
        "far_alone": {
            row["factor"]: round(row["far_accuracy"], 3) for row in check["factors_alone"]
        },
    }


def run(seed: int, kind: str, epochs: int, steps: int) -> dict:
    start = time.perf_counter()
    world = photo_world(SIZE, rgb=False, seed=seed, n_train=1600, n_unseen=800)
    net = train(kind, world.train, world.train_labels, epochs, seed)
    clean = float(np.mean(predict(net, world.unseen) == world.unseen_labels))
    out = examine_one(net, world.unseen, world.unseen_labels, seed, steps)
    return {
        "seed": seed,
        "model": kind,
        "epochs": epochs,
        "steps": steps,
        "clean_accuracy": round(clean, 3),
        **out,
        "seconds": round(time.perf_counter() - start, 1),
    }


def wanted(row: dict) -> bool:
    """The model's wanted answer (module docstring)."""
    if row["model"] == "ordinary":
        return row["reason"] != "foreign_space" and (
            row["status"] == "pass" or row["headline"] is not None
        )
    return row["model"] in row["headline_factors"]


def table(rows: list[dict]) -> str:
    lines = [
        "Image examination as the audit runs it, on the photo world (32 px grey, 8 classes, 1,600 training "
        "crops, 12 examined unseen crops, BO T = 30, default space with the per-factor screen)",
        "",
        "| model | seeds | wanted answer | met | not foreign_space | verdicts | headline factors |",
        "|---|---|---|---|---|---|---|",
    ]
    want = {
        "ordinary": "decided (pass, or a confirmed headline), not foreign_space",
        "brightness": "headline names brightness",
        "rotation": "headline names rotation",
    }
    for kind in MODELS:
        mine = [r for r in rows if r["model"] == kind]
        if not mine:
            continue
        verdicts: dict[str, int] = {}
        named: dict[str, int] = {}
        for r in mine:
            verdicts[f"{r['status']} ({r['reason']})"] = (
                verdicts.get(f"{r['status']} ({r['reason']})", 0) + 1
            )
            key = ", ".join(r["headline_factors"]) or "none"
            named[key] = named.get(key, 0) + 1
        lines.append(
            f"| {kind} | {len(mine)} | {want[kind]} | {sum(map(wanted, mine))}/{len(mine)} | "
            f"{sum(r['reason'] != 'foreign_space' for r in mine)}/{len(mine)} | "
            + "; ".join(f"{k} {v}" for k, v in sorted(verdicts.items()))
            + " | "
            + "; ".join(f"{k} {v}" for k, v in sorted(named.items()))
            + " |"
        )
    lines += [
        "",
        "Per run: clean accuracy on the 800 unseen crops; all factors at once: the drop of the examined "
        "crops under the random reference queries; the factor costing most alone (per-factor screen).",
    ]
    for r in rows:
        worst = min(r["alone"].items(), key=lambda kv: kv[1]) if r["alone"] else ("-", 0)
        lines.append(
            f"- seed {r['seed']} {r['model']}: clean {r['clean_accuracy']:.3f}; {r['status']} ({r['reason']}), "
            f"worst case {r['worst']:.2f} vs average {r['average']:.2f}; all at once drop {r['random_drop']:.2f}; "
            f"alone at worst {worst[0]} {worst[1]:.2f}; left out {', '.join(r['left_out']) or 'none'}; "
            f"headline {r['headline'] or 'none'} ({r['seconds']:.0f} s)"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--out", default=str(RESULTS / "photo_examine.jsonl"))
    args = parser.parse_args()
    out = Path(args.out)
    done = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    have = {(r["seed"], r["model"]) for r in done}
    for seed in range(args.seeds):
        for kind in args.models.split(","):
            if (seed, kind) in have:
                continue
            row = run(seed, kind, args.epochs, args.steps)
            with out.open("a") as f:
                f.write(json.dumps(row) + "\n")
            done.append(row)
            print(json.dumps(row), flush=True)
    text = table(sorted(done, key=lambda r: (MODELS.index(r["model"]), r["seed"])))
    print(text)
    out.with_suffix(".txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
