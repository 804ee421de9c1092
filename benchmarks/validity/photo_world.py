"""Real photographs as an image-classification world with planted near copies (scikit-image's bundled photos).

Eight of scikit-image's bundled photographs (``skimage.data``: camera,
astronaut, coffee, chelsea, rocket, brick, grass, gravel) are the classes.
Each photo is scaled by ``size / 66`` (so the crops hold the same part of
the scene at every size), then split into a top half (training) and a bottom
half (unseen): training and unseen crops come from disjoint regions. Crops
of ``size`` x ``size`` pixels are cut at random positions, grey (luminance)
or RGB, stored as 8-bit values in [0, 1] as a saved file would hold them.

Planted twins of distinct training crops, ``per_kind`` of each kind:

* ``copy``: the crop itself (byte-identical);
* ``recrop``: the same photo cropped again 1-3 pixels away (the largest of
  |dy|, |dx| is 1, 2 or 3; new content comes in at the border);
* ``jpeg``: the crop encoded as JPEG at quality 75 and decoded;
* ``brightness``: the crop's values times 0.9 or 1.1 (rounded to 8 bits,
  clipped to [0, 1]).

And the copies augmentation makes (augment-then-split; ``kinds=AUGMENTED``):

* ``flip``: the crop's mirror image (left and right swapped);
* ``rescale``: the photo's square of side 0.8x-1.25x the crop's (uniform in
  the log of the scale, at least 5% from 1) about the same centre, resized
  back to the crop's side (anti-aliased when shrunk);
* ``rotation``: the photo rotated 3-10 degrees (either way) about the
  crop's centre, the crop cut from it (no empty corners);
* ``blur``: the crop blurred by a Gaussian of sigma 1 pixel (at 66 px; scaled with the size);
* ``contrast``: the crop's deviations from its mean times 0.8 or 1.25.

Besides, what the benchmarks on these photographs share to train their
models: :func:`canvases` (crops with a spare margin for the overfitting
test, of any list of photos), :func:`cnn` (the small CNN), :func:`fit` (its
training loop) and :func:`random_crops` (the random-crop and flip
augmentation on canvases).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: the photographs, one class each
PHOTOS = ("camera", "astronaut", "coffee", "chelsea", "rocket", "brick", "grass", "gravel")
#: the kinds of planted twins, in the order of every table
KINDS = ("copy", "recrop", "jpeg", "brightness")
#: the kinds that augment-then-split makes
AUGMENTED = ("flip", "rescale", "rotation", "blur", "contrast")


@dataclasses.dataclass
class PhotoWorld:
    """Training crops, unseen crops and planted twins (channels first, float32 in [0, 1])."""

    train: np.ndarray
    train_labels: np.ndarray
    unseen: np.ndarray
    unseen_labels: np.ndarray
    twins: np.ndarray
    twin_labels: np.ndarray
    source: np.ndarray
    kind: np.ndarray


def photos(size: int, rgb: bool) -> list[np.ndarray]:
    """The photographs scaled by ``size / 66``, as float arrays (H, W, C) in [0, 1]."""
    import skimage.data
    from skimage.transform import rescale

    found = []
    for name in PHOTOS:
        image = getattr(skimage.data, name)().astype(np.float64) / 255.0
        image = np.repeat(image[..., None], 3, axis=2) if image.ndim == 2 else image[..., :3]
        if not rgb:
            image = (image @ np.array([0.299, 0.587, 0.114]))[..., None]
        if size != 66:
            image = rescale(image, size / 66, channel_axis=2, anti_aliasing=size < 66)
        found.append(np.clip(image, 0.0, 1.0))
    return found


def place(rng: np.random.Generator, photo: np.ndarray, half: int, size: int) -> tuple[int, int]:
    """A uniformly random (top, left) of a ``size`` x ``size`` crop inside the top (``half`` 0) or bottom (1) half
    of ``photo``."""
    rows = photo.shape[0] // 2
    top = half * rows + int(rng.integers(0, rows - size + 1))
    left = int(rng.integers(0, photo.shape[1] - size + 1))
    return top, left


def canvases(scaled: Sequence[np.ndarray], n: int, half: int, seed: int, size: int,
             channels: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``n`` grey canvases ``(n, channels, size, size)`` (the grey repeated per channel), 8-bit values in [0, 1],
    at uniformly random places of the photos ``scaled`` ((H, W, C) arrays, channel 0 read; photo ``k`` is class
    ``k``, taken in turn), in their top halves for an even ``half`` and their bottom halves for an odd one;
    seeded by ``(seed, half)``, so that two even ``half`` give two samples of the top halves."""
    rng = np.random.default_rng([seed, half])
    out = np.empty((n, channels, size, size), dtype=np.float32)
    labels = np.arange(n) % len(scaled)
    for i, label in enumerate(labels):
        photo = scaled[label]
        top, left = place(rng, photo, half % 2, size)
        out[i] = np.rint(photo[top : top + size, left : left + size, 0] * 255) / 255
    return out, labels.astype(np.int64)


