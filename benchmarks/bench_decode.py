"""Does decoding keep up with the model? Decoded images per second against the model's consumption.

Issue 39, item 3: decoding threads default to the machine's cores
(``fitaudit overfit --decode-threads``, :data:`fitaudit.cli._common.DECODE_THREADS`).
Measured in one run on the same files (500x375 JPEGs, smooth random
pictures, quality 90, as ``bench_images.py`` writes them):

1. **Decode rate**: images per second through
   :meth:`fitaudit.data.images.ImageDataset.batches` (decode, resize 256,
   the canvas of the centre 224 crop with its P = 16 margin: what the
   overfitting test decodes) with 1 thread and with every core; best of 3.
2. **The model's consumption**: ResNet-18 (``resnet18`` of
   :mod:`fitaudit.models.torch_nets`, 1000 classes, untrained) through the
   torch adapter on ``--device`` at batch 64, in images per second it can
   take: plain scoring (one evaluation per image) and the overfitting test
   (strongest AEG, eps = 5: up to 441 evaluations per image).

Decoding keeps up when its rate is at least the consumption: the ratio
decode / consumption is printed for both. Run:
``python benchmarks/bench_decode.py [--images 48] [--device cpu]``;
output saved in ``benchmarks/results/decode.txt``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_images import write_pictures  # noqa: E402

#: model evaluations per image of the strongest translational AEG at eps = 5: (4 eps + 1)^2
EVALUATIONS_PER_IMAGE = 441


def decode_rates(folder: Path, threads: list[int]) -> dict[int, float]:
    """Images per second decoded into the overfitting test's canvases, by thread count (best of 3 rounds)."""
    from fitaudit.data.images import open_images
    from fitaudit.data.pipeline import IMAGENET_MEAN, IMAGENET_STD, EvalPipeline

    data = open_images(folder)
    pipeline = EvalPipeline(resize=256, crop=224, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    rates = dict.fromkeys(threads, 0.0)
    for _ in range(3):
        for n in threads:
            began = time.perf_counter()
            done = sum(len(b.index) for b in data.batches(pipeline, kind="canvas", batch_size=16, decode_threads=n))
            rates[n] = max(rates[n], done / (time.perf_counter() - began))
    return rates


def forward_rate(device: str, batches: int) -> float:
    """Rows per second of ResNet-18 on 224 x 224 crops through the adapter (best of ``batches`` batches of 64)."""
    import torch

    from fitaudit.models import as_classifier
    from fitaudit.models.architectures import build_architecture

    torch.manual_seed(0)
    net = build_architecture({"architecture": "resnet18", "kwargs": {"n_classes": 1000}})
    model = as_classifier(net, n_classes=1000, batch_size=64, device=device, backend="eager")
    crops = np.random.default_rng(0).normal(size=(64, 3, 224, 224)).astype(np.float32)
    model.logits(crops[:2])  # warm up
    best = 0.0
    for _ in range(batches):
        began = time.perf_counter()
        model.logits(crops)
        best = max(best, len(crops) / (time.perf_counter() - began))
    return best


def main() -> None:
    from fitaudit.cli._common import DECODE_THREADS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=48)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batches", type=int, default=3, help="forward batches timed (best counts)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_pictures(folder, args.images, (500, 375), seed=0)
        threads = sorted({1, DECODE_THREADS})
        decoded = decode_rates(folder, threads)
    rows = forward_rate(args.device, args.batches)
    consumption = {"plain scoring (1 evaluation / image)": rows,
                   f"overfitting test, eps 5 ({EVALUATIONS_PER_IMAGE} evaluations / image)": rows / EVALUATIONS_PER_IMAGE}
    lines = [f"decode vs model consumption, {args.images} JPEGs 500x375 -> canvases of 224 + 2 x 16 px; "
             f"ResNet-18 on {args.device}; {os.cpu_count()} cores, default decoding threads {DECODE_THREADS}, "
             f"load average {os.getloadavg()[0]:.1f} at the end",
             f"  forward pass: {rows:.1f} crops/s (batch 64, eager)"]
    lines += [f"  decoding, {n} thread(s): {rate:.1f} images/s" for n, rate in decoded.items()]
    best = decoded[DECODE_THREADS]
    for what, rate in consumption.items():
        lines.append(f"  {what}: the model takes {rate:.3g} images/s; decoding at {DECODE_THREADS} thread(s) "
                     f"gives {best / rate:.1f}x that ({'keeps up' if best >= rate else 'does NOT keep up'})")
    text = "\n".join(lines)
    print(text)
    results = Path(__file__).parent / "results" / "decode.txt"
    results.write_text(text + "\n")


if __name__ == "__main__":
    main()
