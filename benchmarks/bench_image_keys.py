"""How long keying an image folder takes: by file sizes and times vs by content (``--verify-content``).

Chooses :data:`fitaudit.data.images.CONTENT_KEY_LIMIT` (the size under which
folders are keyed by content by default). Writes folders of random-pixel
PNG files (incompressible, so their size is what is read) of increasing
total size and prints, side by side, the seconds of each rule and the
throughput of content hashing::

    python benchmarks/bench_image_keys.py [--sizes-mb 16 64 256] [--out benchmarks/results/image_keys.txt]
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import tempfile
from pathlib import Path

import numpy as np

from _results import emit, timed


def _write_folder(root: Path, megabytes: int) -> int:
    """PNG files of 256 x 256 random RGB pixels (about 197 KB each) into two classes; returns the bytes written."""
    from PIL import Image

    rng = np.random.default_rng(0)
    total, i = 0, 0
    while total < megabytes * 2**20:
        folder = root / ("a" if i % 2 else "b")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{i:05d}.png"
        Image.fromarray(rng.integers(0, 256, (256, 256, 3), dtype=np.uint8)).save(path, compress_level=1)
        total += path.stat().st_size
        i += 1
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    from fitaudit.data.images import CONTENT_KEY_LIMIT, open_images

    lines = [f"{'folder':>10} {'files':>6} {'by size+time s':>15} {'by content s':>13} {'content MB/s':>13}"]
    for size in args.sizes_mb:
        root = Path(tempfile.mkdtemp(prefix="fitaudit-keys-"))
        try:
            written = _write_folder(root, size)
            dataset = open_images(root)
            seconds = {rule: timed(dataclasses.replace(dataset, verify_content=rule).fingerprint)[0]
                       for rule in (False, True)}
            lines.append(f"{written / 2**20:>8.0f}MB {len(dataset):>6} {seconds[False]:>15.3f} {seconds[True]:>13.3f} "
                         f"{written / 2**20 / seconds[True]:>13.0f}")
        finally:
            shutil.rmtree(root, ignore_errors=True)
    lines.append(f"default rule: by content up to {CONTENT_KEY_LIMIT // 2**20} MB (page cache warm: files just written)")
    emit(lines, args.out)


if __name__ == "__main__":
    main()
