"""Examining image models on their own test images (``fitaudit reproduce examiner-images``).

User guide: docs/examiner.md#your-own-images. The adversarial examiner on a user's labelled images
under the image-transform generator, checked against the exact worst case of
Engstrom et al.'s grid (ICML 2019: 31 rotations in [-30, 30] degrees x 5 x 5
translations of up to 10% of the side = 775 queries per image).

The data are scikit-learn's 8 x 8 handwritten digits, upsampled to 32 x 32
PNG files in image folders ``root/<digit>/<file>.png`` and read back through
the evaluation pipeline (:mod:`fitaudit.data.images`; resize R, centre crop C,
canvases with P = (R - C) / 2). Two CNNs (``shapes_alexnet``) are trained on
the same images, one on the untouched crops, one on copies rotated uniformly
in [-30, 30] degrees by the image-transform generator itself (rotation
augmentation); each model is examined on a sample of correctly classified
test digits, every examiner restricted to the grid's space (rotation and
both translations; the other factors at their identity):

* the grid: the exact worst case of that space's grid, and its rotation-only
  slice (translations 0: 31 rotations), with the accuracy there at small
  (|rotation| <= 10) and large (>= 20 degrees) rotations;
* every other examiner at a tenth of the grid's queries (78 per image): the
  worst-case accuracy it finds, the fraction of the images the grid breaks
  that it breaks too, and its mean worst true-class probability;
* the weakness rules of the grid's queries.

Known answer: the augmented model is more robust to rotation (higher
worst-case accuracy over the rotation-only grid), and the rules of the
other model name rotation.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fitaudit.experiments.examine._run import ExaminerOptions, ExaminerReproduction, ExaminerRun

if TYPE_CHECKING:
    from typing import Unpack

#: the grid's space: Engstrom et al.'s rotations and translations (wider than the photo-calibrated defaults),
#: every other factor fixed at its identity
GRID_SPACE = {"flip": 0.0, "rotation": (-30.0, 30.0), "translation_x": (-0.1, 0.1), "translation_y": (-0.1, 0.1),
              "scale": 1.0, "brightness": 0.0, "contrast": 1.0, "saturation": 1.0, "blur": 0.0, "noise": 0.0,
              "occlusion": 0.0, "jpeg_quality": 100.0}
#: model queries per image of the exact grid, and a tenth of them for the other examiners
GRID_QUERIES, BUDGET = 775, 78
#: uniform random reference queries per image of the grid's examination: enough to confirm its weakness rules
GRID_REFERENCE = 128
#: black border (px of the 8 x 8 digits) around every digit
BORDER = 2
#: rotation augmentation range (degrees), the grid's rotation range
AUGMENT_ROTATION = 30.0

SIZES: dict[str, dict[str, Any]] = {
    "quick": {"resize": 20, "crop": 16, "width": 8, "epochs": 6, "n_train": 600, "copies": 2, "instances": 10,
              "examiners": ["bo", "random"]},
    "full": {"resize": 28, "crop": 24, "width": 16, "epochs": 15, "n_train": 1200, "copies": 4, "instances": 60,
             "examiners": ["bo", "rl", "optuna:tpe", "random"]},
}
#: settings of the examiners at the budget (the RL examiner updates after every query)
EXAMINER_OPTIONS: dict[str, dict[str, Any]] = {"rl": {"update": "sequential", "batch_size": 8}}


@dataclasses.dataclass(repr=False)
class ImageExaminerReproduction(ExaminerReproduction):
    """Numbers of ``fitaudit reproduce examiner-images`` (fields of :class:`ExaminerReproduction`).

    ``curves`` are the mean over images of the lowest true-class probability
    found so far, per examiner; ``rows`` hold, per model, the grid's row (``worst_case_accuracy``,
    ``rotation_worst_case_accuracy``, ``rules``, ``space_check``,
    ``headline_names_rotation``) and one row per examiner at the budget
    (:func:`agreement`'s numbers); ``models`` hold a ``description`` and
    the training accuracy of each model.
    """


def digit_folders(root: str | os.PathLike[str], *, n_train: int, image_size: int = 32) -> tuple[Path, Path]:
    """Write scikit-learn's digits as PNG folders ``root/train/<digit>/`` and ``root/test/<digit>/`` (once).

    The first ``n_train`` digits are the training set, the digits from 1,200
    on the test set (597 images); 8 x 8 grey levels 0..16 get a black border
    of :data:`BORDER` px (the digits fill their 8 x 8 frame; a shift or a
    crop would cut them) and are upsampled to ``image_size`` px (bicubic).
    """
    from PIL import Image
    from sklearn.datasets import load_digits

    from fitaudit.checkpoint import atomic_path

    base = Path(root) / f"border{BORDER}-{image_size}px"
    digits = load_digits()
    for split, rows in (("train", range(min(n_train, 1200))), ("test", range(1200, len(digits.target)))):
        done = base / split / ".complete"
        if done.is_file():
            continue
        for i in rows:
            target = base / split / str(digits.target[i]) / f"{i:04d}.png"
            target.parent.mkdir(parents=True, exist_ok=True)
            pixels = np.pad(np.round(digits.images[i] / 16.0 * 255).astype(np.uint8), BORDER)
            with atomic_path(target) as tmp:
                Image.fromarray(pixels).resize((image_size, image_size), Image.Resampling.BICUBIC).save(tmp, format="PNG")
        done.write_text("ok\n")
    return base / "train", base / "test"


def _canvases(dataset: Any, pipeline: Any) -> np.ndarray:
    return dataset.arrays(pipeline, kind="canvas")[0]


def train_digit_models(train_dir: Path, pipeline: Any, size: dict[str, Any], models: Path, *, random_state: int,
                       progress: bool, translation: float = 0.0,
                       device: str = "cpu") -> dict[str, tuple[Any, dict[str, Any]]]:
    """The plain and the rotation-augmented CNN (trained now or loaded from their checkpoints), on one torch thread
    (given back after).

    With ``translation`` > 0 both CNNs are trained on copies shifted uniformly by up to that fraction of the side
    in x and y (the grid's translations are up to 0.1), so that rotation is the only factor of the grid that one
    of them never saw. ``device``: where they train (:func:`fitaudit.models.training.train_classifier`).
    """
    from fitaudit.models.training import torch_threads

    with torch_threads(1):
        return _train_digit_models(train_dir, pipeline, size, models, random_state=random_state, progress=progress,
                                   translation=translation, device=device)


def _train_digit_models(train_dir: Path, pipeline: Any, size: dict[str, Any], models: Path, *, random_state: int,
                        progress: bool, translation: float, device: str) -> dict[str, tuple[Any, dict[str, Any]]]:
    from fitaudit.data.images import open_images
    from fitaudit.data.transforms import ImageTransformGenerator, identity_factors
    from fitaudit.models.training import train_classifier

    dataset = open_images(train_dir, name="train_dir")
    canvases = _canvases(dataset, pipeline)
    generator = ImageTransformGenerator(canvases, dataset.labels, padding=pipeline.margin, random_state=random_state)
    rows = np.tile(np.arange(len(dataset)), size["copies"])
    factors = np.tile(identity_factors(generator.factor_space), (len(rows), 1))
    names = generator.factor_space.names
    if translation > 0:
        shifts = np.random.default_rng([random_state, 1]).uniform(-translation, translation, (len(rows), 2))
        factors[:, [names.index("translation_x"), names.index("translation_y")]] = shifts
    plain = generator.display(rows, factors)
    factors[:, names.index("rotation")] = np.random.default_rng(random_state).uniform(-AUGMENT_ROTATION, AUGMENT_ROTATION,
                                                                               len(rows))
    rotated = generator.display(rows, factors)
    shifted = f"-shifted{translation:g}" if translation > 0 else ""
    out = {}
    for name, images in (("plain", plain), ("rotation-augmented", rotated)):
        module, training = train_classifier(
            images, dataset.labels[rows], architecture="shapes_alexnet", kwargs={"width": size["width"]},
            epochs=size["epochs"], augment=False, checkpoint_dir=models / f"digits-{name}-{size['crop']}{shifted}",
            metadata={"class_names": dataset.classes, "pipeline": pipeline.to_dict()}, random_state=random_state,
            progress=progress, device=device,
        )
        module.eval()
        changes = ([f"shifted uniformly by up to {translation:g} of the side in x and y"] if translation > 0 else []) + (
            [f"rotated uniformly in [-{AUGMENT_ROTATION:g}, {AUGMENT_ROTATION:g}] degrees"] if name != "plain" else [])
        out[name] = (module, {
            "settings": {"architecture": "shapes_alexnet", "width": size["width"], "epochs": size["epochs"],
                         "rotation_augmentation": AUGMENT_ROTATION if name != "plain" else None,
                         **({"translation_augmentation": translation} if translation > 0 else {})},
            "description": (f"shapes_alexnet (width {size['width']}) on {len(rows):,} training digits "
                            f"({size['copies']} copies of {len(dataset)}, "
                            + (f"each {' and '.join(changes)})" if changes else "untouched)")),
            "n_train": int(len(rows)),
            "train_accuracy": float(training.history[-1]["train_accuracy"]),
        })
    return out


def broken(result: Any) -> np.ndarray:
    """Per examined instance: whether any examiner query was misclassified."""
    q = result.queries
    wrong = np.asarray(q["predicted"]) != np.asarray(q["label"])
    return np.isin(result.instances, np.asarray(q["instance"])[wrong])


def rotation_only_broken(grid: Any) -> np.ndarray:
    """Per instance: broken by one of the grid's 31 rotations without translation."""
    q = grid.queries
    still = np.isclose(q["translation_x"], 0.0) & np.isclose(q["translation_y"], 0.0)
    wrong = still & (np.asarray(q["predicted"]) != np.asarray(q["label"]))
    return np.isin(grid.instances, np.asarray(q["instance"])[wrong])


#: rotations (degrees, absolute) counted as small and as large in the rotation profile
SMALL_ROTATION, LARGE_ROTATION = 10.0, 20.0


def rotation_profile(grid: Any) -> dict[str, float]:
    """Accuracy over the grid's queries without translation: at |rotation| <= 10 and at |rotation| >= 20 degrees."""
    q = grid.queries
    still = np.isclose(q["translation_x"], 0.0) & np.isclose(q["translation_y"], 0.0)
    right = np.asarray(q["predicted"]) == np.asarray(q["label"])
    angle = np.abs(np.asarray(q["rotation"]))
    small, large = still & (angle <= SMALL_ROTATION + 1e-9), still & (angle >= LARGE_ROTATION - 1e-9)
    return {"small": float(right[small].mean()), "large": float(right[large].mean()),
            "n_small": int(small.sum()), "n_large": int(large.sum())}


def agreement(grid: Any, result: Any) -> dict[str, Any]:
    """How much of the grid's worst case an examiner finds on the same instances."""
    by_grid, by_examiner = broken(grid), broken(result)
    return {
        "grid_failures": int(by_grid.sum()),
        "found": int((by_grid & by_examiner).sum()),
        "found_fraction": float((by_grid & by_examiner).sum() / by_grid.sum()) if by_grid.any() else None,
        "beyond_grid": int((by_examiner & ~by_grid).sum()),
        "worst_case_accuracy": float(1.0 - by_examiner.mean()),
        "mean_worst_probability": float(result.min_true_class_probability.mean()),
    }


def examine_model(model: Any, test_dir: Path, pipeline: Any, size: dict[str, Any], examiners: list[str], *,
                  random_state: int, checkpoint_dir: Path | None, progress: bool, n_jobs: int | None = None,
                  budget: int = BUDGET, device: str = "cpu") -> tuple[Any, dict[str, Any], Any]:
    """(grid result, examiner name -> result at ``budget`` queries per image, scenario); the model and the image
    transforms on ``device``."""
    from fitaudit.data.images import open_images
    from fitaudit.examine import examine
    from fitaudit.examine.scenarios import image_scenario

    dataset = open_images(test_dir, name="test_dir")
    scenario = image_scenario(model, dataset, pipeline=pipeline, factors=GRID_SPACE, instances=size["instances"],
                              random_state=random_state, device=device)
    common: dict[str, Any] = {"instances": scenario.instances, "random_state": random_state, "checkpoint_dir": checkpoint_dir,
              "progress": progress, "n_jobs": n_jobs, "chunk_size": 16, "device": device}
    grid = examine(model, scenario.generator, examiner="grid", steps=GRID_QUERIES // 25, n_reference=GRID_REFERENCE,
                   examiner_options={"points": "engstrom", "queries_per_step": 25}, **common)
    results = {
        name: examine(model, scenario.generator, examiner=name, steps=budget, weakness=False,
                      examiner_options=EXAMINER_OPTIONS.get(name), **common)
        for name in examiners
    }
    return grid, results, scenario


def _rows(name: str, grid: Any, results: dict[str, Any], scenario: Any) -> list[dict[str, Any]]:
    rules = [r["text"] for r in (grid.weakness.rules if grid.weakness is not None else [])]
    headline = grid.weakness.headline if grid.weakness is not None else None
    rows = [{
        "label": f"{name} grid", "examiner": "grid", "n_instances": int(len(grid.instances)), "steps": grid.steps,
        "queries_per_step": grid.queries_per_step, "model_queries": int(grid.n_model_queries),
        "at_steps": {}, "worst_found": float(grid.min_true_class_probability.mean()),
        "worst_case_accuracy": float(1.0 - broken(grid).mean()),
        "rotation_worst_case_accuracy": float(1.0 - rotation_only_broken(grid).mean()),
        "rotation_profile": rotation_profile(grid),
        "rules": rules, "space_check": scenario.check_space(grid),
        "rules_name_rotation": bool(grid.weakness is not None and any(
            c[0] == "rotation" for r in grid.weakness.rules for c in r["conditions"])),
        "headline": headline["text"] if headline is not None else None,
        "headline_names_rotation": bool(headline is not None and any(c[0] == "rotation" for c in headline["conditions"])),
    }]
    for examiner, result in results.items():
        rows.append({
            "label": f"{name} {examiner}", "examiner": examiner, "n_instances": int(len(result.instances)),
            "steps": result.steps, "queries_per_step": result.queries_per_step,
            "model_queries": int(result.n_model_queries), "at_steps": {},
            "worst_found": float(result.min_true_class_probability.mean()), **agreement(grid, result),
        })
    return rows


def reproduce_examiner_images(**options: Unpack[ExaminerOptions]) -> ImageExaminerReproduction:
    """Run the experiment (module docstring) with the :class:`ExaminerOptions`; data, models and examinations are
    checkpointed."""
    from fitaudit.data.pipeline import EvalPipeline

    run = ExaminerRun(SIZES, **options)
    mode, size, models = run.mode, run.settings, run.models
    random_state, progress = run.random_state, run.progress
    train_dir, test_dir = digit_folders(models / "digits-png", n_train=size["n_train"])
    pipeline = EvalPipeline(resize=size["resize"], crop=size["crop"])
    trained = train_digit_models(train_dir, pipeline, size, models, random_state=random_state, progress=progress,
                                 device=run.device)
    rows: list[dict[str, Any]] = []
    curves: dict[str, Any] = {}
    for name, (module, _) in trained.items():
        from fitaudit.models import as_classifier
        from fitaudit.models.training import torch_threads

        with torch_threads(1):  # as the training: the numbers depend on the thread count
            grid, results, scenario = examine_model(
                as_classifier(module, batch_size=1024, device=run.device), test_dir, pipeline, size, size["examiners"],
                random_state=random_state, checkpoint_dir=run.folder("examinations"), progress=progress, n_jobs=run.n_jobs,
                device=run.device,
            )
        rows += _rows(name, grid, results, scenario)
        for examiner, result in results.items():
            curves[f"{name} {examiner} (lowest so far)"] = result.curve("true_class_probability", "running").tolist()
    return ImageExaminerReproduction(
        experiment="examiner-images", mode=mode, rows=rows, curves=curves,
        models={name: summary for name, (_, summary) in trained.items()},
        settings={**{k: v for k, v in size.items()}, "grid_queries": GRID_QUERIES, "budget": BUDGET,
                  "fixed_factors": GRID_SPACE, "pipeline": pipeline.to_dict()},
        findings=findings(rows), seconds=run.seconds(),
    )


def findings(rows: list[dict[str, Any]]) -> list[str]:
    """Sentences with the numbers: robustness to rotation, the rules, each examiner against the grid."""
    grids = {r["label"].rsplit(" ", 1)[0]: r for r in rows if r["examiner"] == "grid"}
    plain, augmented = grids["plain"], grids["rotation-augmented"]
    more = augmented["rotation_worst_case_accuracy"] > plain["rotation_worst_case_accuracy"]
    out = [
        f"Worst-case accuracy over the 31 rotations in [-30, 30] degrees (no translation): rotation-augmented "
        f"{augmented['rotation_worst_case_accuracy']:.0%} vs plain {plain['rotation_worst_case_accuracy']:.0%} "
        f"of {plain['n_instances']} correctly classified test digits each: the augmented model is "
        + ("more robust to rotation, as expected." if more else "NOT more robust to rotation (the expected answer is not reproduced)."),
        f"Accuracy over the grid's rotations without translation, at |rotation| <= {SMALL_ROTATION:g} vs >= "
        f"{LARGE_ROTATION:g} degrees: plain {plain['rotation_profile']['small']:.0%} vs "
        f"{plain['rotation_profile']['large']:.0%}, rotation-augmented {augmented['rotation_profile']['small']:.0%} vs "
        f"{augmented['rotation_profile']['large']:.0%}.",
        f"Exact worst case of the 775-point grid (rotations x translations): plain {plain['worst_case_accuracy']:.0%}, "
        f"rotation-augmented {augmented['worst_case_accuracy']:.0%} accuracy.",
        ("The plain model has no confirmed headline weakness rule (none with enough random queries in its region "
         "and a lift interval above 1)." if plain.get("headline") is None else
         ("The plain model's headline weakness rule names rotation: " if plain["headline_names_rotation"]
          else "The plain model's headline weakness rule does NOT name rotation: ") + plain["headline"] + "."),
    ]
    for r in rows:
        if r["examiner"] == "grid" or r["found_fraction"] is None:
            continue
        out.append(
            f"{r['label']} at {r['model_queries'] // r['n_instances']} queries per image (grid: {GRID_QUERIES}): "
            f"finds {r['found']} of the grid's {r['grid_failures']} broken images ({r['found_fraction']:.0%}), "
            f"{r['beyond_grid']} beyond the grid; mean worst true-class probability {r['worst_found']:.3f} "
            f"(grid {grids[r['label'].rsplit(' ', 1)[0]]['worst_found']:.3f})."
        )
    return out
