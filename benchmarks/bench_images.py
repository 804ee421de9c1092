"""Image folders and the overfitting test under the paper's ImageNet protocol: speed and memory.

Werpachowski et al. (NeurIPS 2019), Sec. 5: ImageNet models evaluated through
resize 256 / centre crop 224, translational AEG with eps = 5 (P = 16). Four
measurements, printed side by side in one run:

1. **Decoding + pipeline throughput** (:meth:`fitaudit.data.images.ImageDataset.batches`:
   decode, resize the shorter side to 256 bilinear antialiased, centre crop
   224, normalise; 2 decoding threads) against Pillow's plain decode of the
   same JPEG files (``Image.open(p).convert("RGB")`` in a loop, one thread).
   Target: >= 80%. Files: 500x375 JPEGs (ImageNet's typical size) of smooth
   random pictures, quality 90; best of 3 interleaved rounds.
2. **The overfitting test at C = 224, eps = 5** (strongest AEG) on ResNet-18
   (``resnet18`` of :mod:`fitaudit.models.torch_nets`, 1000 classes,
   untrained: the evaluation count and time do not depend on the weights)
   through :func:`fitaudit.overfit.images.overfit_test_images` on a folder:
   model evaluations per image (target <= 441 = (4 eps + 1)^2) and wall time
   over a plain batched forward pass of the same adapter over as many 224x224
   crops (target <= 1.3).
3. **Peak memory against the number of images** (1,000 and 10,000 small
   PNG/JPEG images, 64 px, resize 64 / crop 56, eps = 1, a linear model),
   each size in a fresh process: Python allocations' peak (tracemalloc, which
   numpy reports to) and the process's peak resident size (VmHWM). Target:
   within 10% of flat.
4. **Projected time for ImageNet's 50,000 validation images** on this CPU:
   (decode time per image from 1. + test time per image from 2.) x 50,000.

Run: ``python benchmarks/bench_images.py [--quick] [--threads N]``; output
saved in ``benchmarks/results/images.txt``.
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

import numpy as np


def write_pictures(folder: Path, n: int, size: tuple[int, int], *, seed: int, classes: int = 4) -> None:
    """``folder/<class>/<i>.jpg|png``: smooth random pictures (noise upsampled bicubic)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    for i in range(n):
        small = rng.integers(0, 256, (size[1] // 8, size[0] // 8, 3), dtype=np.uint8)
        picture = Image.fromarray(small).resize(size, Image.BICUBIC)
        target = folder / f"c{i % classes}"
        target.mkdir(parents=True, exist_ok=True)
        as_jpeg = size[0] > 100 or i % 2  # large pictures all JPEG (like ImageNet), small ones alternate
        if as_jpeg:
            picture.save(target / f"{i:05d}.jpg", "JPEG", quality=90)
        else:
            picture.save(target / f"{i:05d}.png", "PNG")


def throughput(folder: Path) -> dict[str, float]:
    """Images per second: plain Pillow decode (1 thread) and the pipeline (1 and 2 threads)."""
    from PIL import Image

    from fitaudit.data.images import open_images
    from fitaudit.data.pipeline import IMAGENET_MEAN, IMAGENET_STD, EvalPipeline

    data = open_images(folder)
    pipeline = EvalPipeline(resize=256, crop=224, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    rates: dict[str, float] = {"plain": 0.0, "pipeline_1": 0.0, "pipeline_2": 0.0}
    for _ in range(3):  # interleaved rounds, best of 3 (the first also warms the file cache)
        began = time.perf_counter()
        for path in data.paths:
            with Image.open(path) as image:
                image.convert("RGB")
        rates["plain"] = max(rates["plain"], len(data) / (time.perf_counter() - began))
        for workers in (1, 2):
            began = time.perf_counter()
            n = sum(len(b.index) for b in data.batches(pipeline, kind="input", batch_size=64, decode_threads=workers))
            rates[f"pipeline_{workers}"] = max(rates[f"pipeline_{workers}"], n / (time.perf_counter() - began))
    return rates


def overfit_at_224(folder: Path, m: int) -> dict[str, float]:
    """The test at C = 224, eps = 5 on ResNet-18, against a plain forward pass over as many crops."""
    import torch

    from fitaudit.data.images import open_images
    from fitaudit.data.pipeline import IMAGENET_MEAN, IMAGENET_STD, EvalPipeline
    from fitaudit.models import as_classifier
    from fitaudit.models.architectures import build_architecture
    from fitaudit.overfit.images import overfit_test_images

    torch.manual_seed(0)
    net = build_architecture({"architecture": "resnet18", "kwargs": {"n_classes": 1000}}).eval()
    model = as_classifier(net, n_classes=1000, batch_size=64)
    data = open_images(folder)
    data = data.subset(np.arange(m))
    pipeline = EvalPipeline(resize=256, crop=224, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    assert pipeline.default_eps() == 5
    model.logits(np.zeros((2, 3, 224, 224), np.float32))  # warm up (and let the adapter pick its backend)
    with torch.inference_mode():
        began = time.perf_counter()
        run = overfit_test_images([model], data, pipeline, batch_size=m, model_batch_size=64)
        test_seconds = time.perf_counter() - began
        evaluations = run.evaluations[0]
        crops = np.random.default_rng(0).normal(size=(64, 3, 224, 224)).astype(np.float32)
        began = time.perf_counter()
        done = 0
        while done < evaluations:
            take = min(64, evaluations - done)
            model.logits(crops[:take])
            done += take
        forward_seconds = time.perf_counter() - began
    return {
        "m": m, "evaluations_per_image": evaluations / m, "test_s": test_seconds,
        "forward_s": forward_seconds, "ratio": test_seconds / forward_seconds,
        "backend": str((getattr(model, "inference_info", None) or {}).get("backend", "torch")),
    }


def memory_child(folder: str) -> None:
    """Run the streamed test on ``folder`` and print its peak memory as JSON (run in a fresh process)."""
    import tracemalloc

    import torch

    from fitaudit.data.images import open_images
    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.models import as_classifier
    from fitaudit.overfit.images import overfit_test_images

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 56 * 56, 4)).eval()
    model = as_classifier(net, n_classes=4, batch_size=256, backend="torch")
    pipeline = EvalPipeline(resize=64, crop=56)
    data = open_images(folder)
    model.logits(np.zeros((2, 3, 56, 56), np.float32))
    tracemalloc.start()
    with torch.inference_mode():
        run = overfit_test_images([model], data, pipeline, eps=1, batch_size=64)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    status = Path("/proc/self/status").read_text()  # VmHWM: this process's peak RSS (ru_maxrss survives exec)
    high_water = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))
    print(json.dumps({"m": run.n_scored, "traced_peak_mb": peak / 2**20, "maxrss_mb": high_water / 1024,
                      "pvalue": run.pvalue}))


