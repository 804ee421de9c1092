"""The leakage search on image folders: features and predictions in one streamed pass.

Images come through :mod:`fitaudit.data.images` (folders or CSV lists, the
evaluation pipeline, batches decoded ahead); no pixel set is held in memory.
The search compares the centre crops a model sees (values in [0, 1], before
normalisation). The folder is read in blocks of
:data:`~fitaudit.leakage.image_space.FEATURE_BLOCK` files; with checkpoints
every finished block is kept, keyed by its files (paths, sizes, modification
times), labels, the pipeline and the model's weights, and a rerun decodes
only the blocks not finished (:mod:`fitaudit.leakage.resume`).
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fitaudit._errors import InputError
from fitaudit.leakage.image_space import (
    FEATURE_BLOCK,
    ImageFeatures,
    content_hashes,
    level_grid,
    working_images,
)
from fitaudit.leakage.jpeg_lattice import block_coefficients
from fitaudit.leakage.residual import fine_images
from fitaudit.leakage.resume import Checkpoints, as_checkpoints


def _block(part: Any, pipeline: Any, model: Any, batch_size: int, name: str, bar: Any) -> dict[str, np.ndarray]:
    """Digests, working and fine images, JPEG blocks and (with a model) predictions of one block of files.

    The JPEG grid starts at the file's top-left corner: for a square file
    of the pipeline's side R (not resized), the centre crop starts where the
    pipeline's crop corner is, and the grid that many pixels before it.
    """
    hashes, works, fines, blocks, grids, predictions = [], [], [], [], [], []
    p, c = pipeline.margin, pipeline.crop
    grid = -pipeline._corner(pipeline.resize, pipeline.resize)[0] % 8  # the crop's top in an R x R file
    for batch in part.batches(pipeline, kind="canvas", batch_size=batch_size, name=name):
        crops = np.ascontiguousarray(batch.images[:, :, p : p + c, p : p + c])
        hashes.append(content_hashes(crops))
        works.append(working_images(crops))
        fines.append(fine_images(crops))
        blocks.append(block_coefficients(crops, (grid, grid)))
        grids.append(level_grid(crops))
        if model is not None:
            try:
                predictions.append(np.asarray(model.predict(pipeline.normalise(crops)), dtype=np.int64))
            except InputError as exc:
                raise InputError(f"the model does not accept `{name}` through the pipeline (crop {c}): {exc}") from exc
        bar.update(len(crops))
    arrays = {"hashes": np.concatenate(hashes), "work": np.concatenate(works), "fine": np.concatenate(fines),
              "blocks": np.concatenate(blocks), "grid": np.concatenate(grids)}
    if model is not None:
        arrays["predictions"] = np.concatenate(predictions)
    return arrays


def folder_features(
    dataset: Any,
    pipeline: Any,
    *,
    model: Any = None,
    model_key: str | None = None,
    batch_size: int = 64,
    progress: bool = False,
    name: str = "--images",
    checkpoint_dir: Checkpoints | str | os.PathLike[str] | None = None,
) -> tuple[ImageFeatures, np.ndarray, np.ndarray | None]:
    """Digests and working images of an image folder's crops, its labels and, with a model, its predictions.

    Parameters
    ----------
    dataset : fitaudit.data.images.ImageDataset
        Checked images (:func:`fitaudit.data.images.check_images`).
    pipeline : fitaudit.data.pipeline.EvalPipeline
    model : classifier, optional
        Predicts every normalised crop (``pipeline.normalise``).
    model_key : str, optional
        Fingerprint of the model's weights for the checkpoint keys; computed
        from ``model`` (:func:`fitaudit.models.fingerprint.model_fingerprint`)
        when checkpoints are kept and it is not given.
    batch_size : int
    progress : bool
        A progress bar over the images (stderr).
    name : str
        Option named in error messages (and the step's name in the checkpoints).
    checkpoint_dir : path or Checkpoints, optional
        Keep every finished block of files there.

    Returns
    -------
    features : ImageFeatures
        With the files' paths as ``names`` (the leakage pairs name them).
    labels : ndarray of int64
    predictions : ndarray of int64 or None
    """
    if len(dataset) == 0:
        raise InputError(f"`{name}` holds no images.")
    checkpoints = as_checkpoints(checkpoint_dir)
    if model is not None and model_key is None and checkpoints.store is not None:
        from fitaudit.models.fingerprint import model_fingerprint, run_settings

        model_key = model_fingerprint(model) + run_settings(model)
    blocks = []
    with tqdm(desc=f"leakage: features of {name}", unit="img", total=len(dataset), disable=not progress) as bar:
        for start in range(0, len(dataset), FEATURE_BLOCK):
            part = dataset.subset(np.arange(start, min(start + FEATURE_BLOCK, len(dataset))))
            compute = functools.partial(_block, part, pipeline, model, batch_size, name, bar)
            parts = (part, pipeline, model_key if model is not None else None)  # part keyed by its fingerprint()
            before = bar.n
            blocks.append(checkpoints.block(f"features of {name}", parts, compute))
            bar.update(len(part) - (bar.n - before))
    features = ImageFeatures(np.concatenate([b["hashes"] for b in blocks]), np.concatenate([b["work"] for b in blocks]),
                             (3, pipeline.crop, pipeline.crop), names=tuple(str(p) for p in dataset.paths),
                             fine=np.concatenate([b["fine"] for b in blocks]),
                             blocks=np.concatenate([b["blocks"] for b in blocks]),
                             grid=np.concatenate([b["grid"] for b in blocks]))
    predictions = np.concatenate([b["predictions"] for b in blocks]) if model is not None else None
    return features, np.asarray(dataset.labels, dtype=np.int64), predictions
