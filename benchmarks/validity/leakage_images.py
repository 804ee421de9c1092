"""Leakage question on real photographs: planted near copies found per kind, beside pHash and cleanlab, and verdicts.

The world (:mod:`photo_world`): crops of scikit-image's bundled photographs
(8 photos as classes), 600 training crops from the photos' top halves and
600 unseen crops from their bottom halves, and planted twins of distinct
training crops: file copies, re-crops 1-3 pixels away, JPEG re-encodes at
quality 75, brightness x0.9 / x1.1. Sizes and colours: 66-pixel grey (three
seeds, the issue's world), 32-pixel RGB and 224-pixel grey.

Measured per world, in one run:

1. fitaudit as a user gets it (:func:`fitaudit.leakage.image_leakage`, its
   default threshold): twins found *and* paired with their source, per kind;
   the share of clean crops flagged; the verdict;
2. every method at an equal false-flag rate (``--rate``, 1% of the clean
   crops; threshold set with the answers): fitaudit's relative distance r,
   imagehash's pHash (256 bits, Hamming), cleanlab's Datalab
   ``near_duplicate`` distance on the pixels (``benchmarks/bench_leakage_sizes.py``)
   and fastdup's embedding similarity (below);
3. planted leaks of 1%, 5% and 10% of the scored set (twins of all kinds,
   mixed) and 3 byte-identical copies of training crops among the 600
   unseen: the verdict and its reason (never ``pass`` expected).

fastdup's wheel pins numpy 1.26, scikit-learn 1.5 and pillow 10, so it
cannot share fitaudit's environment: it runs in its own (``--fastdup-python``,
e.g. ``python3 -m venv /tmp/fdvenv && /tmp/fdvenv/bin/pip install fastdup``)
on the world's images written to a folder as 8-bit PNG files, in a
subprocess; its similarity file is read back (1 - cosine similarity of its
embeddings to the most similar training image among each image's
``FASTDUP_NEIGHBOURS`` nearest, training and scored together: a scored image
with no training image among them is not flagged). Without that environment
the table says "fastdup not installed".

Resumable: each world's numbers are kept as JSON in ``--out-dir`` and a
rerun skips the worlds already there (``--rerun-fitaudit``: fitaudit's
numbers again, the other methods' kept). Run: ``python
benchmarks/validity/leakage_images.py`` (output in
``benchmarks/validity/results/leakage_images.txt``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

from photo_world import KINDS, photo_world  # noqa: E402

from bench_leakage_sizes import at_rate, cleanlab_distances, phash_distances  # noqa: E402
from fitaudit.leakage import image_features, image_leakage, image_search, image_space  # noqa: E402

#: (size, rgb, seed) of every world measured
WORLDS = [(66, False, 0), (32, True, 0), (224, False, 0), (66, False, 1), (66, False, 2)]
#: planted leaks, as shares of the scored set
LEAK_SHARES = (0.01, 0.05, 0.10)
#: fastdup's nearest neighbours kept per image (training and scored images searched together)
FASTDUP_NEIGHBOURS = 20
#: run in fastdup's environment: the similarity of every image's nearest neighbours, as CSV (from, to, similarity)
FASTDUP_SCRIPT = """
import csv, sys, fastdup
work, images, k, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
fd = fastdup.create(work_dir=work, input_dir=images)
fd.run(threshold=0.0, nearest_neighbors_k=k, overwrite=True, print_summary=False)
frame = fd.similarity()
with open(out, "w", newline="") as f:
    csv.writer(f).writerows(zip(frame.filename_from, frame.filename_to, frame.distance))
