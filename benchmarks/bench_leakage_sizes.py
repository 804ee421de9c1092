"""Planted twins at 28, 32, 44, 64 and 224 pixels: recall per kind, beside imagehash's pHash and cleanlab's Datalab.

Data: Shapes renders at each size, training and clean scored images of
disjoint objects; half of each set is rendered 1.6 times larger and
centre-cropped, so that the object touches or crosses the border. Twins of
each kind of :data:`fitaudit.leakage.TWIN_KINDS` (copies, JPEG at quality
75, shifts of 1-2 *native* pixels, brightness x0.8-0.9 or x1.1-1.2) of
distinct training images are appended to the scored set.

Measured per size:

1. fitaudit (:func:`fitaudit.leakage.image_leakage`) at its calibrated
   threshold (what a user gets): recall per kind (found *and* paired with
   the true source), the share of clean scored images flagged (false
   pairs), and the verdict;
2. every method at an equal false-pair rate: each scored image's distance
   to its nearest training image, the threshold set (with the answers) where
   ``--rate`` (1%) of the clean scored images are flagged, and the recall per
   kind there (a twin counts when under the threshold and paired with its
   source). Methods: fitaudit's relative distance r (what its threshold
   is on: the smaller of Lowe's ratio under d and under the pixel residual e);
   imagehash's pHash with 256 bits
   (``hash_size=16``), nearest training image by Hamming distance;
   cleanlab's Datalab ``near_duplicate`` issue on the pixels (its distance
   to the nearest neighbour among training and scored images; a twin counts
   when that neighbour is its source). At 224 pixels Datalab gets the
   pixels averaged to 56 x 56 (the full pixels need 150,528 numbers per
   image) and the sets are smaller (``--n-large``).

Resumable: every size's numbers are kept in ``--out-dir`` as JSON with the
settings they were measured under (``--n``, ``--per-kind``, ``--rate``,
``--seed``), and a rerun with the same settings skips the sizes already
there. The peers are optional packages
(``pip install imagehash "cleanlab[datalab]"``), not fitaudit's
dependencies; a missing one is left out of the table.

Run: ``python benchmarks/bench_leakage_sizes.py [--sizes 28 32 44 64 224] [--n 2000]
[--per-kind 100] [--n-large 600] [--per-kind-large 50]`` (output kept in
``benchmarks/results/leakage_sizes.txt``).

``--speed N`` (issue 49): instead, N x N 32-pixel renders with twins of
every kind (today's four and the augmented ones: mirror images, 0.85x and
1.2x re-crops resized back and 6-degree rotations, made with scipy.ndimage)
searched twice in one run, side by side: as before issue 49
(``augmented=False``) and with every edit (the default, with its first
pass); the seconds of each, their ratio, recall per kind, clean images
flagged, and on a subsample (every planted twin and ``--sample`` clean
images) the flagged set against a brute-force reference: every training
image a candidate under every edit, no first pass (``image_search``'s
``CANDIDATES`` set to the training set's size). Output kept in
``benchmarks/results/leakage_speed.txt``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit.data.shapes import make_dataset
from fitaudit.leakage import (
    TWIN_KINDS,
    edits,
    image_features,
    image_leakage,
    image_search,
    image_space,
    plant_twins,
)
from fitaudit.leakage.planted import planted_recall
from fitaudit.report.verdicts import read

#: renders per object (objects per class follow from the set's size)
RENDERS = 4
#: the border-touching half is rendered this much larger and centre-cropped
ZOOM = 1.6


def renders(n: int, size: int, split: str, seed: int) -> np.ndarray:
    """``n`` Shapes renders of ``size`` pixels, half of them zoomed so the object touches the border."""
    per_class = max(1, int(np.ceil(n / 2 / RENDERS / 10)))  # 10 classes
    plain = make_dataset(per_class, RENDERS, split=split, image_size=size, random_state=seed).images[: n // 2]
    big = int(round(size * ZOOM))
    zoomed = make_dataset(per_class, RENDERS, split=split, image_size=big, random_state=seed + 1).images
    start = (big - size) // 2
    cropped = zoomed[: n - len(plain), :, start : start + size, start : start + size]
    return np.ascontiguousarray(np.concatenate([plain, cropped]), dtype=np.float32)


def at_rate(distance: np.ndarray, paired: np.ndarray, clean: int, kinds: np.ndarray, rate: float) -> dict[str, float]:
    """Recall per kind where ``rate`` of the clean scored images (the first ``clean``) are flagged."""
    threshold = float(np.quantile(distance[:clean], rate, method="inverted_cdf"))
    hit = (distance[clean:] <= threshold) & paired
    recall = {str(k): float(np.mean(hit[kinds == k])) for k in dict.fromkeys(kinds.tolist())}
    recall["false pairs"] = float(np.mean(distance[:clean] <= threshold))
    return recall


def fitaudit_distances(scored: np.ndarray, train: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    return image_search.nearest_twins(image_features(scored), image_features(train), floor=floor, relative=True)


def phash_distances(scored: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hamming distance of 256-bit pHashes to the nearest training image, and its index."""
    import imagehash
    from PIL import Image

    def bits(images: np.ndarray) -> np.ndarray:
        out = []
        for image in images:
            pixels = np.clip(np.rint(np.moveaxis(image, 0, -1) * 255), 0, 255).astype(np.uint8)
            out.append(imagehash.phash(Image.fromarray(pixels), hash_size=16).hash.ravel())
        return np.asarray(out, dtype=np.float32)

    a, b = bits(scored), bits(train)
    hamming = a @ (1 - b).T + (1 - a) @ b.T
    nearest = np.argmin(hamming, axis=1)
    return hamming[np.arange(len(a)), nearest], nearest


