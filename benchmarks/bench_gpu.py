"""The overfitting test, the examiner and the leakage search on a GPU, each against plain forward passes.

Werpachowski et al. (NeurIPS 2019), Sec. 5: the translational AEG on
ImageNet-style images (resize 256, centre crop 224, margin 16, eps = 5,
strongest AEG: 441 model evaluations per image). Runs from a bare machine
(no download): it builds

* a Hugging Face ResNet-50 ``save_pretrained`` folder (random weights, 10
  classes) with a ConvNext image processor (shortest edge 224, crop_pct
  0.875, bicubic, ImageNet mean/std: fitaudit reads resize 256, crop 224);
* 300 smooth random 500x375 JPEGs whose labels are the model's own
  predictions with 10% changed;

then runs, as a user would and timed from the outside,

    fitaudit overfit --model resnet50/ --images imgs/ --device cuda --decode-threads 8 --json --quiet

and times plain forward passes of the same network in the same run: fp32
(exact: TF32 off) and bf16 (autocast + channels_last), batch 256. Prints
the test's cost over a plain forward pass at the precision the test chose
(recorded in its JSON) and at fp32: for the whole command, and for its
marginal cost per image (the command is also run on a third of the images,
listed in a CSV: the difference of the two runs is the cost of the other
two thirds, free of the fixed costs of starting, loading the model and
choosing its runner), the projection to ImageNet's 50,000
validation images (x 441 evaluations), and the same for the examiner (BO,
30 steps, 8 images) and the leakage search (the folder against itself),
each against a plain fp32 forward pass over as many images as it scored.
Targets (issue 39): the test <= 1.3x a plain forward pass at its precision,
the projection <= 40 minutes, the examiner and the leakage search <= 1.5x.

``--small`` makes every size tiny (a 4-stage ResNet of width 8, 40 images
of 100x75, shortest edge 56 -> resize 64, crop 56, eps = 1) so that the
whole benchmark runs on a CPU in a few minutes (``--device cpu``): a smoke
run of the same code, whose numbers say nothing about a GPU.

Run: ``python benchmarks/bench_gpu.py [--device cuda] [--small] [--out FILE]``;
results go to ``benchmarks/results/gpu.txt`` (``gpu_cpu_smoke.txt`` on a CPU)
with the device's name.
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

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]
N_CLASSES = 10
PAPER_IMAGES = 50_000


def build_model(folder: Path, *, small: bool, seed: int = 0) -> int:
    """The ResNet save_pretrained folder with its image processor; returns the processor's shortest edge."""
    import torch
    from PIL import Image
    from transformers import ConvNextImageProcessor, ResNetConfig, ResNetForImageClassification

    labels = {"id2label": {i: f"c{i}" for i in range(N_CLASSES)}, "label2id": {f"c{i}": i for i in range(N_CLASSES)}}
    if small:
        config = ResNetConfig(embedding_size=8, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1], layer_type="basic",
                              num_labels=N_CLASSES, **labels)
    else:  # the defaults are ResNet-50: bottleneck blocks, depths 3-4-6-3, widths 256-2048
        config = ResNetConfig(num_labels=N_CLASSES, **labels)
    torch.manual_seed(seed)
    ResNetForImageClassification(config).eval().save_pretrained(folder)
    edge = 56 if small else 224
    ConvNextImageProcessor(size={"shortest_edge": edge}, crop_pct=0.875, resample=Image.BICUBIC,
                           image_mean=IMAGENET_MEAN, image_std=IMAGENET_STD).save_pretrained(folder)
    return edge


