"""Reference Shapes classifiers for the examiner reproductions, trained once and cached.

Shu et al. (AAAI 2020, Sec. 5) examine AlexNet and ResNet34 classifiers
trained on ShapeNet renders, models trained with m = 1, 2, 5, 10 renders per
object, and a model trained with camera elevation limited to [-30, 30]
degrees. Here their counterparts are the Shapes world's ``shapes_alexnet``
and ``shapes_resnet``, trained by :func:`fitaudit.models.training.train_classifier`
on :func:`fitaudit.data.shapes.make_dataset` renders. A model is cached in a
:class:`~fitaudit.checkpoint.CheckpointStore` under a key of every training
setting and torch's CPU thread count, since CPU training gives other weights
with another count (its epochs are checkpointed too, so a killed training
resumes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fitaudit._optional import import_optional
from fitaudit.checkpoint import CheckpointStore

#: at most this many epochs, whatever the renders per object
MAX_EPOCHS = 100

#: the classes of the reproductions (a subset of the world's 12, CPU-sized)
CLASSES = ["sphere", "cube", "cylinder", "torus", "cross", "tetrapod"]


def model_settings(
    architecture: str, *, quick: bool, renders_per_object: int = 10, elevation_limit: float | None = None
) -> dict[str, Any]:
    """Every setting a reference model is trained with (its cache key).

    The number of epochs is scaled by ``10 / renders_per_object`` so that
    models trained with fewer renders per object take as many gradient
    steps, up to 100 epochs (m = 1 then takes half as many steps; it fits
    its training set perfectly well before that).
    """
    base: dict[str, Any] = (
        {"objects": 6, "validation_objects": 4, "image_size": 16, "width": 6, "epochs": 3}
        if quick
        else {"objects": 60, "validation_objects": 20, "image_size": 32, "width": 16, "epochs": 20}
    )
    return {
        "architecture": architecture,
        "classes": CLASSES,
        "renders_per_object": renders_per_object,
        "elevation_limit": elevation_limit,
        "learning_rate": 3e-3,
        "batch_size": 128,
        **base,
        "epochs": max(1, min(MAX_EPOCHS, round(base["epochs"] * 10 / renders_per_object))),
    }


def reference_model(settings: dict[str, Any], folder: str | Path, *, seed: int = 0, progress: bool = True,
                    device: str = "cpu") -> tuple[Any, dict[str, Any]]:
    """The trained model for ``settings`` (trained now, or loaded from ``folder``) and its training summary.

    ``device``: where it trains (a GPU's models are cached apart from the CPU's, whose keys are unchanged).
    """
    from fitaudit.data.shapes import make_splits, shapes_factor_space
    from fitaudit.models import load_torch_module
    from fitaudit.models.training import train_classifier

    torch = import_optional("torch", "training the examiner's reference models")
    threads = int(torch.get_num_threads())  # torch's CPU training differs across thread counts
    store = CheckpointStore(folder)
    key = store.key("fitaudit.experiments.examine.reference_model", settings, seed, threads,
                    *(() if device == "cpu" else (device,)))
    model_dir = store.subfolder(key)
    if store.has(key):
        return load_torch_module(model_dir / "model"), store.load(key)
    train_space = None
    if settings["elevation_limit"] is not None:
        limit = float(settings["elevation_limit"])
        train_space = shapes_factor_space().restrict(camera_elevation=(-limit, limit))
    splits = make_splits(
        {"train": settings["objects"], "validation": settings["validation_objects"]},
        {"train": settings["renders_per_object"], "validation": 5},
        factor_spaces={"train": train_space} if train_space is not None else None,
        classes=settings["classes"], image_size=settings["image_size"], random_state=seed, progress=progress,
    )
    train, val = splits["train"], splits["validation"]
    module, result = train_classifier(
        train.images, train.labels, architecture=settings["architecture"],
        kwargs={"n_classes": len(settings["classes"]), "width": settings["width"]},
        x_val=val.images, y_val=val.labels, epochs=settings["epochs"], batch_size=settings["batch_size"],
        learning_rate=settings["learning_rate"], checkpoint_dir=model_dir, random_state=seed, progress=progress,
        metadata={"class_names": list(train.class_names)}, device=device,
    )
    summary = {
        "settings": settings,
        "n_train": len(train),
        "n_parameters": result.n_parameters,
        "epochs": result.epochs,
        "validation_accuracy": result.validation_accuracy,
        "train_seconds": result.train_seconds,
        "torch_threads": result.torch_threads,
        "model_dir": str(model_dir / "model"),
    }
    store.save(key, summary)
    return module, summary
