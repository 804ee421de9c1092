"""JPEG twins at other qualities, and in photo folders that are all JPEG: what the image leakage search finds.

The worlds of ``leakage_image_rules.py`` (:mod:`photo_world`: crops of
scikit-image's photographs, 600 training and 600 unseen crops, 15 planted
twins of each kind; 66-pixel grey with three seeds, 32-pixel RGB, 224-pixel
grey). The JPEG twins are made again at each quality of ``--qualities``
(Pillow, 4:2:0 colour for RGB), and, as photo collections are stored, a
variant where every file is a JPEG at quality 90, as photo collections
are: training and unseen crops, re-crops and relit crops, while the JPEG
twins are training files re-saved at quality 75 and the copies are
training files. For each,
fitaudit's search as the product runs it
(:func:`fitaudit.leakage.image_search.nearest_twins`, relative distance, the
default threshold 0.4): JPEG twins found *and* paired with their source (of
75), the other kinds, and the clean crops flagged (of 3,000); and the same
without the JPEG lattice distance j (d and e alone), to show what j adds.

Run: ``python benchmarks/validity/leakage_jpeg_qualities.py`` (output in
``benchmarks/validity/results/leakage_jpeg_qualities.txt``; about two
minutes on two cores).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent)]

from photo_world import KINDS, _jpeg, photo_world  # noqa: E402

from fitaudit.leakage import image_features, image_search, image_space  # noqa: E402

WORLDS = [(66, False, 0), (32, True, 0), (224, False, 0), (66, False, 1), (66, False, 2)]


def variant(world, twin_quality: int, stored_quality: int | None):
    """The world's training, unseen and twin images with JPEG twins at ``twin_quality`` (and every file a JPEG
    at ``stored_quality`` when given)."""
    train, unseen, twins = world.train, world.unseen, world.twins.copy()
    if stored_quality is not None:
        train = np.stack([_jpeg(image, stored_quality) for image in train])
        unseen = np.stack([_jpeg(image, stored_quality) for image in unseen])
    for i, (source, kind) in enumerate(zip(world.source, world.kind)):
        if kind == "jpeg":
            twins[i] = _jpeg(train[source], twin_quality)
        elif kind == "copy":
            twins[i] = train[source]
        elif stored_quality is not None:  # a re-crop or a relit crop, saved as JPEG like every other file
            twins[i] = _jpeg(twins[i], stored_quality)
    return train, unseen, twins


def counts(world, train, unseen, twins, with_lattice: bool) -> tuple[dict[str, int], int]:
    """Twins found and paired per kind, and clean crops flagged, at the default threshold."""
    reference, scored = image_features(train), image_features(np.concatenate([unseen, twins]))
    if not with_lattice:
        scored = image_space.ImageFeatures(scored.hashes, scored.work, scored.shape, fine=scored.fine, grid=scored.grid)
    floor = image_space.contrast_floor(reference.raw_views)
    ratio, index = image_search.nearest_twins(scored, reference, floor=floor, relative=True)
    flagged = ratio <= image_search.RELATIVE_THRESHOLD
    n = len(unseen)
    paired = flagged[n:] & (reference.hashes[np.maximum(index[n:], 0)] == reference.hashes[world.source])
    return {kind: int(np.sum(paired & (world.kind == kind))) for kind in KINDS}, int(np.sum(flagged[:n]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qualities", type=int, nargs="+", default=[50, 60, 75, 87, 95])
    parser.add_argument("--out", default="benchmarks/validity/results/leakage_jpeg_qualities.txt")
    args = parser.parse_args()
    worlds = [photo_world(size, rgb=rgb, seed=seed, per_kind=15) for size, rgb, seed in WORLDS]
    settings = [(f"twins at quality {q}", q, None) for q in args.qualities]
    settings.append(("all files JPEG 90, twins re-saved at 75", 75, 90))
    lines = ["Five worlds of photo crops (66 px grey seeds 0-2, 32 px RGB, 224 px grey): twins found and paired with "
             "their source at the default threshold (of 75 per kind), clean crops flagged (of 3,000)", "",
             f"{'setting':<42}{'distances':<12}" + "".join(f"{k:>12}" for k in KINDS) + f"{'clean':>10}"]
    for label, twin_quality, stored_quality in settings:
        for with_lattice in (True, False):
            found, clean = dict.fromkeys(KINDS, 0), 0
            for world in worlds:
                per_kind, flagged = counts(world, *variant(world, twin_quality, stored_quality), with_lattice)
                found = {k: found[k] + per_kind[k] for k in KINDS}
                clean += flagged
            lines.append(f"{label:<42}{'d, e, j' if with_lattice else 'd, e':<12}"
                         + "".join(f"{found[k]:>9}/75" for k in KINDS) + f"{clean:>6}/3000")
            print(lines[-1], flush=True)
    Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
