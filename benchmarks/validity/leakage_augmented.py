"""Leakage question on real photographs with the copies augmentation makes: found and paired per kind, edit named.

The world (:mod:`photo_world`) at a reduced size (``--train`` training and
``--unseen`` unseen crops, 10 planted twins of each kind: today's kinds and
the AUGMENTED ones, flips, rescales 0.8x-1.25x, rotations 3-10 degrees,
blur, contrast), searched by :func:`fitaudit.leakage.image_leakage` at its
default threshold twice: without the augmented edits (``augmented=False``,
the search before issue 49) and with them (the default). Per world: twins
found *and* paired with their source per kind, found ones whose pair names
the edit that made them (flip: ``horizontal flip``; rescale: ``rescaled``;
rotation: ``rotated``), clean unseen crops flagged, the calibration's null
(training images with a twin under some edit), the mirror share that
decides whether flips are searched, the verdict and the seconds.

Resumable: each world's numbers are kept as JSON in ``--out-dir``. Run:
``python benchmarks/validity/leakage_augmented.py`` (output in
``benchmarks/validity/results/leakage_augmented.txt``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from photo_world import AUGMENTED, KINDS, photo_world  # noqa: E402

from fitaudit.leakage import image_features, image_leakage  # noqa: E402

#: (size, rgb, seed) of every world measured
WORLDS = [(66, False, 0), (32, True, 0), (66, False, 1), (224, False, 0), (32, False, 0), (66, True, 0), (224, True, 0)]
#: every kind planted, in the order of the table
ALL_KINDS = KINDS + AUGMENTED
#: the words a pair's edit starts with when it names the edit that made a twin of this kind
NAMED = {"flip": "horizontal flip", "rescale": "rescaled", "rotation": "rotated"}


def run_world(size: int, rgb: bool, seed: int, n_train: int, n_unseen: int) -> dict[str, Any]:
    world = photo_world(size, rgb=rgb, seed=seed, n_train=n_train, n_unseen=n_unseen, per_kind=10, kinds=ALL_KINDS)
    offset = len(world.unseen)
    scored = image_features(np.concatenate([world.unseen, world.twins]))
    train = image_features(world.train)
    row: dict[str, Any] = {"size": size, "rgb": rgb, "seed": seed, "n_train": n_train, "n_clean": offset}
    for name, augmented in (("before", False), ("augmented", True)):
        start = time.perf_counter()
        result = image_leakage(scored, train, augmented=augmented)
        seconds = time.perf_counter() - start
        pairs = {int(s): (int(t), (result.near_edit or [])[i] if result.near_edit else "none")
                 for i, (s, t) in enumerate(zip(result.near_scored, result.near_train))}
        found, named = {}, {}
        for kind in ALL_KINDS:
            hits = [pairs[offset + int(i)] for i in np.flatnonzero(world.kind == kind)
                    if pairs.get(offset + int(i), (-1, ""))[0] == int(world.source[i])]
            found[kind] = len(hits)
            if kind in NAMED:
                named[kind] = sum(edit.startswith(NAMED[kind]) for _, edit in hits)
        verdict = result.verdict()
        row[name] = {"found": found, "named": named, "clean flagged": int(np.sum(result.near_scored < offset)),
                     "null": [result.null_near, result.n_calibration], "mirror share": result.mirror_share,
                     "edits": result.searched_edits, "verdict": f"{verdict.status} ({verdict.reason})",
                     "seconds": round(seconds, 1)}
    return row


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["Twins found and paired with their source at the default threshold, of 10 per kind; in brackets, of "
             "those found, how many name the edit that made them", "",
             f"{'world':<20}{'search':<11}" + "".join(f"{k:>11}" for k in ALL_KINDS)
             + f"{'clean':>10}{'null':>10}{'mirror':>8}{'s':>7}  verdict"]
    totals: dict[str, dict[str, int]] = {"before": {}, "augmented": {}}
    for r in rows:
        world = f"{r['size']} px {'RGB' if r['rgb'] else 'grey'} s{r['seed']}"
        for name in ("before", "augmented"):
            m = r[name]
            cells = "".join(f"{m['found'][k]:>4}/10" + (f"({m['named'][k]:>2})" if k in m["named"] else "    ")
                            for k in ALL_KINDS)
            share = "-" if m["mirror share"] is None else f"{m['mirror share']:.2f}"
            lines.append(f"{world:<20}{name:<11}" + cells + f"{m['clean flagged']:>6}/{r['n_clean']}"
                         + f"{m['null'][0]:>6}/{m['null'][1]}{share:>8}{m['seconds']:>7.0f}  {m['verdict']}")
            for k in ALL_KINDS:
                totals[name][k] = totals[name].get(k, 0) + m["found"][k]
            totals[name]["clean"] = totals[name].get("clean", 0) + m["clean flagged"]
    n = len(rows)
    for name in ("before", "augmented"):
        lines.append(f"{'all worlds':<20}{name:<11}" + "".join(f"{totals[name][k]:>4}/{10 * n:<2}    " for k in ALL_KINDS)
                     + f"{totals[name]['clean']:>6}/{sum(r['n_clean'] for r in rows)}")
    if rows:
        lines += ["", "edits searched (augmented): " + ", ".join(rows[0]["augmented"]["edits"] or [])]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=400)
    parser.add_argument("--unseen", type=int, default=400)
    parser.add_argument("--worlds", type=int, default=len(WORLDS), help="the first this many of WORLDS")
    parser.add_argument("--out-dir", default=str(Path(__file__).parent / "results" / "leakage_augmented"))
    args = parser.parse_args()
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for size, rgb, seed in WORLDS[: args.worlds]:
        path = out / f"{size}_{'rgb' if rgb else 'grey'}_{seed}_{args.train}x{args.unseen}.json"
        if not path.exists():
            path.write_text(json.dumps(run_world(size, rgb, seed, args.train, args.unseen), indent=1))
        rows.append(json.loads(path.read_text()))
        print(f"done: {path.name}", flush=True)
    text = table(rows)
    print(text)
    (Path(__file__).parent / "results" / "leakage_augmented.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
