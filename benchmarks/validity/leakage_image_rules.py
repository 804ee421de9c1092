"""Near-twin rules for real photographs, side by side: which relative distance finds re-crops, JPEG and brightness twins.

The worlds of ``leakage_images.py`` (:mod:`photo_world`: crops of
scikit-image's photographs, 600 training crops from the photos' top halves,
600 unseen from their bottom halves, 15 planted twins of each kind), all five
of them. For every scored image x the distance d of
:mod:`fitaudit.leakage.image_space` to *every* training image (brute force,
no candidate search) and every training image's to every other; from them,
with y the nearest training image of x and t -> nn(t) a training image's own
nearest training image of other content:

* ``r``: d(x, y) / d(x, z1), z1 the nearest of other content than y
  (Lowe's ratio test, the rule before this comparison);
* ``r, runner-up skipped``: d(x, y) / d(x, z2), z2 the nearest of content
  other than y's and z1's (the rule now in the product);
* ``r, 2 skipped``: d(x, y) / d(x, z3), z3 past z1 and z2;
* ``r, skip j with d(y, j) <= d(x, y)``: training images nearer the source
  than x is are not rivals;
* ``s``: d(x, y) / d(y, nn(y)), relative to the matched training image's
  own nearest distinct neighbour (a copy is closer to its source than the
  source is to anything else in training); ``s2``: to its second nearest;
* ``finer view 16 / 32``: ``r`` and ``r, runner-up skipped`` with a view of
  16 x 16 or 32 x 32 luminance cells (8 x 8 in the product) and the same
  shifts, gain and floor, on each image's 12 nearest training images by d;
* ``r or pixel ratio``: the smaller of ``r, runner-up skipped`` and the
  same ratio of the pixel residual e (:mod:`fitaudit.leakage.residual`) over
  the 12 training images nearest under d, paired with the nearest under the
  distance that gave it (the rule before the JPEG lattice distance);
* ``r, pixel or JPEG ratio``: the smallest of those two and the same ratio
  of the JPEG lattice distance j (:mod:`fitaudit.leakage.jpeg_lattice`)
  over the same 12 (the rule now in the product).

Each rule at fixed thresholds (no answers used) and at the threshold that
flags 1% of the 3,000 clean crops (chosen with the answers), with the twins
found *and* paired with their source per kind (of 75), the clean crops
flagged, and the training images' own share within the threshold (the
null the verdict compares with: the larger, the less power). The ceiling
line counts the twins whose nearest training image under d is their source
at all: no rule on the ratio pairs more.

Brute-force distances are kept per world in ``--cache-dir``, keyed by
fitaudit's source and this world's (a rerun of the same code reuses them); the pixel residuals and lattice distances take seconds and are computed afresh. Run:
``python benchmarks/validity/leakage_image_rules.py`` (output in
``benchmarks/validity/results/leakage_image_rules.txt``; about 15 minutes on
two shared cores; seconds with the cache).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent)]

from photo_world import photo_world  # noqa: E402

from fitaudit.checkpoint import code_fingerprint  # noqa: E402
from fitaudit.leakage import image_features, image_search, image_space, jpeg_lattice, residual  # noqa: E402

WORLDS = [(66, False, 0), (32, True, 0), (224, False, 0), (66, False, 1), (66, False, 2)]
KINDS = ("recrop", "jpeg", "brightness")
#: fixed thresholds compared
FIXED = (0.3, 0.4, 0.5)
#: training images by d whose finer-view distance is computed per image
FINE_CANDIDATES = 12


def brute_distances(queries: image_space.ImageFeatures, train: image_space.ImageFeatures, floor: float) -> np.ndarray:
    """d of every query to every training image (no candidates): shape (n, m)."""
    native = (queries.shape[-2], queries.shape[-1])
    views = train.raw_views.astype(np.float64)[None]
    return np.stack([image_space.pair_distances(image_space.shifted_views(queries.work[i : i + 1], native), views,
                                                floor, native)[0] for i in range(len(queries))])


def fine_views(work: np.ndarray, moves: list[tuple[float, float]], cells: int) -> np.ndarray:
    """:func:`image_space.raw_view` with ``cells`` x ``cells`` luminance cells (colour at half that): (n, s, d)."""
    half, n = cells // 2, len(work)
    out = np.empty((n, len(moves), cells * cells + 2 * half * half))
    for i, (dy, dx) in enumerate(moves):
        luma = (image_space._block_means(cells, dy) @ work[:, 0] @ image_space._block_means(cells, dx).T).reshape(n, -1)
        chroma = image_space._block_means(half, dy) @ work[:, 1:] @ image_space._block_means(half, dx).T
        out[:, i, : cells * cells] = luma - luma.mean(1, keepdims=True)
        out[:, i, cells * cells :] = image_space.CHROMA_WEIGHT * chroma.reshape(n, -1)
    return out


def fine_weights(native: tuple[int, int], cells: int) -> np.ndarray:
    """:func:`image_space.kept_weights` for the finer view."""
    rows = []
    for dy, dx in image_space.shifts(native):
        ky, kx = image_space._kept(dy), image_space._kept(dx)
        half = cells // 2
        luma = np.outer(ky.reshape(cells, -1).mean(1), kx.reshape(cells, -1).mean(1)).ravel()
        chroma = np.outer(ky.reshape(half, -1).mean(1), kx.reshape(half, -1).mean(1)).ravel()
        rows.append(np.concatenate([luma, chroma, chroma]))
    return np.array(rows)


def fine_distances(queries: np.ndarray, train: np.ndarray, coarse: np.ndarray, native: tuple[int, int],
                   cells: int) -> np.ndarray:
    """d with the finer view from each query's FINE_CANDIDATES nearest training images by ``coarse``; inf elsewhere.

    The same formula as image_space's (shifts, gain in [1/1.3, 1.3],
    edge-filled cells weighted by what they kept, luminance re-centred), with
    the floor at the 25% quantile of the training images' finer contrasts.
    """
    weights = fine_weights(native, cells)
    plain = fine_views(train, [(0.0, 0.0)], cells)[:, 0]
    floor = float(np.quantile(np.linalg.norm(plain, axis=1), image_space.FLOOR_QUANTILE))
    luma = cells * cells
    out = np.full(coarse.shape, np.inf)
    for start in range(0, len(queries), 64):
        shifted = fine_views(queries[start : start + 64], image_space.shifts(native), cells)
        candidates = np.argsort(coarse[start : start + 64], axis=1)[:, :FINE_CANDIDATES]
        views, w_luma = plain[candidates], weights[:, :luma]
        total = w_luma.sum(1)
        sum_a = np.einsum("nsl,sl->ns", shifted[..., :luma], w_luma)
        sum_b = np.einsum("nkl,sl->nks", views[..., :luma], w_luma)
        aa = np.maximum(np.einsum("nsd,sd->ns", shifted**2, weights) - sum_a**2 / total, 0)[:, None]
        bb = np.maximum(np.einsum("nkd,sd->nks", views**2, weights) - sum_b**2 / total, 0)
        ab = np.einsum("nsd,nkd->nks", shifted * weights[None], views) - sum_a[:, None] * sum_b / total
        gain = np.clip(ab / np.where(bb > 0, bb, 1), 1 / image_space.MAX_GAIN, image_space.MAX_GAIN)
        error = np.sqrt(np.maximum(aa - 2 * gain * ab + gain**2 * bb, 0))
        d = (error / np.maximum(np.sqrt(np.sqrt(aa * bb)), floor)).min(2)
        np.put_along_axis(out[start : start + 64], candidates, d, axis=1)
    return out


def pixel_residuals(d: np.ndarray, queries: np.ndarray, train: np.ndarray, lag: int) -> np.ndarray:
    """e to the residual.CHECKED training images nearest under d (rows of ``d``), inf elsewhere: shape of ``d``."""
    checked = np.argsort(d, axis=1, kind="stable")[:, : residual.CHECKED]
    out = np.full(d.shape, np.inf)
    e = residual.residuals(queries, residual.PixelReference(train, lag), checked, image_space.MAX_GAIN)
    np.put_along_axis(out, checked, e, axis=1)
    return out


def lattice_distances(d: np.ndarray, queries: np.ndarray, train: np.ndarray) -> np.ndarray:
    """j (blocks in grey levels) to the residual.CHECKED training images nearest under d, inf elsewhere."""
    checked = np.argsort(d, axis=1, kind="stable")[:, : residual.CHECKED]
    out = np.full(d.shape, np.inf)
    j = jpeg_lattice.lattice_distances(queries, train, checked, jpeg_lattice.likely_qualities(queries))
    np.put_along_axis(out, checked, j, axis=1)
    return out


def world_distances(size: int, rgb: bool, seed: int, cache: Path) -> dict[str, np.ndarray]:
    """The world's brute-force distances (and finer-view ones), from the cache when there; the pixel residuals
    and JPEG lattice distances (seconds) computed afresh, so that they follow the product's code."""
    code = code_fingerprint(photo_world)[:12]  # fitaudit's source and the world's: a changed d is computed afresh
    path = cache / f"{size}-{'rgb' if rgb else 'grey'}-{seed}-{code}.npz"
    world = photo_world(size, rgb=rgb, seed=seed, per_kind=15)
    scored, train = image_features(np.concatenate([world.unseen, world.twins])), image_features(world.train)
    if path.is_file():
        arrays = {name: values for name, values in np.load(path).items()
                  if not name.endswith((" pixels", " lattice"))}
    else:
        floor = image_space.contrast_floor(train.raw_views)
        arrays = {"scored": brute_distances(scored, train, floor), "train": brute_distances(train, train, floor),
                  "scored_hashes": scored.hashes, "train_hashes": train.hashes, "source": world.source,
                  "kind": world.kind, "n_clean": np.array(len(world.unseen))}
        np.fill_diagonal(arrays["train"], np.inf)
        for cells in (16, 32):
            for name, work in (("scored", scored.work), ("train", train.work)):
                arrays[f"{name} {cells}"] = fine_distances(work, train.work, arrays[name], (size, size), cells)
            np.fill_diagonal(arrays[f"train {cells}"], np.inf)
        np.savez(path, **arrays)
    lag = residual.max_lag(train.shape, image_space.MAX_SHIFT)
    for name, queries in (("scored", scored.fine), ("train", train.fine)):
        arrays[f"{name} pixels"] = pixel_residuals(arrays[name], queries, train.fine, lag)
    train_blocks = jpeg_lattice.in_grey_levels(train.blocks, 255.0)
    for name, blocks in (("scored", scored.blocks), ("train", train.blocks)):
        arrays[f"{name} lattice"] = lattice_distances(arrays[name], jpeg_lattice.in_grey_levels(blocks, 255.0),
                                                      train_blocks)
    return arrays