"""


def found_per_kind(result: Any, world: Any, offset: int) -> dict[str, int]:
    """Twins (scored rows offset, offset + 1, ...) found and paired with their source, per kind."""
    pairs = dict(zip(result.near_scored.tolist(), result.near_train.tolist()))
    return {k: int(sum(pairs.get(offset + int(i)) == int(world.source[i]) for i in np.flatnonzero(world.kind == k)))
            for k in KINDS}


def as_rgb(images: np.ndarray) -> np.ndarray:
    """Grey images as three equal channels (PIL makes no image of one channel first)."""
    return np.repeat(images, 3, axis=1) if images.shape[1] == 1 else images


def fastdup_distances(scored: np.ndarray, train: np.ndarray, python: str) -> tuple[np.ndarray, np.ndarray]:
    """1 - fastdup's similarity to the most similar training image among each scored image's nearest, and its index.

    The images are written as 8-bit PNG files (``s*.png`` scored, ``t*.png``
    training) and fastdup runs on them with ``python`` (its own environment;
    ``ImportError`` when that has no fastdup). ``inf`` and -1 for a scored
    image with no training image among its FASTDUP_NEIGHBOURS nearest.
    """
    from PIL import Image

    found = subprocess.run([python, "-c", "import fastdup"], capture_output=True) if os.path.isfile(python) else None
    if found is None or found.returncode != 0:
        raise ImportError(f"fastdup not installed (no fastdup in {python})")
    with tempfile.TemporaryDirectory() as folder:
        images = Path(folder) / "images"
        images.mkdir()
        for prefix, group in (("s", scored), ("t", train)):
            for i, image in enumerate(group):
                pixels = np.clip(np.rint(np.moveaxis(image, 0, -1) * 255), 0, 255).astype(np.uint8)
                Image.fromarray(pixels[..., 0] if pixels.shape[-1] == 1 else pixels).save(images / f"{prefix}{i:05d}.png")
        out = Path(folder) / "similarity.csv"
        subprocess.run([python, "-c", FASTDUP_SCRIPT, str(Path(folder) / "work"), str(images), str(FASTDUP_NEIGHBOURS),
                        str(out)], check=True, capture_output=True, env={**os.environ, "SENTRY_OPT_OUT": "1"})
        distance, nearest = np.full(len(scored), np.inf), np.full(len(scored), -1, dtype=np.int64)
        with out.open(newline="") as f:
            for source, target, similarity in csv.reader(f):
                a, b = Path(source).stem, Path(target).stem
                if a[0] == "t":
                    a, b = b, a  # similarity is symmetric: either direction pairs a scored with a training image
                if a[0] == "s" and b[0] == "t" and 1.0 - float(similarity) < distance[int(a[1:])]:
                    distance[int(a[1:])], nearest[int(a[1:])] = 1.0 - float(similarity), int(b[1:])
    return distance, nearest


def verdict_of(scored: np.ndarray, train: Any, folder: str) -> dict[str, Any]:
    verdict = image_leakage(scored, train, checkpoint_dir=folder).verdict()
    return {"status": verdict.status, "reason": verdict.reason,
            "detectable_share": verdict.numbers.get("detectable_share")}


def run_world(size: int, rgb: bool, seed: int, rate: float, fastdup_python: str,
              peers: dict[str, Any] | None = None) -> dict[str, Any]:
    """The world's numbers; ``peers`` (a previous row of it) gives the other methods' at-rate numbers instead."""
    start = time.perf_counter()
    world = photo_world(size, rgb=rgb, seed=seed, per_kind=15)
    offset = len(world.unseen)
    shown = np.concatenate([np.flatnonzero(world.kind == k)[:10] for k in KINDS])  # 10 twins of each kind
    twins = type(world)(**{**vars(world), "twins": world.twins[shown], "source": world.source[shown],
                           "kind": world.kind[shown]})
    scored = np.concatenate([world.unseen, twins.twins])
    train = image_features(world.train)
    folder = tempfile.mkdtemp()  # the training images' calibration, computed once for the world's five searches
    result = image_leakage(scored, train, checkpoint_dir=folder)
    row: dict[str, Any] = {
        "size": size, "rgb": rgb, "seed": seed, "n_train": len(world.train), "n_clean": offset, "per_kind": 10,
        "found": found_per_kind(result, twins, offset),
        "clean flagged": int(np.count_nonzero(result.near_scored < offset)),
        "verdict": {"status": result.verdict().status, "reason": result.verdict().reason},
    }
    floor = image_space.contrast_floor(train.raw_views)
    methods = {"fitaudit r": lambda s, t: image_search.nearest_twins(image_features(s), train, floor=floor,
                                                                   relative=True),
               "pHash 256-bit (imagehash)": lambda s, t: phash_distances(as_rgb(s), as_rgb(t)),
               "Datalab near_duplicate (cleanlab)": cleanlab_distances,
               "fastdup (1 - similarity)": lambda s, t: fastdup_distances(s, t, fastdup_python)}
    row["at rate"], row["left out"] = {}, {}
    for name, function in methods.items():
        if peers is not None and name != "fitaudit r":
            for part in ("at rate", "left out"):
                if name in peers.get(part, {}):
                    row[part][name] = peers[part][name]
            continue
        try:
            distance, nearest = function(scored, world.train)
        except ImportError as exc:
            row["left out"][name] = str(exc)
            continue
        row["at rate"][name] = at_rate(np.asarray(distance, dtype=np.float64), nearest[offset:] == twins.source,
                                       offset, twins.kind, rate)
    order = np.random.default_rng(seed + 7).permutation(len(world.twins))  # the leaks mix every kind
    row["leaks"] = {}
    for share in LEAK_SHARES:
        k = int(round(share * offset))
        row["leaks"][f"{share:.0%}"] = verdict_of(np.concatenate([world.unseen, world.twins[order[:k]]]), train, folder)
    copies = world.train[np.random.default_rng(seed + 8).choice(len(world.train), 3, replace=False)]
    row["leaks"]["3 copies"] = verdict_of(np.concatenate([world.unseen, copies]), train, folder)
    shutil.rmtree(folder)
    row["seconds"] = time.perf_counter() - start
    return row


def table(rows: list[dict[str, Any]], rate: float) -> str:
    def name(r: dict[str, Any]) -> str:
        return f"{r['size']} px {'RGB' if r['rgb'] else 'grey'} seed {r['seed']}"

    lines = ["fitaudit as a user gets it (default threshold): twins found and paired with their source, of 10 per kind",
             "", f"{'world':<22}" + "".join(f"{k:>12}" for k in KINDS) + f"{'clean flagged':>16}  verdict"]
    for r in rows:
        lines.append(f"{name(r):<22}" + "".join(f"{r['found'][k]:>9}/10" for k in KINDS)
                     + f"{r['clean flagged']:>9}/{r['n_clean']}  {r['verdict']['status']} ({r['verdict']['reason']})")
    total = {k: sum(r["found"][k] for r in rows) for k in KINDS}
    lines.append(f"{'all worlds':<22}" + "".join(f"{total[k]:>9}/{10 * len(rows)}" for k in KINDS)
                 + f"{sum(r['clean flagged'] for r in rows):>9}/{sum(r['n_clean'] for r in rows)}")
    lines += ["", f"Every method where {rate:.0%} of the clean crops are flagged (threshold chosen with the answers): "
              "found and paired, per kind", "",
              f"{'world':<22}{'method':<36}" + "".join(f"{k:>12}" for k in KINDS) + f"{'clean flagged':>15}"]
    for r in rows:
        for method, recall in r["at rate"].items():
            lines.append(f"{name(r):<22}{method:<36}" + "".join(f"{recall[k]:>12.0%}" for k in KINDS)
                         + f"{recall['false pairs']:>15.2%}")
        for method, why in r.get("left out", {}).items():
            lines.append(f"{name(r):<22}{method:<36}  left out: {why}")
    lines += ["", "Verdicts with planted leaks (share of the scored set, twins of all kinds) and 3 byte-identical "
              "copies among the 600 unseen crops ('sees': the smallest leaked share the verdict says it detects "
              "with 80% power)", "", f"{'world':<22}" + " | ".join(f"{k:<48}" for k in rows[0]["leaks"])]
    for r in rows:
        cells = []
        for v in r["leaks"].values():
            power = f", sees {v['detectable_share']:.0%}" if v.get("detectable_share") is not None else ""
            cells.append(f"{v['status']} ({v['reason']}{power})")
        lines.append(f"{name(r):<22}" + " | ".join(f"{c:<48}" for c in cells))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=0.01, help="false-flag rate of the comparison")
    parser.add_argument("--out-dir", default="benchmarks/validity/results/leakage_images",
                        help="one JSON per world (resumable)")
    parser.add_argument("--out", default="benchmarks/validity/results/leakage_images.txt")
    parser.add_argument("--fastdup-python", default="/tmp/fdvenv/bin/python",
                        help="the Python of an environment with fastdup (left out when it has none)")
    parser.add_argument("--rerun-fitaudit", action="store_true",
                        help="rerun fitaudit's numbers of every world, keeping the other methods' from --out-dir "
                             "(they do not depend on fitaudit's code)")
    args = parser.parse_args()
    folder = Path(args.out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for size, rgb, seed in WORLDS:
        path = folder / f"{size}-{'rgb' if rgb else 'grey'}-{seed}.json"
        before = json.loads(path.read_text()) if path.is_file() else None
        if before is not None and before.get("rate") == args.rate and not args.rerun_fitaudit:
            rows.append(before)
            continue
        peers = before if args.rerun_fitaudit and before is not None and before.get("rate") == args.rate else None
        row = {**run_world(size, rgb, seed, args.rate, args.fastdup_python, peers), "rate": args.rate}
        path.write_text(json.dumps(row, indent=1))
        print(f"{size} px {'RGB' if rgb else 'grey'} seed {seed}: {row['seconds']:.0f} s", file=sys.stderr, flush=True)
        rows.append(row)
    text = table(rows, args.rate)
    print(text)
    Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