def memory_curve(root: Path, sizes: list[int], threads: int) -> list[dict[str, float]]:
    rows = []
    for n in sizes:
        folder = root / f"small-{n}"
        write_pictures(folder, n, (64, 64), seed=n)
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        out = subprocess.run(
            [sys.executable, __file__, "--memory-child", str(folder)], capture_output=True, text=True,
            check=True, env=env,
        ).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer images (about 3 minutes)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child)
        return
    import torch

    torch.set_num_threads(args.threads)
    n_decode, m_test = (120, 2) if args.quick else (400, 4)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_pictures(root / "large", n_decode, (500, 375), seed=0)
        rates = throughput(root / "large")
        test = overfit_at_224(root / "large", m_test)
        memory = memory_curve(root, [1000, 10000], args.threads)
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"python benchmarks/bench_images.py{' --quick' if args.quick else ''}  (torch {args.threads} thread(s), "
          f"{os.cpu_count()} cores; load average at the end {load})")
    print("\n== 1. decode + pipeline (resize 256, crop 224, normalise) vs plain Pillow decode, "
          f"{n_decode} JPEGs 500x375 ==")
    print(f"{'':28s}{'images/s':>10s}{'vs plain':>10s}")
    print(f"{'plain Pillow decode, 1 thr':28s}{rates['plain']:10.1f}{1.0:10.2f}")
    for workers in (1, 2):
        rate = rates[f"pipeline_{workers}"]
        print(f"{f'pipeline, {workers} thread(s)':28s}{rate:10.1f}{rate / rates['plain']:10.2f}")
    verdict = "met" if rates["pipeline_2"] / rates["plain"] >= 0.8 else "NOT met"
    print(f"target >= 0.80 with 2 threads: {verdict}")
    print(f"\n== 2. overfitting test, strongest AEG, C = 224, eps = 5, ResNet-18 (1000 classes), m = {test['m']} ==")
    print(f"model evaluations per image: {test['evaluations_per_image']:.0f} (target <= 441)")
    print(f"test {test['test_s']:.1f} s vs plain forward over as many crops {test['forward_s']:.1f} s: "
          f"ratio {test['ratio']:.2f} (target <= 1.3; backend {test['backend']})")
    print("\n== 3. peak memory of the streamed test vs number of images (64 px files, crop 56, eps = 1) ==")
    print(f"{'images':>8s}{'traced peak MB':>16s}{'max RSS MB':>12s}")
    for row in memory:
        print(f"{row['m']:8d}{row['traced_peak_mb']:16.1f}{row['maxrss_mb']:12.1f}")
    growth = memory[-1]["traced_peak_mb"] / memory[0]["traced_peak_mb"] - 1
    rss_growth = memory[-1]["maxrss_mb"] / memory[0]["maxrss_mb"] - 1
    print(f"growth 1,000 -> 10,000: traced {growth:+.1%}, RSS {rss_growth:+.1%} (target within 10%)")
    per_image = 1 / rates["pipeline_2"] + test["test_s"] / test["m"]
    print("\n== 4. projection: ImageNet validation, 50,000 images, this CPU ==")
    print(f"{per_image:.2f} s per image (decode {1 / rates['pipeline_2']:.3f} s + test "
          f"{test['test_s'] / test['m']:.2f} s) -> {50000 * per_image / 3600:.0f} hours at "
          f"{args.threads} torch thread(s)")


if __name__ == "__main__":
    main()