def nearest_and_rivals(d: np.ndarray, hashes: np.ndarray, skip: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nearest training image, d to it, and d to the nearest of other content after ``skip`` runners-up."""
    rows = np.arange(len(d))
    nearest = np.argmin(d, axis=1)
    other = np.where(hashes[None] == hashes[nearest][:, None], np.inf, d)
    for _ in range(skip):
        runner_up = hashes[np.argmin(other, axis=1)]
        other = np.where(hashes[None] == runner_up[:, None], np.inf, other)
    return nearest, d[rows, nearest], other.min(axis=1)


def own_nearest(train: np.ndarray, hashes: np.ndarray, k: int) -> np.ndarray:
    """Each training image's d to its k-th nearest training image of other content (k = 1, 2)."""
    return np.sort(np.where(hashes[None] == hashes[:, None], np.inf, train), axis=1)[:, k - 1]


Rule = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def smallest_ratio(world: dict[str, np.ndarray], name: str, distances: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The smallest ratio (runner-up skipped) on ``name`` ("scored" or "train") over ``distances`` ("" d,
    " pixels" e, " lattice" j), with the nearest under the distance that gave it (ties to the first)."""
    found = [ratio(1)(world[name + which], world["train_hashes"], world["train"]) for which in distances]
    ratios = np.stack([value for _, value in found])
    smallest = np.argmin(np.nan_to_num(ratios, nan=np.inf), axis=0)
    columns = np.arange(ratios.shape[1])
    return np.stack([nearest for nearest, _ in found])[smallest, columns], ratios[smallest, columns]


#: the product's rule: d, e and j
PRODUCT = ("", " pixels", " lattice")


def ratio(skip: int) -> Rule:
    def rule(d: np.ndarray, hashes: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        nearest, d1, rival = nearest_and_rivals(d, hashes, skip)
        with np.errstate(invalid="ignore"):  # 0 / 0 and inf / inf (no rival left): never a twin
            return nearest, d1 / rival
    return rule


def source_relative(k: int) -> Rule:
    def rule(d: np.ndarray, hashes: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        nearest, d1, _ = nearest_and_rivals(d, hashes, 0)
        return nearest, d1 / own_nearest(train, hashes, k)[nearest]
    return rule


def skip_nearer_the_source(d: np.ndarray, hashes: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    nearest, d1, _ = nearest_and_rivals(d, hashes, 0)
    rivals = (hashes[None] != hashes[nearest][:, None]) & (train[nearest] > d1[:, None])
    return nearest, d1 / np.where(rivals, d, np.inf).min(axis=1)


#: name -> (rule, which distances: "" the product's d, " 16" / " 32" the finer views)
RULES: dict[str, tuple[Rule | None, str]] = {
    "r (before)": (ratio(0), ""),
    "r, runner-up skipped (before e)": (ratio(1), ""),
    "r, 2 skipped": (ratio(2), ""),
    "r, skip j with d(y,j) <= d(x,y)": (skip_nearer_the_source, ""),
    "s = d(x,y) / d(y, nn(y))": (source_relative(1), ""),
    "s2 = d(x,y) / d(y, 2nd nn(y))": (source_relative(2), ""),
    "finer view 16: r": (ratio(0), " 16"),
    "finer view 16: r, runner-up skipped": (ratio(1), " 16"),
    "finer view 32: r": (ratio(0), " 32"),
    "finer view 32: r, runner-up skipped": (ratio(1), " 32"),
    "r or pixel ratio (before j)": (None, "d e"),
    "r, pixel or JPEG ratio (now)": (None, "d e j"),
}


def scores(worlds: list[dict[str, np.ndarray]], rule: Rule | None, which: str) -> list[tuple[np.ndarray, ...]]:
    """Per world: the rule's value and nearest for the scored images and for the training images (the null).

    ``rule`` None: the smallest ratio over the distances ``which`` names
    ("d e": d and e; "d e j": d, e and j, the product's rule; :func:`smallest_ratio`).
    """
    out = []
    for w in worlds:
        if rule is None:
            distances = PRODUCT[: len(which.split())]
            nearest, value = smallest_ratio(w, "scored", distances)
            out.append((nearest, value, smallest_ratio(w, "train", distances)[1]))
            continue
        nearest, value = rule(w["scored" + which], w["train_hashes"], w["train" + which])
        _, null = rule(w["train" + which], w["train_hashes"], w["train" + which])
        out.append((nearest, value, null))
    return out


def line(worlds: list[dict[str, np.ndarray]], found: list[tuple[np.ndarray, ...]], threshold: float) -> str:
    hits = dict.fromkeys(KINDS, 0)
    totals = dict.fromkeys(KINDS, 0)
    clean = n_clean = null = n_train = 0
    for w, (nearest, value, null_value) in zip(worlds, found):
        n = int(w["n_clean"])
        clean, n_clean = clean + int(np.sum(value[:n] <= threshold)), n_clean + n
        null, n_train = null + int(np.sum(null_value <= threshold)), n_train + len(null_value)
        for i, (source, kind) in enumerate(zip(w["source"], w["kind"])):
            if kind in hits:
                totals[kind] += 1
                hits[kind] += int(value[n + i] <= threshold and nearest[n + i] == source)
    return ("".join(f"{hits[k]:>5}/{totals[k]:<5}" for k in KINDS)
            + f"{clean:>7}/{n_clean:<6}{null / n_train:>8.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", default=str(Path(tempfile.gettempdir()) / "fitaudit-leakage-image-rules"))
    parser.add_argument("--out", default="benchmarks/validity/results/leakage_image_rules.txt")
    args = parser.parse_args()
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    worlds = [world_distances(size, rgb, seed, cache) for size, rgb, seed in WORLDS]
    names = ", ".join(f"{size} px {'RGB' if rgb else 'grey'} seed {seed}" for size, rgb, seed in WORLDS)
    lines = [f"Five worlds of photo crops ({names}): "
             "planted twins found and paired with their source, of 75 per kind; clean crops flagged; the training "
             "images' own share within the threshold (the null)", "",
             f"{'rule':<38}{'threshold':<22}" + "".join(f"{k:<11}" for k in KINDS) + f"{'clean':>13}{'null':>8}"]
    for name, (rule, which) in RULES.items():
        found = scores(worlds, rule, which)
        clean = np.concatenate([value[: int(w["n_clean"])] for w, (_, value, _) in zip(worlds, found)])
        at_rate = float(np.quantile(clean, 0.01, method="inverted_cdf"))
        for label, threshold in [(f"{t}", t) for t in FIXED] + [(f"{at_rate:.3f} (1% clean)", at_rate)]:
            lines.append(f"{name:<38}{label:<22}" + line(worlds, found, threshold))
    ceiling = dict.fromkeys(KINDS, 0)
    either = dict.fromkeys(KINDS, 0)
    for w in worlds:
        nearest = np.argmin(w["scored"], axis=1)
        by_pixels = np.argmin(w["scored pixels"], axis=1)
        by_lattice = np.argmin(w["scored lattice"], axis=1)
        n = int(w["n_clean"])
        for i, (source, kind) in enumerate(zip(w["source"], w["kind"])):
            if kind in ceiling:
                ceiling[kind] += int(w["train_hashes"][nearest[n + i]] == w["train_hashes"][source])
                either[kind] += int(w["train_hashes"][source]
                                    in w["train_hashes"][[nearest[n + i], by_pixels[n + i], by_lattice[n + i]]])
    lines += ["", "The null of s and s2 is not comparable: a training image's nearest y usually has the image itself "
              "as its own nearest, so s is near 1 for every natural near twin in training.",
              "Ceiling: twins whose nearest training image under d is their source (no ratio rule pairs more): "
              + ", ".join(f"{k} {ceiling[k]}/75" for k in KINDS),
              "Ceiling of the product's rule: twins whose nearest training image under d, or under e or j among the "
              "12 nearest by d, is their source: " + ", ".join(f"{k} {either[k]}/75" for k in KINDS)]
    lines += ["", "Twins the product's rule (r, pixel or JPEG ratio, 0.4) misses or pairs with another image: the ratio "
              "under d, e and j, the image it is paired with, and the source's spread (standard deviation of its "
              "luminance, grey levels of 255)"]
    for (size, rgb, seed), w in zip(WORLDS, worlds):
        nearest, value = smallest_ratio(w, "scored", PRODUCT)
        by_view, by_pixels, by_lattice = (ratio(1)(w["scored" + which], w["train_hashes"], w["train"])[1]
                                          for which in PRODUCT)
        train = photo_world(size, rgb=rgb, seed=seed, per_kind=15).train
        n = int(w["n_clean"])
        for i, (source, kind) in enumerate(zip(w["source"], w["kind"])):
            row = n + i
            if value[row] <= image_search.RELATIVE_THRESHOLD and nearest[row] == source:
                continue
            paired = "its source" if nearest[row] == source else f"training image {nearest[row]}"
            spread = 255 * float(np.std(residual.fine_images(train[source : source + 1])))
            lines.append(f"  {size} px {'RGB' if rgb else 'grey'} seed {seed}  {kind:<10}  r under d {by_view[row]:.3f}, "
                         f"under e {by_pixels[row]:.3f}, under j {by_lattice[row]:.3f}, nearest {paired}; "
                         f"source spread {spread:.1f}")
    text = "\n".join(lines)
    print(text)
    Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
