"""Planted near twins: altered copies of training images, the known answer of the leakage search.

Each twin is a training image under one alteration of the kinds Barz &
Denzler (J. Imaging 2020) found between CIFAR's test and training images:

* ``"copy"`` -- the image itself;
* ``"jpeg"`` -- re-encoded as JPEG (quality 75 by default) and decoded;
* ``"shift"`` -- moved by 1 or 2 pixels in each direction (edge pixels repeated);
* ``"brightness"`` -- brightness scaled by a factor in [0.8, 0.9] or [1.1, 1.2]
  (clipped to [0, 1]).
"""

from __future__ import annotations

import dataclasses
import io
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit._validation import check_int
from fitaudit.random import check_random_state

#: the kinds of planted twins, in the order of every table
TWIN_KINDS = ("copy", "jpeg", "shift", "brightness")


def jpeg_roundtrip(image: np.ndarray, quality: int = 75) -> np.ndarray:
    """A channels-first float image in [0, 1] encoded as JPEG and decoded again."""
    pil = import_optional("PIL.Image", "re-encoding planted twins as JPEG")
    pixels = np.clip(np.rint(np.moveaxis(image, 0, -1) * 255), 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    pil.fromarray(pixels.squeeze(-1) if pixels.shape[-1] == 1 else pixels).save(buffer, format="JPEG", quality=quality)
    buffer.seek(0)
    decoded = np.asarray(pil.open(buffer).convert("L" if pixels.shape[-1] == 1 else "RGB"), dtype=np.float32) / 255
    decoded = decoded[..., None] if decoded.ndim == 2 else decoded
    return np.moveaxis(decoded, -1, 0)


def shifted(image: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """The image moved by (dy, dx) pixels; the uncovered border repeats the edge pixels."""
    height, width = image.shape[1:]
    pad = max(abs(dy), abs(dx))
    padded = np.pad(image, ((0, 0), (pad, pad), (pad, pad)), mode="edge")
    top, left = pad - dy, pad - dx
    return padded[:, top : top + height, left : left + width]


def alter(image: np.ndarray, kind: str, rng: np.random.Generator, *, jpeg_quality: int = 75) -> np.ndarray:
    """One twin of ``image`` (channels first, values in [0, 1]) of the given kind."""
    if kind == "copy":
        return image.copy()
    if kind == "jpeg":
        return jpeg_roundtrip(image, jpeg_quality)
    if kind == "shift":
        dy, dx = (int(v) * int(s) for v, s in zip(rng.integers(1, 3, 2), rng.choice([-1, 1], 2)))
        return shifted(image, dy, dx)
    if kind == "brightness":
        factor = float(rng.uniform(1.1, 1.2) if rng.random() < 0.5 else rng.uniform(0.8, 0.9))
        return np.clip(image * factor, 0.0, 1.0)
    raise InputError(f"`kinds` must hold names from {', '.join(TWIN_KINDS)}; got {kind!r}.")


@dataclasses.dataclass
class PlantedTwins:
    """Twins of training images and where they came from.

    Attributes
    ----------
    images : ndarray of float32, shape (n, C, H, W)
    source : ndarray of int64, shape (n,)
        Index of every twin's training image.
    kind : ndarray of str, shape (n,)
        Its alteration (one of :data:`TWIN_KINDS`).
    """

    images: np.ndarray
    source: np.ndarray
    kind: np.ndarray


def plant_twins(
    train_images: Any,
    n_per_kind: int,
    *,
    kinds: tuple[str, ...] = TWIN_KINDS,
    jpeg_quality: int = 75,
    random_state: Any = None,
) -> PlantedTwins:
    """Altered copies of ``n_per_kind`` distinct training images per kind.

    Parameters
    ----------
    train_images : array-like, shape (m, C, H, W)
        Training images, channels first, values in [0, 1].
    n_per_kind : int
        Twins of each kind; all sources are distinct training images.
    kinds : tuple of str
        Subset of :data:`TWIN_KINDS`.
    jpeg_quality : int
        Quality of the ``"jpeg"`` re-encoding (1-95).
    random_state : None, int or numpy Generator
        Picks the sources, shifts and brightness factors.

    Returns
    -------
    PlantedTwins
    """
    images = np.asarray(train_images, dtype=np.float32)
    if images.ndim != 4:
        raise InputError(f"`train_images` must have shape (m, C, H, W); got shape {images.shape}.")
    n_per_kind = check_int(n_per_kind, "n_per_kind", minimum=1)
    jpeg_quality = check_int(jpeg_quality, "jpeg_quality", minimum=1, maximum=95)
    for kind in kinds:
        if kind not in TWIN_KINDS:
            raise InputError(f"`kinds` must hold names from {', '.join(TWIN_KINDS)}; got {kind!r}.")
    total = n_per_kind * len(kinds)
    if total > len(images):
        raise InputError(f"`n_per_kind` * {len(kinds)} kinds = {total} twins needs as many training images; got {len(images)}.")
    rng = check_random_state(random_state)
    source = rng.choice(len(images), size=total, replace=False).astype(np.int64)
    kind_of = np.repeat(np.asarray(kinds), n_per_kind)
    twins = np.stack([alter(images[s], str(k), rng, jpeg_quality=jpeg_quality) for s, k in zip(source, kind_of)])
    return PlantedTwins(images=twins.astype(np.float32), source=source, kind=kind_of)


def planted_recall(result: Any, twins: PlantedTwins, offset: int) -> dict[str, float]:
    """Share of the planted twins of each kind that a leakage result found *and* matched to their source.

    Parameters
    ----------
    result : LeakageResult
        Of scored data whose rows ``offset, offset + 1, ...`` are ``twins.images`` in order.
    twins : PlantedTwins
    offset : int
        Row of the first twin in the scored data (the number of clean rows before them).
    """
    matched = dict(zip(result.near_scored.tolist(), result.near_train.tolist()))
    recall = {}
    for kind in dict.fromkeys(twins.kind.tolist()):
        rows = np.flatnonzero(twins.kind == kind)
        recall[str(kind)] = float(np.mean([matched.get(offset + int(r)) == int(twins.source[r]) for r in rows]))
    return recall


def _encoded(image: np.ndarray, image_format: str, quality: int = 75) -> bytes:
    """A channels-first float image in [0, 1] encoded as PNG or JPEG bytes."""
    pil = import_optional("PIL.Image", "writing image files")
    pixels = np.clip(np.rint(np.moveaxis(image, 0, -1) * 255), 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    options = {"quality": quality} if image_format == "JPEG" else {}
    pil.fromarray(pixels.squeeze(-1) if pixels.shape[-1] == 1 else pixels).save(buffer, format=image_format, **options)
    return buffer.getvalue()


@dataclasses.dataclass
class PlantedFolders:
    """Image folders ``train/<class>/`` and ``test/<class>/`` with planted twins in the test folder.

    Attributes
    ----------
    train, test : pathlib.Path
        The two folders (the layout of :func:`fitaudit.data.images.open_image_folder`).
    twins : dict
        Test file name (relative to ``test``) -> (training file name, kind) of every planted twin.
    """

    train: Any
    test: Any
    twins: dict[str, tuple[str, str]]


def write_planted_folders(
    folder: Any,
    train_images: Any,
    train_labels: Any,
    test_images: Any,
    test_labels: Any,
    class_names: list[str],
    *,
    n_per_kind: int = 10,
    jpeg_quality: int = 75,
    random_state: Any = None,
) -> PlantedFolders:
    """Write training and test images as PNG folders, with planted twins of training images in the test folder.

    Twins of the kinds of :data:`TWIN_KINDS`: ``copy`` is the training PNG
    file itself, ``jpeg`` the training image saved as a JPEG file (the
    re-encoding happens on disk), ``shift`` and ``brightness`` altered pixels
    saved as PNG. Every file is written atomically. The demo's known answer:
    :func:`fitaudit.leakage.image_leakage` on the two folders finds every twin.
    """
    from pathlib import Path

    from fitaudit.checkpoint import atomic_write_bytes

    root = Path(folder)
    train = np.asarray(train_images, dtype=np.float32)
    test = np.asarray(test_images, dtype=np.float32)
    names: list[str] = []
    for i, (image, label) in enumerate(zip(train, np.asarray(train_labels))):
        names.append(f"{class_names[int(label)]}/train-{i:05d}.png")
        atomic_write_bytes(root / "train" / names[-1], _encoded(image, "PNG"))
    for i, (image, label) in enumerate(zip(test, np.asarray(test_labels))):
        atomic_write_bytes(root / "test" / class_names[int(label)] / f"test-{i:05d}.png", _encoded(image, "PNG"))
    planted = plant_twins(train, n_per_kind, jpeg_quality=jpeg_quality, random_state=random_state)
    twins: dict[str, tuple[str, str]] = {}
    for k, (source, kind) in enumerate(zip(planted.source.tolist(), planted.kind.tolist())):
        label = class_names[int(np.asarray(train_labels)[source])]
        if kind == "jpeg":
            name, data = f"{label}/twin-{k:04d}.jpg", _encoded(train[source], "JPEG", jpeg_quality)
        elif kind == "copy":
            name, data = f"{label}/twin-{k:04d}.png", (root / "train" / names[source]).read_bytes()
        else:
            name, data = f"{label}/twin-{k:04d}.png", _encoded(planted.images[k], "PNG")
        atomic_write_bytes(root / "test" / name, data)
        twins[name] = (names[source], str(kind))
    return PlantedFolders(train=root / "train", test=root / "test", twins=twins)