def build_images(root: Path, model_dir: Path, *, n: int, size: tuple[int, int], device: str, seed: int = 0) -> None:
    """``root/c<label>/<i>.jpg``: smooth random pictures labelled with the model's predictions, 10% changed."""
    from PIL import Image

    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.models import load_model
    from fitaudit.models.formats.hf import recorded_pipeline

    rng = np.random.default_rng(seed)
    staging = root.parent / "staging"
    staging.mkdir(parents=True)
    paths = []
    for i in range(n):
        small = rng.integers(0, 256, (size[1] // 8, size[0] // 8, 3), dtype=np.uint8)
        path = staging / f"{i:05d}.jpg"
        Image.fromarray(small).resize(size, Image.BICUBIC).save(path, "JPEG", quality=90)
        paths.append(path)
    pipeline = EvalPipeline.from_dict(recorded_pipeline(model_dir))
    model = load_model(model_dir, device=device)
    inputs = np.stack([pipeline.model_input(Image.open(p)) for p in paths])
    labels = np.concatenate([model.predict(inputs[i : i + 64]) for i in range(0, n, 64)])
    changed = rng.random(n) < 0.1
    labels[changed] = (labels[changed] + rng.integers(1, N_CLASSES, int(changed.sum()))) % N_CLASSES
    for path, label in zip(paths, labels):
        target = root / f"c{label}"
        target.mkdir(parents=True, exist_ok=True)
        path.rename(target / path.name)


def forward_rates(model_dir: Path, *, side: int, device: str, rows: int, batch: int = 256) -> dict[str, float]:
    """Crops per second of plain forward passes of the same network: exact fp32, and bf16 autocast + channels_last."""
    import copy

    import torch

    from fitaudit.models import load_model
    from fitaudit.models.inference.runners import tensor_float32

    module = load_model(model_dir, device=device).model
    target = torch.device(device)
    x = torch.randn(batch, 3, side, side, device=target)
    last = copy.deepcopy(module).to(memory_format=torch.channels_last)
    bf16 = torch.autocast(target.type, dtype=torch.bfloat16)
    rates = {}
    for name, net, data, autocast in (("fp32", module, x, None),
                                      ("bf16", last, x.contiguous(memory_format=torch.channels_last), bf16)):
        def run(net: Any = net, data: Any = data, autocast: Any = autocast) -> None:
            with torch.inference_mode(), tensor_float32(torch, target, False):
                if autocast is None:
                    net(data)
                else:
                    with autocast:
                        net(data)
        run()  # warm-up
        if target.type == "cuda":
            torch.cuda.synchronize()
        calls = max(1, rows // batch)
        began = time.perf_counter()
        for _ in range(calls):
            run()
        if target.type == "cuda":
            torch.cuda.synchronize()
        rates[name] = calls * batch / (time.perf_counter() - began)
    return rates


def timed_cli(*argv: str) -> tuple[dict[str, Any], float]:
    """The JSON a fitaudit command prints and the command's wall time (a fresh process, as a user runs it)."""
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "fitaudit", *argv], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"fitaudit {' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout), seconds


def write_subset(folder: Path, csv_file: Path, *, fraction: float) -> str:
    """A CSV ``path,label`` of every ``1 / fraction``-th image of ``folder`` (labels: the class folders' names)."""
    files = sorted(folder.glob("*/*.jpg"))
    rows = [f"{path},{path.parent.name}" for path in files[:: round(1 / fraction)]]
    csv_file.write_text("path,label\n" + "\n".join(rows) + "\n")
    return str(csv_file)


def device_name(device: str) -> str:
    import platform

    import torch

    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.get_num_threads()} threads)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="torch device (default cuda)")
    parser.add_argument("--small", action="store_true", help="tiny sizes: a smoke run on a CPU")
    parser.add_argument("--decode-threads", type=int, default=8, help="decoding threads of the commands (default 8)")
    parser.add_argument("--out", help="results file (default benchmarks/results/gpu.txt, gpu_cpu_smoke.txt on a CPU)")
    args = parser.parse_args()
    n, size = (40, (100, 75)) if args.small else (300, (500, 375))
    forward_rows = 512 if args.small else 10_240
    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ.setdefault("FITAUDIT_CACHE_DIR", str(root / "cache"))  # a bare machine: no cached choice
        began = time.perf_counter()
        side = build_model(root / "resnet", small=args.small)
        build_images(root / "imgs", root / "resnet", n=n, size=size, device=args.device)
        built = time.perf_counter() - began
        common = ["--model", str(root / "resnet"), "--images", str(root / "imgs"), "--device", args.device,
                  "--json", "--quiet"]
        test, test_s = timed_cli("overfit", *common, "--decode-threads", str(args.decode_threads))
        third = write_subset(root / "imgs", root / "third.csv", fraction=1 / 3)
        part, part_s = timed_cli("overfit", *[third if a == str(root / "imgs") else a for a in common],
                                 "--decode-threads", str(args.decode_threads))
        rates = forward_rates(root / "resnet", side=side, device=args.device, rows=forward_rows)
        exam, exam_s = timed_cli("examine", *common, "--examiner", "bo", "--steps", "30", "--instances", "8")
        leak, leak_s = timed_cli("leakage", "--images", str(root / "imgs"), "--train-images", str(root / "imgs"),
                                 "--model", str(root / "resnet"), "--device", args.device, "--json", "--quiet")
    m = int(test["m"])
    evaluations = int(round(test["runs"][0]["evaluations_per_example"] * m))
    record = test.get("inference") or {}
    precision = str(record.get("precision") or "fp32")
    same = rates["bf16"] if precision == "bf16" else rates["fp32"]
    label = "CPU SMOKE RUN (tiny sizes; says nothing about a GPU)" if not args.device.startswith("cuda") else "GPU"
    say(f"python benchmarks/bench_gpu.py --device {args.device}{' --small' if args.small else ''}  [{label}]")
    say(f"device: {device_name(args.device)}; torch threads {os.environ.get('OMP_NUM_THREADS', 'default')}; "
        f"model and {n} images built in {built:.1f} s")
    say(f"model: {'tiny ResNet (width 8)' if args.small else 'ResNet-50'} (HF save_pretrained, random weights, "
        f"{N_CLASSES} classes); pipeline {test['pipeline']['resize']}/{test['pipeline']['crop']}, "
        f"eps = {test['eps']}, margin = {test['margin']}")
    say()
    say(f"== fitaudit overfit (strongest AEG): {m} images, {evaluations} evaluations "
        f"({evaluations / m:.0f} per image); p = {test['pvalue']:.3g} ==")
    say(f"model run: {json.dumps(record, sort_keys=True)}")
    test_rate = evaluations / test_s
    say(f"{'what':52s}{'seconds':>10s}{'crops/s':>12s}{'vs test':>9s}")
    say(f"{'fitaudit overfit, the whole command (wall)':52s}{test_s:10.1f}{test_rate:12.0f}{1.0:9.2f}")
    for name, rate in rates.items():
        what = f"plain forward {name}" + (" (autocast + channels_last)" if name == "bf16" else " (exact, TF32 off)")
        say(f"{what + ', batch 256':52s}{evaluations / rate:10.1f}{rate:12.0f}{test_s / (evaluations / rate):9.2f}")
    ratio = test_s * same / evaluations
    say(f"whole command / plain forward at its precision ({precision}): {ratio:.2f}")
    part_m = int(part["m"])
    part_evaluations = int(round(part["runs"][0]["evaluations_per_example"] * part_m))
    extra_s, extra_evaluations = test_s - part_s, evaluations - part_evaluations
    if extra_s > 0 and m > part_m:
        fixed_s = max(0.0, part_s - extra_s * part_m / (m - part_m))
        say(f"the same command on {part_m} of the images: {part_s:.1f} s; the other {m - part_m} images cost "
            f"{extra_s:.1f} s for {extra_evaluations} evaluations ({extra_evaluations / extra_s:.0f} crops/s): "
            f"marginal cost / plain forward at {precision}: {extra_s * same / max(extra_evaluations, 1):.2f} "
            f"(target <= 1.3); fixed cost about {fixed_s:.1f} s")
        per_image = extra_s / (m - part_m)
    else:  # noise in the fixed costs (a busy machine) exceeds the cost of the extra images
        fixed_s, per_image = 0.0, test_s / m
        say(f"the same command on {part_m} of the images: {part_s:.1f} s, not less than on all {m}: the fixed "
            "costs' noise hides the marginal cost; the projection below uses the whole command's time per image")
    say(f"projection to {PAPER_IMAGES:,} images x {evaluations / m:.0f} evaluations: test "
        f"{(fixed_s + PAPER_IMAGES * per_image) / 60:.1f} min; plain forward fp32 "
        f"{PAPER_IMAGES * evaluations / m / rates['fp32'] / 60:.1f} min, bf16 "
        f"{PAPER_IMAGES * evaluations / m / rates['bf16'] / 60:.1f} min (target <= 40 min)")
    say()
    queries = int(exam.get("n_queries") or exam.get("queries") or 8 * 30)
    plain = queries / rates["fp32"]
    say(f"== fitaudit examine --examiner bo --steps 30 --instances 8: {queries} queries ==")
    say(f"command {exam_s:.1f} s vs plain fp32 forward over {queries} images {plain:.2f} s: "
        f"{exam_s / plain:.1f}x (target <= 1.5)")
    scored = 2 * m
    plain = scored / rates["fp32"]
    say(f"== fitaudit leakage, the folder against itself ({scored} images' features) ==")
    say(f"command {leak_s:.1f} s vs plain fp32 forward over {scored} images {plain:.2f} s: "
        f"{leak_s / plain:.1f}x (target <= 1.5); verdict {leak.get('verdict', {}).get('status')}")
    default = "gpu.txt" if args.device.startswith("cuda") else "gpu_cpu_smoke.txt"
    out = Path(args.out) if args.out else Path(__file__).parent / "results" / default
    out.write_text("\n".join(lines) + "\n")
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
