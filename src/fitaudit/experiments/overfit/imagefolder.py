"""The overfitting test as a user runs it on image folders (``fitaudit reproduce overfit-imagefolder``).

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 5 ran the
translational test on ImageNet models through the standard evaluation
transform (resize 256, centre crop 224, eps = 5). This check does the same on
the Shapes world, end to end through files and the command line:

1. renders free-position Shapes datasets
   (:func:`fitaudit.data.shapes.datasets.make_free_position_dataset`, 4
   classes, disjoint object instances in the training and the unseen set)
   at twice the evaluation resolution: each image is a canvas of side
   ``2 (C + 2P)`` with the object at a uniform position on a periodic
   canvas (``wrap=True``), and writes them as image folders
   ``root/<class>/<file>``, every other file JPEG (quality 95) and PNG;
2. decodes the training folder through the evaluation pipeline
   (:class:`fitaudit.data.pipeline.EvalPipeline`: resize the shorter side to
   ``R = C + 2P``, which halves the renders, bilinear and antialiased;
   centre crop C; no normalisation) and trains a Shapes CNN on the crops
   (:func:`fitaudit.models.training.train_classifier`, per-epoch
   checkpoints), then exports it to ONNX with its class names and pipeline
   as metadata (:func:`fitaudit.models.export_onnx`);
3. runs ``fitaudit overfit --model model.onnx --images FOLDER --json`` in a
   subprocess, exactly as a user would, on the training folder and on the
   unseen folder: the pipeline, the class order and the default
   ``eps = floor(P / 3)`` come from the model file.

Expected: the training folder is rejected (the model was fitted to it), the
unseen folder is not. (G3) holds up to the resize's edge pixels and, in the
JPEG files, the phase of the 8x8 compression blocks (fixed in the file, so a
shifted window sees them at another offset; at quality 95 a small effect,
and the same one every ImageNet JPEG has): the object's position is uniform
on the periodic canvas, and a shift of the window by one pixel of the
resized image is a cyclic shift by two pixels of the render.

Modes: ``"quick"`` (tests; 16x16 crops, a narrow CNN, 128 training images,
about 30 s) and ``"full"`` (32x32 crops, eps = 2, 1,600 training and 640
unseen images, 30 epochs). A rerun resumes from the checkpoints (training
epochs, and every batch of each test through ``--checkpoint-dir``).

Measured (full mode, seed 0, 320 s on a 2-core machine shared with about
eight other jobs; ``benchmarks/results/overfit_imagefolder_full/``): CNN
accuracy 0.773 on the training folder and 0.609 on unseen objects; the
training folder is rejected (R_S 0.227, R_g 0.261, p = 0.0031, m = 1,600),
the unseen folder is not (R_S 0.391, R_g 0.389, p = 1, m = 640); 81 model
evaluations per image ((4 eps + 1)^2 at eps = 2).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.checkpoint import CheckpointStore, check_folder, fingerprint
from fitaudit.experiments.base import Options, Run
from fitaudit.overfit.translation import DENSITY_WARNING
from fitaudit.random import spawn_seeds
from fitaudit.results import Result

if TYPE_CHECKING:
    from typing import Unpack

#: the two modes (crop C, margin P = 3 eps; renders at SCALE times the evaluation resolution)
SETTINGS: dict[str, dict[str, Any]] = {
    "quick": {
        "crop": 16, "object_size": 12, "eps": 1, "classes": ["sphere", "cube", "torus", "star"],
        "train_objects": 8, "test_objects": 8, "renders_per_object": 4,
        "architecture": "shapes_alexnet", "kwargs": {"width": 6}, "epochs": 6, "learning_rate": 3e-3,
    },
    "full": {
        "crop": 32, "object_size": 20, "eps": 2, "classes": ["sphere", "cube", "torus", "star"],
        "train_objects": 50, "test_objects": 20, "renders_per_object": 8,
        "architecture": "shapes_alexnet", "kwargs": {"width": 16}, "epochs": 30, "learning_rate": 3e-3,
    },
}

#: renders are this many times larger than the evaluation pipeline's resized images
SCALE = 2

#: the folders the command line is run on
SPLITS = ("train", "unseen")


@dataclasses.dataclass(repr=False)
class OverfitImageFolderReproduction(Result):
    """Numbers of the overfit-imagefolder check.

    Attributes
    ----------
    experiment : str
        ``"overfit-imagefolder"``.
    mode : {"quick", "full"}
    pipeline : dict
        The evaluation pipeline recorded in the model file (resize, crop, mean, std, margin).
    eps : int
        The shift the command chose (floor(P / 3)).
    render_size : int
        Side of the image files (SCALE times the resized canvas).
    classes : list of str
    n_images : dict
        Images per folder (``train``, ``unseen``), and ``jpeg``/``png`` files written.
    train_accuracy, unseen_accuracy : float
        Accuracy of the trained CNN on each folder's pipeline crops.
    training : dict
        Architecture, parameters, epochs, seconds.
    runs : dict
        Per folder: the command line run (``command``), and from its JSON
        ``pvalue``, ``reject``, ``risk_plain`` (R_S), ``risk_adversarial``,
        ``success_rate``, ``ci_pvalue``, ``m``, ``evaluations_per_example``,
        ``seconds``.
    seconds : float
        Wall time of this call (less when resumed from checkpoints).
    warning : str
        The (G3) condition.
    """

    experiment: str
    mode: str
    pipeline: dict[str, Any]
    eps: int
    render_size: int
    classes: list[str]
    n_images: dict[str, int]
    train_accuracy: float
    unseen_accuracy: float
    training: dict[str, Any]
    runs: dict[str, Any]
    seconds: float
    warning: str

    def _summary_fields(self) -> list[str]:
        return ["mode", "eps", "render_size", "n_images", "train_accuracy", "unseen_accuracy", "seconds"]


def write_image_folder(dataset: Any, root: Path) -> dict[str, int]:
    """Write a Shapes dataset's canvases as ``root/<class>/<i>.png|.jpg`` (every other file JPEG).

    Written to a temporary folder renamed at the end, so a killed run never
    leaves a half-written folder behind. Returns the counts of JPEG and PNG files.
    """
    image = import_optional("PIL.Image", "writing image folders")
    if root.is_dir():
        return {
            "jpeg": sum(1 for _ in root.rglob("*.jpg")), "png": sum(1 for _ in root.rglob("*.png"))
        }
    partial = root.with_name(root.name + ".partial")
    counts = {"jpeg": 0, "png": 0}
    pixels = np.clip(np.round(np.asarray(dataset.canvases) * 255), 0, 255).astype(np.uint8).transpose(0, 2, 3, 1)
    for i, (picture, label) in enumerate(zip(pixels, dataset.labels)):
        folder = partial / dataset.class_names[int(label)]
        folder.mkdir(parents=True, exist_ok=True)
        if i % 2:
            image.fromarray(picture).save(folder / f"{i:05d}.jpg", "JPEG", quality=95)
            counts["jpeg"] += 1
        else:
            image.fromarray(picture).save(folder / f"{i:05d}.png", "PNG")
            counts["png"] += 1
    partial.rename(root)
    return counts


def run_overfit_command(argv: list[str]) -> dict[str, Any]:
    """Run ``python -m fitaudit overfit ... --json`` in a subprocess and return its JSON."""
    done = subprocess.run(
        [sys.executable, "-m", "fitaudit", *argv], capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    if done.returncode != 0:
        raise InputError(
            f"`fitaudit {' '.join(argv)}` failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}"
        )
    return dict(json.loads(done.stdout))


def reproduce_overfit_imagefolder(**options: Unpack[Options]) -> OverfitImageFolderReproduction:
    """Run the check (see the module docstring).

    ``options``: :class:`~fitaudit.experiments.base.Options`;
    ``checkpoint_dir`` keeps the image folders, the CNN's epochs, the ONNX
    file and the tests' per-batch checkpoints (default a temporary folder:
    nothing resumes), ``random_state`` seeds the data sets and the training,
    and the subprocesses run with ``--quiet`` whatever ``progress`` says.
    """
    import tempfile

    from fitaudit.data.images import open_images
    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.data.shapes.datasets import FreePositionLayout, make_free_position_dataset
    from fitaudit.models import export_onnx
    from fitaudit.models.torch_ops import accuracy
    from fitaudit.models.training import train_classifier

    run = Run(SETTINGS, parallel=False, runs_torch=True, **options)
    mode, setting, random_state, progress, device = run.mode, run.settings, run.random_state, run.progress, run.device
    checkpoint_dir = run.checkpoint_dir
    eps, crop = setting["eps"], setting["crop"]
    margin = 3 * eps
    pipeline = EvalPipeline(resize=crop + 2 * margin, crop=crop)
    layout = FreePositionLayout(
        crop_size=SCALE * crop, margin=SCALE * margin, object_size=SCALE * setting["object_size"], wrap=True
    )
    temporary = tempfile.TemporaryDirectory() if checkpoint_dir is None else None
    base = check_folder(temporary.name if temporary else checkpoint_dir, "checkpoint_dir")
    base.mkdir(parents=True, exist_ok=True)
    seeds = dict(zip(("train", "unseen", "training"), spawn_seeds(random_state, 3)))
    folder = base / ("data-" + fingerprint(setting, layout, random_state)[:12])
    counts = {"jpeg": 0, "png": 0}
    datasets = {}
    for split in SPLITS:
        data = make_free_position_dataset(
            setting["train_objects" if split == "train" else "test_objects"], setting["renders_per_object"],
            layout=layout, split="train" if split == "train" else "test", classes=setting["classes"],
            random_state=seeds[split], progress=progress,
        )
        written = write_image_folder(data, folder / split)
        counts = {k: counts[k] + written[k] for k in counts}
        datasets[split] = open_images(folder / split)
    crops = {
        split: (
            np.concatenate([b.images for b in data.batches(pipeline, kind="input", batch_size=256)]),
            data.labels,
        )
        for split, data in datasets.items()
    }
    classes = datasets["train"].classes or []
    net, training = train_classifier(
        crops["train"][0], crops["train"][1], architecture=setting["architecture"],
        kwargs={"n_classes": len(classes), **setting["kwargs"]}, learning_rate=setting["learning_rate"],
        x_val=crops["unseen"][0], y_val=crops["unseen"][1], epochs=setting["epochs"],
        checkpoint_dir=CheckpointStore(base).subfolder("cnn"), random_state=seeds["training"],
        progress=progress, device=device,
    )
    model = base / f"cnn-{fingerprint(net)[:12]}.onnx"
    if not model.is_file():
        export_onnx(
            net, model, input_shape=(3, crop, crop),
            metadata={"classes": classes, "pipeline": pipeline.to_dict()},
        )
    runs = {}
    for split in SPLITS:
        argv = ["overfit", "--model", str(model), "--images", str(folder / split), "--json", "--quiet",
                "--checkpoint-dir", str(base / f"terms-{split}"), "--device", device]
        began = time.perf_counter()
        out = run_overfit_command(argv)
        first = out["runs"][0]
        runs[split] = {
            "command": "fitaudit " + " ".join(argv[:5]), "pvalue": out["pvalue"], "reject": out["reject"],
            "risk_plain": first["risk_plain"], "risk_adversarial": first["risk_adversarial"],
            "success_rate": first["success_rate"], "ci_pvalue": first["ci_pvalue"], "m": out["m"],
            "eps": out["eps"], "evaluations_per_example": first["evaluations_per_example"],
            "seconds": time.perf_counter() - began,
        }
    result = OverfitImageFolderReproduction(
        experiment="overfit-imagefolder", mode=mode, pipeline=pipeline.to_dict(), eps=runs["train"]["eps"],
        render_size=layout.canvas_size, classes=list(classes),
        n_images={"train": len(datasets["train"]), "unseen": len(datasets["unseen"]), **counts},
        train_accuracy=accuracy(net, *crops["train"]), unseen_accuracy=accuracy(net, *crops["unseen"]),
        training={
            "architecture": training.architecture, "kwargs": training.kwargs,
            "n_parameters": training.n_parameters, "epochs": training.epochs,
            "train_seconds": training.train_seconds,
        },
        runs=runs, seconds=run.seconds(), warning=DENSITY_WARNING,
    )
    if temporary is not None:
        temporary.cleanup()
    return result