def cnn(n_classes: int = 8, channels: int = 1) -> Any:
    """The benchmarks' small CNN on grey (``channels`` 1) or RGB (3) crops: three 3 x 3 convolutions (16, 32, 64
    channels, each with batch norm and ReLU; 2 x 2 max pooling after the first two), global average pooling, a
    linear layer."""
    import torch

    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(channels, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, n_classes),
    )


def fit(net: Any, y: np.ndarray, batch: Callable[[np.ndarray], np.ndarray], *, epochs: int,
        rng: np.random.Generator, lr: float = 3e-3, batch_size: int = 64, cosine: bool = False) -> Any:
    """Adam (``lr``) on the cross-entropy for ``epochs`` passes over the examples, each in a new order drawn from
    ``rng``, in batches of ``batch_size``; ``batch(rows)`` makes the inputs of the examples ``rows`` (an
    augmentation draws from the same ``rng``), or the inputs and their targets (a planted weakness relabels some).
    With ``cosine`` the learning rate falls from ``lr`` to 0 along a cosine over all the steps (the usual schedule
    that lets the network settle on its training data). Returns ``net`` in eval mode."""
    import torch

    optimiser = torch.optim.Adam(net.parameters(), lr=lr)
    steps = epochs * -(-len(y) // batch_size)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, steps) if cosine else None
    targets = torch.from_numpy(y)
    for _ in range(epochs):
        net.train()
        order = rng.permutation(len(y))
        for start in range(0, len(y), batch_size):
            rows = order[start : start + batch_size]
            made = batch(rows)
            inputs, wanted = made if isinstance(made, tuple) else (made, targets[rows])
            inputs = torch.from_numpy(np.ascontiguousarray(inputs, dtype=np.float32))
            loss = torch.nn.functional.cross_entropy(net(inputs), torch.as_tensor(wanted))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            if schedule is not None:
                schedule.step()
    return net.eval()


def random_crops(x: np.ndarray, rows: np.ndarray, rng: np.random.Generator, *, margin: int, crop: int,
                 augment: int) -> np.ndarray:
    """The ``crop`` x ``crop`` crops of the canvases ``x[rows]`` (``margin`` spare pixels per side): with
    ``augment`` > 0 at a random offset of up to ``augment`` pixels per axis and mirrored with probability 1/2 (the
    usual augmentation, drawn from ``rng``), else the centre crops."""
    n = len(rows)
    shift = rng.integers(-augment, augment + 1, (n, 2)) if augment else np.zeros((n, 2), int)
    batch = np.stack([x[r, :, margin + dy : margin + dy + crop, margin + dx : margin + dx + crop]
                      for r, (dy, dx) in zip(rows, shift)])
    if augment:
        flip = rng.random(n) < 0.5
        batch[flip] = batch[flip][..., ::-1]
    return batch


def _eight_bit(image: np.ndarray) -> np.ndarray:
    return (np.clip(np.rint(image * 255), 0, 255) / 255).astype(np.float32)


def _crop(photo: np.ndarray, top: int, left: int, size: int) -> np.ndarray:
    return _eight_bit(np.moveaxis(photo[top : top + size, left : left + size], -1, 0))


def _jpeg(image: np.ndarray, quality: int = 75) -> np.ndarray:
    import io

    from PIL import Image

    pixels = np.clip(np.rint(np.moveaxis(image, 0, -1) * 255), 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels[..., 0] if pixels.shape[-1] == 1 else pixels).save(buffer, format="JPEG", quality=quality)
    decoded = np.asarray(Image.open(io.BytesIO(buffer.getvalue())), dtype=np.float32) / 255
    return np.moveaxis(decoded[..., None] if decoded.ndim == 2 else decoded, -1, 0)


def _augmented(kind: str, image: np.ndarray, photo: np.ndarray, place: tuple[int, int], size: int,
               rng: np.random.Generator) -> np.ndarray:
    """A twin of ``image`` (the crop of ``photo`` at ``place``) of one of the AUGMENTED kinds (module docstring)."""
    from scipy.ndimage import gaussian_filter
    from skimage.transform import resize, rotate

    if kind == "flip":
        return image[..., ::-1].copy()
    if kind == "blur":
        return _eight_bit(gaussian_filter(image, sigma=(0, size / 66, size / 66)))
    if kind == "contrast":
        mean = image.mean(axis=(1, 2), keepdims=True)
        return _eight_bit(mean + (image - mean) * (0.8 if rng.random() < 0.5 else 1.25))
    centre = (place[0] + size / 2, place[1] + size / 2)
    if kind == "rescale":
        while True:
            scale = float(np.exp(rng.uniform(np.log(0.8), np.log(1.25))))
            if abs(scale - 1) >= 0.05:
                break
        side = int(round(scale * size))
        top = int(np.clip(round(centre[0] - side / 2), 0, photo.shape[0] - side))
        left = int(np.clip(round(centre[1] - side / 2), 0, photo.shape[1] - side))
        region = photo[top : top + side, left : left + side]
        return _eight_bit(np.moveaxis(resize(region, (size, size), anti_aliasing=side > size), -1, 0))
    angle = float(rng.uniform(3, 10) * rng.choice([-1, 1]))
    side = int(np.ceil(size * 1.5))
    top = int(np.clip(round(centre[0] - side / 2), 0, photo.shape[0] - side))
    left = int(np.clip(round(centre[1] - side / 2), 0, photo.shape[1] - side))
    turned = rotate(photo[top : top + side, left : left + side], angle,
                    center=(centre[1] - left - 0.5, centre[0] - top - 0.5))
    y, x = int(round(centre[0] - top - size / 2)), int(round(centre[1] - left - size / 2))
    return _crop(turned, y, x, size)


def photo_world(size: int = 66, *, rgb: bool = False, seed: int = 0, n_train: int = 600, n_unseen: int = 600,
                per_kind: int = 10, kinds: tuple[str, ...] = KINDS) -> PhotoWorld:
    """Crops of the photographs (module docstring): training from the top halves, unseen from the bottom ones."""
    rng = np.random.default_rng(seed)
    scaled = photos(size, rgb)
    sets = []
    for count, half in ((n_train, 0), (n_unseen, 1)):
        images, labels, places = [], [], []
        for k in range(count):
            label = k % len(scaled)
            photo = scaled[label]
            top, left = place(rng, photo, half, size)
            images.append(_crop(photo, top, left, size))
            labels.append(label)
            places.append((top, left))
        sets.append((np.stack(images), np.array(labels, dtype=np.int64), places))
    (train, train_labels, places), (unseen, unseen_labels, _) = sets
    source = rng.choice(n_train, size=per_kind * len(kinds), replace=False)
    kind = np.repeat(np.array(kinds), per_kind)
    twins = []
    for s, k in zip(source.tolist(), kind.tolist()):
        image = train[s]
        if k == "copy":
            twins.append(image.copy())
        elif k == "jpeg":
            twins.append(_jpeg(image))
        elif k == "brightness":
            twins.append(_eight_bit(image * (0.9 if rng.random() < 0.5 else 1.1)))
        elif k in AUGMENTED:
            twins.append(_augmented(k, image, scaled[train_labels[s]], places[s], size, rng))
        else:
            photo, (top, left) = scaled[train_labels[s]], places[s]
            while True:
                dy, dx = (int(v) for v in rng.integers(-3, 4, 2))
                y, x = top + dy, left + dx
                if max(abs(dy), abs(dx)) >= 1 and 0 <= y <= photo.shape[0] - size and 0 <= x <= photo.shape[1] - size:
                    break
            twins.append(_crop(photo, y, x, size))
    return PhotoWorld(train, train_labels, unseen, unseen_labels, np.stack(twins), train_labels[source],
                      source.astype(np.int64), kind)
