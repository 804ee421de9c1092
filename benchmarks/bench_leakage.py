"""Near-duplicate search at 50,000 x 50,000 images, against brute force, and recall of planted twins.

Targets (issue 23): the search over 50,000 scored x 50,000 training images
in seconds on this machine, with the same answers as a brute-force search
on a subset; recall of planted near twins >= 95% at <= 1% false pairs on
clean data, per kind of twin (copy, JPEG re-encoding, 1-2 pixel shift,
brightness change).

Data: Shapes renders at 32 x 32 (training and test splits have disjoint
objects); ``--twins-per-kind`` planted twins of training images are
appended to the scored set. Measured:

1. features: digests and working images of both sets (s);
2. the search (:func:`fitaudit.leakage.image_leakage`): calibration on the
   training set, exact spectrum and view candidates with faiss, ranked by the
   shift- and gain-aligned distance d with its contrast floor, twins by the
   relative distance r;
3. brute force on ``--brute`` scored images: the distance d to *every*
   training image (numpy) and the relative distance r (the smaller of d to
   the nearest over d to the nearest of content other than its and the
   runner-up's, and the same ratio of the pixel residual e over the
   training images nearest under d), the same nearest neighbour and
   the same twins expected; its time per query scaled to the whole scored set;
   then the same search from the images with a checkpoint folder, and
   again (every block reused);
4. the candidate stage with the other libraries tried (faiss HNSW, hnswlib,
   pynndescent, scikit-learn brute force; hnswlib and pynndescent are
   optional, left out when not installed): time and the share of queries
   whose nearest spectrum is the exact one;
5. recall per kind of twin (found *and* matched to its source) and the share
   of clean scored images flagged (false pairs), at the calibrated threshold,
   and at the threshold that flags 1% of the clean images (chosen with the
   answers: how well the feature space separates twins, not what a user gets).

With ``--baseline-src DIR`` (the ``src`` folder of another fitaudit, e.g.
``git archive <commit> src | tar -x -C /tmp/before``), the features and the
search are timed again in fresh processes, the baseline's (``DIR`` first on
``PYTHONPATH``) and this code's, one after the other on the same renders
(``--repeats`` rounds), and their results compared (``to_dict``, every
number). Wall and CPU seconds: on a shared machine the CPU seconds of a
one-thread run (``OMP_NUM_THREADS=1``) vary the least. ``--compare-only``
runs this comparison alone.

Run: ``python benchmarks/bench_leakage.py [--n 50000] [--twins-per-kind 250]
[--brute 1000] [--baseline-src DIR [--repeats 1] [--compare-only]]`` (about
10 minutes on two shared cores, 3 more per round with a baseline; output kept
in ``benchmarks/results/leakage.txt``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit.data.shapes import make_dataset
from fitaudit.leakage import (
    TWIN_KINDS,
    image_features,
    image_leakage,
    image_search,
    image_space,
    plant_twins,
)
from fitaudit.leakage.planted import planted_recall
from fitaudit.leakage.resume import Checkpoints
from fitaudit.leakage.search import nearest


def brute_force(
    scored: image_space.ImageFeatures, train: image_space.ImageFeatures, floor: float
) -> tuple[np.ndarray, np.ndarray]:
    """Nearest training image of every scored image over all training images (no candidates), and its relative
    distance r: the smaller of Lowe's ratio (the runner-up skipped: the distance to the nearest over that to the
    nearest training image whose content differs from it and from the runner-up's) under d, over every training
    image, and under the pixel residual e and the JPEG lattice distance j, over the ``residual.CHECKED`` training
    images nearest under d."""
    # imported here: a baseline's fitaudit (--baseline-src) runs this script and may have neither module
    from fitaudit.leakage import jpeg_lattice, residual

    train_views = train.raw_views[None]  # (1, m, d)
    distances = np.empty(len(scored))
    indices = np.empty(len(scored), dtype=np.int64)
    native = (scored.shape[-2], scored.shape[-1])
    reference = residual.PixelReference(train.fine, residual.max_lag(train.shape, image_space.MAX_SHIFT))
    levels = image_space.levels_per_unit(train) or 1.0
    train_blocks = jpeg_lattice.in_grey_levels(train.blocks, levels)
    scored_blocks = jpeg_lattice.in_grey_levels(scored.blocks, levels)
    for i in range(len(scored)):
        shifted = image_space.shifted_views(scored.work[i : i + 1], native)  # (1, 49, d)
        every = image_space.pair_distances(shifted, train_views, floor, native)[0]
        checked = np.argsort(every, kind="stable")[: residual.CHECKED]
        pixels = residual.residuals(scored.fine[i : i + 1], reference, checked[None], image_space.MAX_GAIN)[0]
        blocks = scored_blocks[i : i + 1]
        lattice = jpeg_lattice.lattice_distances(blocks, train_blocks, checked[None],
                                                 jpeg_lattice.likely_qualities(blocks))[0]
        found = []
        for values, rows in ((every, np.arange(len(every))), (pixels, checked), (lattice, checked)):
            nearest = int(rows[np.argmin(values)])
            hashes = train.hashes[rows]
            other = np.where(hashes != train.hashes[nearest], values, np.inf)  # content other than the nearest's
            runner_up = hashes[int(np.argmin(other))]  # skipped, with its copies
            third = other[hashes != runner_up]
            second = third.min() if len(third) else np.inf
            found.append((image_search.relative_distances(np.array([values.min()]), np.array([second]))[0], nearest))
        distances[i], indices[i] = min(found, key=lambda pair: pair[0])  # ties go to d, then e
    return distances, indices


def candidate_libraries(queries: np.ndarray, reference: np.ndarray) -> list[tuple[str, float, float]]:
    """(library, seconds, share of queries whose nearest is the exact one) for the spectrum search."""
    rows = []
    start = time.perf_counter()
    _, exact = nearest(queries, reference, 1)
    rows.append(("faiss IndexFlatL2 (exact; used)", time.perf_counter() - start, 1.0))

    import faiss

    start = time.perf_counter()
    index = faiss.IndexHNSWFlat(reference.shape[1], 32)
    index.hnsw.efConstruction = 80
    index.add(reference)
    index.hnsw.efSearch = 64
    _, found = index.search(queries, 1)
    rows.append(("faiss IndexHNSWFlat (M=32, ef=64)", time.perf_counter() - start, float(np.mean(found[:, 0] == exact[:, 0]))))

    try:
        import hnswlib
    except ImportError:  # optional: the comparison goes on without it
        rows.append(("hnswlib (not installed: left out)", float("nan"), float("nan")))
    else:
        start = time.perf_counter()
        graph = hnswlib.Index(space="l2", dim=reference.shape[1])
        graph.init_index(max_elements=len(reference), ef_construction=80, M=16)
        graph.add_items(reference)
        graph.set_ef(64)
        labels, _ = graph.knn_query(queries, k=1)
        rows.append(("hnswlib (M=16, ef=64)", time.perf_counter() - start, float(np.mean(labels[:, 0] == exact[:, 0]))))

    try:
        import pynndescent
    except ImportError:
        rows.append(("pynndescent (not installed: left out)", float("nan"), float("nan")))
        return rows

    pynndescent.NNDescent(reference[:500], n_neighbors=15, random_state=0).query(queries[:10], k=1)  # numba compiles
    start = time.perf_counter()
    nnd = pynndescent.NNDescent(reference, n_neighbors=15, random_state=0)
    labels, _ = nnd.query(queries, k=1)
    rows.append(("pynndescent (15 neighbours; compiled before)", time.perf_counter() - start, float(np.mean(labels[:, 0] == exact[:, 0]))))

    from sklearn.neighbors import NearestNeighbors

    subset = min(len(queries), 5000)
    start = time.perf_counter()
    NearestNeighbors(n_neighbors=1, algorithm="brute").fit(reference).kneighbors(queries[:subset])
    seconds = (time.perf_counter() - start) * len(queries) / subset
    rows.append((f"scikit-learn brute (scaled from {subset})", seconds, 1.0))
    return rows


def timed_search(args: argparse.Namespace, src: str) -> dict[str, Any]:
    """Features and search timed in a fresh process whose fitaudit is the one in ``src`` (``--search-only``)."""
    command = [sys.executable, __file__, "--search-only", "--n", str(args.n), "--twins-per-kind",
               str(args.twins_per_kind), "--seed", str(args.seed)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    output = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def compare_with_baseline(args: argparse.Namespace, result: dict[str, Any] | None) -> None:
    """Baseline and this code timed in turn, ``--repeats`` rounds; their results compared (and with ``result``)."""
    here = str(Path(__file__).resolve().parents[1] / "src")
    print(f"\nSearch against the baseline, fresh processes in turn ({args.baseline_src} vs {here}), "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "this code": []}
    for _ in range(args.repeats):
        for name, src in (("baseline", args.baseline_src), ("this code", here)):
            run = timed_search(args, src)
            runs[name].append(run)
            print(f"  {name:9s} features {run['features']:6.1f} s, search {run['search']:6.1f} s wall, "
                  f"{run['cpu']:6.1f} s CPU (load average {run['load']:.2f} at its end; fitaudit from {run['fitaudit']})")
    results = [run["result"] for name in runs for run in runs[name]]
    if result is not None:
        results.append(json.loads(json.dumps(result)))
    same = all(other == results[0] for other in results)
    best = {name: (min(r["search"] for r in rs), min(r["cpu"] for r in rs)) for name, rs in runs.items()}
    print(f"  search, best of {args.repeats}: {best['baseline'][0] / best['this code'][0]:.2f}x the baseline's speed "
          f"in wall seconds, {best['baseline'][1] / best['this code'][1]:.2f}x in CPU seconds; "
          f"same result (every number of to_dict): {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000, help="training and clean scored images each")
    parser.add_argument("--twins-per-kind", type=int, default=250)
    parser.add_argument("--brute", type=int, default=1000, help="scored images checked by brute force")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline-src", help="the `src` folder of a baseline fitaudit to time the search against")
    parser.add_argument("--repeats", type=int, default=1, help="rounds of the baseline comparison")
    parser.add_argument("--compare-only", action="store_true", help="only the baseline comparison")
    parser.add_argument("--search-only", action="store_true", help=argparse.SUPPRESS)  # one timed_search
    args = parser.parse_args()
    if args.compare_only:
        if not args.baseline_src:
            parser.error("--compare-only needs --baseline-src")
        compare_with_baseline(args, None)
        return

    objects = max(1, -(-args.n // (12 * 10)))  # whole objects of 10 renders per class, cut to n
    start = time.perf_counter()
    train = make_dataset(objects, 10, split="train", random_state=args.seed).images[: args.n]
    clean = make_dataset(objects, 10, split="test", random_state=args.seed + 1).images[: args.n]
    render_seconds = time.perf_counter() - start
    twins = plant_twins(train, args.twins_per_kind, random_state=args.seed + 2)
    scored_images = np.concatenate([clean, twins.images])
    print(f"Shapes renders 32x32: {len(train)} training, {len(clean)} clean scored + {len(twins.source)} planted twins "
          f"({args.twins_per_kind} per kind); rendered in {render_seconds:.0f} s")

    start = time.perf_counter()
    scored_features = image_features(scored_images)
    train_features = image_features(train)
    feature_seconds = time.perf_counter() - start

    start, cpu_start = time.perf_counter(), time.process_time()
    result = image_leakage(scored_features, train_features)
    search_seconds, search_cpu = time.perf_counter() - start, time.process_time() - cpu_start
    if args.search_only:
        import fitaudit

        print(json.dumps({"features": feature_seconds, "search": search_seconds, "cpu": search_cpu, "result": result.to_dict(),
                          "fitaudit": str(Path(fitaudit.__file__).parent), "load": os.getloadavg()[0]}))
        return

    rng = np.random.default_rng(args.seed + 3)
    picked = np.sort(rng.choice(len(scored_features), size=min(args.brute, len(scored_features)), replace=False))
    subset = image_space.ImageFeatures(scored_features.hashes[picked], scored_features.work[picked], scored_features.shape,
                                       fine=scored_features.fine[picked], blocks=scored_features.blocks[picked],
                                       grid=scored_features.grid[picked])
    start = time.perf_counter()
    floor = float(result.contrast_floor)
    slow_d, slow_i = brute_force(subset, train_features, floor)
    brute_seconds = time.perf_counter() - start
    fast_d, fast_i = image_search.nearest_twins(subset, train_features, floor=floor, relative=True)
    same_nearest = float(np.mean(fast_i == slow_i))
    flagged_fast = set(np.flatnonzero(fast_d <= result.threshold).tolist())
    flagged_slow = set(np.flatnonzero(slow_d <= result.threshold).tolist())
    max_gap = float(np.max(np.abs(fast_d - slow_d)[slow_i == fast_i])) if same_nearest else float("nan")

    print("\nNear-duplicate search, side by side")
    print(f"  features (digests + working images, both sets): {feature_seconds:7.1f} s")
    print(f"  fitaudit search {len(scored_features)} x {len(train_features)} (calibration included): {search_seconds:7.1f} s")
    scaled = brute_seconds * len(scored_features) / len(picked)
    print(f"  brute force on {len(picked)} scored images: {brute_seconds:7.1f} s "
          f"(scaled to all {len(scored_features)}: {scaled:7.0f} s, {scaled / search_seconds:.0f}x the search)")
    print(f"  same nearest training image as brute force: {same_nearest:.2%} of the {len(picked)}; "
          f"twins flagged: search {len(flagged_fast)}, brute force {len(flagged_slow)}, "
          f"identical sets: {flagged_fast == flagged_slow}; largest distance difference {max_gap:.2e}")

    kinds = np.concatenate([np.full(len(clean), "clean"), twins.kind])
    for row in sorted(flagged_fast ^ flagged_slow):
        print(f"    differs: scored {picked[row]} ({kinds[picked[row]]}): search nearest {fast_i[row]} at {fast_d[row]:.4f}, "
              f"brute force {slow_i[row]} at {slow_d[row]:.4f} (threshold {result.threshold:.4f})")

    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        stored = image_leakage(scored_images, train, checkpoint_dir=folder)
        first_seconds = time.perf_counter() - start
        checkpoints = Checkpoints(folder)
        start = time.perf_counter()
        again = image_leakage(scored_images, train, checkpoint_dir=checkpoints)
        again_seconds = time.perf_counter() - start
    same = stored.to_dict() == again.to_dict() == result.to_dict()
    print(f"  with --checkpoint-dir, from the images (features included): {first_seconds:7.1f} s; run again: "
          f"{again_seconds:5.1f} s, same result: {same}; {checkpoints.summary()}")

    if args.baseline_src:
        compare_with_baseline(args, result.to_dict())

    print("\nCandidate stage (spectra, 128 dimensions), the libraries tried")
    for name, seconds, same in candidate_libraries(scored_features.spectra, train_features.spectra):
        print(f"  {name:42s} {seconds:7.1f} s   exact nearest for {same:.2%} of queries")

    print(f"\nThreshold {result.threshold:.4f} on the relative distance ({result.threshold_rule}; "
          f"{result.n_calibration} calibration images; contrast floor {floor:.4f}, the 25% quantile of the training "
          "images' contrasts)")
    offset = len(clean)
    recall = planted_recall(result, twins, offset=offset)
    for kind in TWIN_KINDS:
        print(f"  recall {kind:11s} {recall[kind]:7.2%}  (target >= 95%)")
    false_pairs = sum(1 for i in result.near_scored.tolist() if i < offset)
    print(f"  false pairs on clean data: {false_pairs} of {offset} = {false_pairs / offset:.2%}  (target <= 1%)")
    print(f"  exact duplicates found: {result.n_exact} (planted copies: {args.twins_per_kind})")

    # the feature space's separation, at the operating point the targets name (chosen with the answers)
    distances, nearest_rows = image_search.nearest_twins(scored_features, train_features, floor=floor, relative=True)
    oracle = float(np.quantile(distances[:offset], 0.01))
    print(f"\nAt the threshold {oracle:.4f} that flags 1.00% of the clean images (set with the answers, "
          "not available to a user):")
    for kind in TWIN_KINDS:
        rows = np.flatnonzero(twins.kind == kind)
        hit = (distances[offset + rows] <= oracle) & (nearest_rows[offset + rows] == twins.source[rows])
        print(f"  recall {kind:11s} {np.mean(hit):7.2%}")


if __name__ == "__main__":
    main()