def cleanlab_distances(scored: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Datalab's near-duplicate distance of every scored image and its nearest neighbour (training rows first)."""
    from cleanlab import Datalab

    from fitaudit.leakage.features import _area_weights

    def pixels(images: np.ndarray) -> np.ndarray:
        side = images.shape[-1]
        if side > 64:  # 224 px: averaged to 56 x 56
            w = _area_weights(side, 56)
            images = np.einsum("ih,nchw,jw->ncij", w, images, w)
        return images.reshape(len(images), -1)

    features = np.concatenate([pixels(train), pixels(scored)]).astype(np.float32)
    lab = Datalab(data={"label": np.zeros(len(features), dtype=int)}, label_name="label", verbosity=0)
    lab.find_issues(features=features, issue_types={"near_duplicate": {}})
    info = lab.get_info("near_duplicate")
    nearest = np.asarray(info["nearest_neighbor"])[len(train) :]
    distance = np.asarray(info["distance_to_nearest_neighbor"], dtype=np.float64)[len(train) :]
    return distance, np.where(nearest < len(train), nearest, -1)


PEERS = {"pHash 256-bit (imagehash)": phash_distances, "Datalab near_duplicate (cleanlab)": cleanlab_distances}


def run_size(size: int, n: int, per_kind: int, rate: float, seed: int) -> dict[str, Any]:
    start = time.perf_counter()
    train = renders(n, size, "train", seed)
    clean = renders(n, size, "test", seed + 10)
    twins = plant_twins(train, per_kind, random_state=seed + 2)
    scored = np.concatenate([clean, twins.images])
    made = time.perf_counter() - start
    result = image_leakage(scored, train)
    searched = time.perf_counter() - start - made
    row: dict[str, Any] = {
        "size": size, "n_train": len(train), "n_clean": len(clean), "per_kind": per_kind, "rate": rate, "seed": seed,
        "render_s": made, "search_s": searched,
        "calibrated": planted_recall(result, twins, offset=len(clean)),
        "calibrated false pairs": float(np.count_nonzero(result.near_scored < len(clean)) / len(clean)),
        "verdict": read(result).status,
        "threshold": result.threshold,
    }
    methods = {"fitaudit": lambda s, t: fitaudit_distances(s, t, float(result.contrast_floor))}
    for name, function in PEERS.items():
        methods[name] = function
    row["at rate"] = {}
    for name, function in methods.items():
        try:
            distance, nearest = function(scored, train)
        except ImportError as exc:
            print(f"{name} left out: {exc}", file=sys.stderr)
            continue
        paired = nearest[len(clean) :] == twins.source
        row["at rate"][name] = at_rate(np.asarray(distance, dtype=np.float64), paired, len(clean), twins.kind, rate)
    return row


#: augmented twins of the speed run: kind -> how it is made from its source (C, H, W) with scipy.ndimage
AUGMENTED_KINDS = ("flip", "rescale 0.85x", "rescale 1.2x", "rotation 6 degrees")


def augmented_twin(image: np.ndarray, kind: str) -> np.ndarray:
    """A flipped, re-cropped (the centre at 0.85x of the side, or zoomed out to 1.2x with the edge repeated) and
    resized back, or rotated copy of a (C, H, W) image, by scipy.ndimage (not fitaudit's warp)."""
    from scipy import ndimage

    if kind == "flip":
        return image[..., ::-1].copy()
    side = image.shape[-1]
    if kind.startswith("rotation"):
        return np.stack([ndimage.rotate(c, 6.0, reshape=False, order=1, mode="nearest") for c in image])
    scale = 0.85 if "0.85" in kind else 1.2
    ys = (np.arange(side) - (side - 1) / 2) * scale + (side - 1) / 2
    grid = np.meshgrid(ys, ys, indexing="ij")
    return np.stack([ndimage.map_coordinates(c, grid, order=1, mode="nearest") for c in image])


def run_speed(n: int, per_kind: int, sample: int, seed: int, saved: Path) -> dict[str, Any]:
    """Today's search and the search with every edit on the same N x N 32-pixel renders, and the brute-force check.

    Each step's numbers are kept in ``saved`` (JSON) as it ends and a rerun with the same settings skips it (the
    searches are rerun only to give the brute-force check the search's flagged set when that check is not kept).
    Seconds are wall-clock and CPU (``time.process_time``: every thread of this process, the cost on a shared
    machine whatever else runs on it)."""
    train = renders(n, 32, "train", seed)
    clean = renders(n, 32, "test", seed + 10)
    twins = plant_twins(train, per_kind, random_state=seed + 2)
    rng = np.random.default_rng(seed + 3)
    free = np.setdiff1d(np.arange(n), twins.source)
    sources = rng.choice(free, size=per_kind * len(AUGMENTED_KINDS), replace=False)
    kinds = np.repeat(np.array(AUGMENTED_KINDS), per_kind)
    made = np.stack([augmented_twin(train[s], k) for s, k in zip(sources, kinds)]).astype(np.float32)
    source = np.concatenate([twins.source, sources])
    kind = np.concatenate([twins.kind, kinds])
    scored_images = np.concatenate([clean, twins.images, made])
    scored, reference = image_features(scored_images), image_features(train)
    settings = {"n": n, "per_kind": per_kind, "sample": sample, "seed": seed}
    row: dict[str, Any] = json.loads(saved.read_text()) if saved.is_file() else {}
    if any(row.get(key) != value for key, value in settings.items()):
        row = dict(settings)
    results = {}
    for name, augmented in (("today (no edits)", False), ("every edit", True)):
        if name in row and "brute force" in row:
            continue
        start, cpu = time.perf_counter(), time.process_time()
        results[name] = image_leakage(scored, reference, augmented=augmented)
        found = dict(zip(results[name].near_scored.tolist(), results[name].near_train.tolist()))
        if name in row:  # kept: the search was rerun for the brute-force check only
            continue
        row[name] = {"seconds": time.perf_counter() - start, "cpu seconds": time.process_time() - cpu,
                     "verdict": read(results[name]).status,
                     "clean flagged": int(np.sum(results[name].near_scored < n)),
                     "null": [results[name].null_near, results[name].n_calibration],
                     "recall": {str(k): float(np.mean([found.get(n + i) == source[i]
                                                       for i in np.flatnonzero(kind == k)]))
                                for k in dict.fromkeys(kind.tolist())}}
        saved.write_text(json.dumps(row, indent=1))
    if "brute force" in row:
        return row
    every = results["every edit"]
    subset = np.concatenate([rng.choice(n, size=sample, replace=False), n + np.arange(len(source))])
    part = image_space.ImageFeatures(scored.hashes[subset], scored.work[subset], scored.shape,
                                     fine=scored.fine[subset], blocks=scored.blocks[subset], grid=scored.grid[subset])
    searched = tuple(e for e in (edits.IDENTITY, edits.FLIP, *edits.RESAMPLED) if e.name in every.searched_edits)
    start = time.perf_counter()
    defaults = image_search.CANDIDATES, image_search.RANK_CHUNK
    image_search.CANDIDATES, image_search.RANK_CHUNK = len(train), 8
    try:
        ratios, _, _ = image_search.nearest_edited_twins(part, reference, floor=float(every.contrast_floor),
                                                         searched=searched)
    finally:
        image_search.CANDIDATES, image_search.RANK_CHUNK = defaults
    exact = np.isin(scored.hashes[subset], reference.hashes)
    brute = set(subset[(ratios <= every.threshold) | exact].tolist())
    searched_flags = set(every.near_scored.tolist()) & set(subset.tolist())
    row["brute force"] = {"seconds": time.perf_counter() - start, "queries": len(subset),
                          "flagged": len(brute), "search flagged": len(searched_flags),
                          "only brute force": sorted(brute - searched_flags),
                          "only the search": sorted(searched_flags - brute)}
    saved.write_text(json.dumps(row, indent=1))
    return row


def speed_table(row: dict[str, Any]) -> str:
    names = ("today (no edits)", "every edit")
    kinds = list(row[names[0]]["recall"])
    lines = [f"{row['n']:,} x {row['n']:,} 32-pixel Shapes renders, {row['per_kind']} twins of each kind, one run "
             "(image features computed once, not timed); recall: found and paired with the source", "",
             f"{'search':<18}{'wall s':>9}{'CPU s':>9}" + "".join(f"{k:>20}" for k in kinds) + f"{'clean flagged':>15}"
             f"{'null':>14}  verdict"]
    for name in names:
        r = row[name]
        lines.append(f"{name:<18}{r['seconds']:>9.1f}{r['cpu seconds']:>9.1f}"
                     + "".join(f"{r['recall'][k]:>20.0%}" for k in kinds)
                     + f"{r['clean flagged']:>15}{r['null'][0]:>8}/{r['null'][1]:<5}  {r['verdict']}")
    ratio = row[names[1]]["cpu seconds"] / row[names[0]]["cpu seconds"]
    wall = row[names[1]]["seconds"] / row[names[0]]["seconds"]
    b = row["brute force"]
    lines += ["", f"every edit / today: {ratio:.2f}x the CPU time, {wall:.2f}x the wall-clock time (goal: at most "
              "1.5x)",
              f"brute force on {b['queries']} scored images (every planted twin and {row['sample']} clean; every "
              f"training image a candidate under every edit, no first pass; {b['seconds']:.0f} s): "
              f"{b['flagged']} flagged, the search {b['search flagged']}; flagged by brute force only: "
              f"{b['only brute force'] or 'none'}; by the search only: {b['only the search'] or 'none'}"]
    return "\n".join(lines)


def table(rows: list[dict[str, Any]], rate: float) -> str:
    kinds = list(TWIN_KINDS)
    lines = ["fitaudit at its calibrated threshold (what a user gets):", "",
             f"{'size':>5} {'train':>6} {'clean':>6} {'twins/kind':>10}  "
             + "  ".join(f"{k:>10}" for k in kinds) + f"  {'false pairs':>11}  verdict   search s"]
    for r in rows:
        lines.append(f"{r['size']:>5} {r['n_train']:>6} {r['n_clean']:>6} {r['per_kind']:>10}  "
                     + "  ".join(f"{r['calibrated'][k]:>10.1%}" for k in kinds)
                     + f"  {r['calibrated false pairs']:>11.2%}  {r['verdict']:<8} {r['search_s']:>8.1f}")
    lines += ["", f"Every method where {rate:.0%} of the clean scored images are flagged (threshold chosen with the "
              "answers): recall per kind", ""]
    lines.append(f"{'size':>5}  {'method':<34}" + "".join(f"{k:>11}" for k in kinds) + f"{'false pairs':>13}")
    for r in rows:
        for name, recall in r["at rate"].items():
            lines.append(f"{r['size']:>5}  {name:<34}" + "".join(f"{recall[k]:>11.1%}" for k in kinds)
                         + f"{recall['false pairs']:>13.2%}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[28, 32, 44, 64, 224])
    parser.add_argument("--n", type=int, default=2000, help="training and clean scored images each")
    parser.add_argument("--per-kind", type=int, default=100, help="planted twins per kind")
    parser.add_argument("--n-large", type=int, default=600, help="--n for sizes above 64 pixels")
    parser.add_argument("--per-kind-large", type=int, default=50, help="--per-kind for sizes above 64 pixels")
    parser.add_argument("--rate", type=float, default=0.01, help="false-pair rate of the comparison")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", default="benchmarks/results/leakage_sizes", help="one JSON per size (resumable)")
    parser.add_argument("--speed", type=int, help="instead: N x N 32-pixel images, today's search and every edit")
    parser.add_argument("--sample", type=int, default=40, help="clean images of the speed run's brute-force check")
    args = parser.parse_args()
    if args.speed:
        Path(args.out_dir).mkdir(parents=True, exist_ok=True)
        speed = run_speed(args.speed, args.per_kind, args.sample, args.seed,
                          Path(args.out_dir) / f"speed-{args.speed}.json")
        print(speed_table(speed))
        return
    folder = Path(args.out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for size in args.sizes:
        path = folder / f"size-{size}.json"
        large = size > 64
        settings = {"n_train": args.n_large if large else args.n,
                    "per_kind": args.per_kind_large if large else args.per_kind, "rate": args.rate, "seed": args.seed}
        saved = json.loads(path.read_text()) if path.is_file() else {}
        if all(saved.get(key) == value for key, value in settings.items()):  # kept only for the same settings
            rows.append(saved)
            continue
        row = run_size(size, settings["n_train"], settings["per_kind"], args.rate, args.seed)
        path.write_text(json.dumps(row, indent=1))
        print(f"size {size} done in {row['render_s'] + row['search_s']:.0f} s", file=sys.stderr)
        rows.append(row)
    print(table(rows, args.rate))


if __name__ == "__main__":
    main()
