"""Datasets of the Shapes world: disjoint object instances, m renders each.

A dataset renders ``n_objects_per_class`` instances of every class
``renders_per_object`` (m) times, with factors drawn uniformly from a
:class:`~fitaudit.data.shapes.factors.FactorSpace` (narrow it to plant a
weakness, e.g. ``camera_elevation=(-30, 30)`` for training). The splits
draw their instances from disjoint id blocks
(:data:`~fitaudit.data.shapes.instances.SPLIT_ID_OFFSETS`), so no object of
the test set was seen in training, and the examiner's instances can be the
test split's.

The free-position variant (:func:`make_free_position_dataset`) serves the
translational overfitting test (Werpachowski et al., NeurIPS 2019, Sec. 5;
docs/overfit.md#translational-aegs-for-images), see :class:`FreePositionLayout`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fitaudit._errors import InputError
from fitaudit._validation import check_int
from fitaudit.checkpoint import atomic_save_npz
from fitaudit.data.shapes.classes import CLASS_NAMES
from fitaudit.data.shapes.factors import FactorSpace, check_world_space
from fitaudit.data.shapes.instances import (
    SPLIT_ID_OFFSETS,
    ShapeInstances,
    check_classes,
    sample_instances,
)
from fitaudit.data.shapes.render import (
    BACKGROUND,
    check_background,
    check_image_size,
    render_unchecked,
)
from fitaudit.random import check_random_state, spawn_seeds

_RENDER_BATCH = 1024


@dataclasses.dataclass(frozen=True)
class FreePositionLayout:
    """Where the object may sit in a free-position canvas, and what G3 then means.

    A canvas is ``(crop_size + 2 margin)`` pixels wide, of the plain
    background colour; the image x the model sees is its centre crop, at
    offset ``(margin, margin)``. The object is rendered centred in an
    ``object_size`` tile which is pasted with its top-left corner at
    position ``u`` (crop coordinates), uniform over the integer box
    ``U = [margin, crop_size - object_size - margin]^2``.

    Lossless translation: moving the crop window by ``v`` with
    ``|v|_inf <= margin`` shows the same scene with the object at ``u - v``,
    still wholly inside the window, so tau_v(x) is exactly the crop of the
    canvas at offset ``(margin + v_0, margin + v_1)``: no pixel is invented.

    Why G3 (rho(tau_v(x)) = rho(x)) holds: the image is a function of
    (z, s, u) with z, s, u independent and u uniform on U; translating by v
    maps (z, s, u) to (z, s, u - v), which has the same probability
    whenever ``u - v`` is still in U, and the plain background is the same
    everywhere. It holds only approximately: for a position within |v| of
    the border of U the translated image has density 0 (its position is
    never drawn). The fraction of such positions is
    :meth:`g3_violation` ``= 1 - prod_k (L - |v_k|) / L`` with ``L`` the
    number of positions per axis; it shrinks as the canvas grows relative
    to the object. ``wrap=True`` makes G3 exact instead: the crop is a
    torus, the object's position is uniform on all of it (objects crossing
    an edge reappear on the other side) and the canvas is the crop padded
    periodically, so every window shift is a cyclic shift of a
    shift-invariant distribution -- at the price of split objects.
    """

    crop_size: int = 32
    margin: int = 3
    object_size: int = 20
    wrap: bool = False

    def __post_init__(self) -> None:
        check_image_size(self.crop_size, "crop_size")
        check_int(self.margin, "margin", minimum=0)
        check_image_size(self.object_size, "object_size")
        if self.wrap:
            if self.object_size > self.crop_size:
                raise InputError(
                    f"`object_size` ({self.object_size}) must not exceed `crop_size` ({self.crop_size})."
                )
        elif self.object_size + 2 * self.margin > self.crop_size:
            raise InputError(
                f"the canvas is too small for the crop: `crop_size` ({self.crop_size}) must be at least "
                f"`object_size` + 2 * `margin` = {self.object_size + 2 * self.margin}, so that the object "
                "stays inside the crop window wherever it is shifted by up to `margin`."
            )

    @property
    def canvas_size(self) -> int:
        """Side of the canvas: ``crop_size + 2 * margin``."""
        return self.crop_size + 2 * self.margin

    @property
    def positions_per_axis(self) -> int:
        """L: number of possible object positions along each axis."""
        if self.wrap:
            return self.crop_size
        return self.crop_size - self.object_size - 2 * self.margin + 1

    def g3_violation(self, shift: Sequence[int]) -> float:
        """Probability that tau_shift(x) has density 0 (0 when ``wrap``).

        Parameters
        ----------
        shift : (int, int)
            The translation v, ``|v|_inf <= margin``.
        """
        v = [check_int(s, "shift", minimum=-self.margin, maximum=self.margin) for s in shift]
        if len(v) != 2:
            raise InputError(f"`shift` must be a pair of integers; got {list(shift)}.")
        if self.wrap:
            return 0.0
        length = self.positions_per_axis
        return 1.0 - float(np.prod([max(length - abs(k), 0) / length for k in v]))

    def sample_positions(self, n: int, *, random_state: Any = None) -> np.ndarray:
        """``n`` uniform tile positions ``u`` (row, column) in crop coordinates."""
        rng = check_random_state(random_state)
        low = 0 if self.wrap else self.margin
        return low + rng.integers(0, self.positions_per_axis, size=(n, 2))

    def compose(self, tiles: np.ndarray, positions: np.ndarray, background: Any = BACKGROUND) -> np.ndarray:
        """Canvases (n, 3, canvas, canvas) with each tile pasted at its position."""
        bg = check_background(background).astype(np.float32)
        n = len(tiles)
        size, p, c = self.object_size, self.margin, self.crop_size
        if self.wrap:
            crops = np.empty((n, 3, c, c), dtype=np.float32)
            crops[:] = bg[None, :, None, None]
            rows = (positions[:, 0, None] + np.arange(size)) % c
            cols = (positions[:, 1, None] + np.arange(size)) % c
            for i in range(n):
                crops[i][:, rows[i][:, None], cols[i][None, :]] = tiles[i]
            return np.pad(crops, ((0, 0), (0, 0), (p, p), (p, p)), mode="wrap")
        canvases = np.empty((n, 3, self.canvas_size, self.canvas_size), dtype=np.float32)
        canvases[:] = bg[None, :, None, None]
        for i, (row, col) in enumerate(positions + p):
            canvases[i, :, row : row + size, col : col + size] = tiles[i]
        return canvases

    def crop(self, canvases: np.ndarray, shift: Sequence[int] = (0, 0)) -> np.ndarray:
        """The window at offset ``(margin + shift_0, margin + shift_1)``: tau_shift of the images."""
        dy, dx = (check_int(s, "shift", minimum=-self.margin, maximum=self.margin) for s in shift)
        top, left = self.margin + dy, self.margin + dx
        return canvases[:, :, top : top + self.crop_size, left : left + self.crop_size]


@dataclasses.dataclass
class ShapesDataset:
    """Renders of the Shapes world with their labels and provenance.

    Attributes
    ----------
    images : ndarray of float32, shape (n, 3, H, W)
        What a model sees (for the free-position variant: the centre crops).
    labels : ndarray of int64, shape (n,)
        Index into :attr:`class_names`.
    instance_ids : ndarray of int64, shape (n,)
        Object of every render (m consecutive renders per object).
    factors : ndarray of float64, shape (n, n_factors)
        Nuisance factors of every render, columns :attr:`factor_names`.
    class_names, factor_names : list of str
    split : str
    renders_per_object : int
    factor_space : FactorSpace
        The ranges the factors were drawn from.
    canvases : ndarray of float32, shape (n, 3, H + 2P, W + 2P), optional
        Free-position variant only: the canvases.
    layout : FreePositionLayout, optional
        Free-position variant only.
    positions : ndarray of int64, shape (n, 2), optional
        Free-position variant only: object tile positions in crop coordinates.
    """

    images: np.ndarray
    labels: np.ndarray
    instance_ids: np.ndarray
    factors: np.ndarray
    class_names: list[str]
    factor_names: list[str]
    split: str
    renders_per_object: int
    factor_space: FactorSpace
    canvases: np.ndarray | None = None
    layout: FreePositionLayout | None = None
    positions: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.labels)

    def __repr__(self) -> str:
        extra = f", margin={self.layout.margin}" if self.layout is not None else ""
        return (
            f"ShapesDataset(split={self.split!r}, n={len(self)}, objects={len(np.unique(self.instance_ids))}, "
            f"renders_per_object={self.renders_per_object}, image_size={self.images.shape[-1]}, "
            f"classes={len(self.class_names)}{extra})"
        )

    def summary(self) -> dict[str, Any]:
        """JSON-safe description (no pixels)."""
        out: dict[str, Any] = {
            "split": self.split,
            "n_images": len(self),
            "n_objects": int(len(np.unique(self.instance_ids))),
            "renders_per_object": self.renders_per_object,
            "image_shape": list(self.images.shape[1:]),
            "class_names": list(self.class_names),
            "class_counts": np.bincount(self.labels, minlength=len(self.class_names)).tolist(),
            "factor_ranges": {f.name: [f.low, f.high] for f in self.factor_space.factors},
        }
        if self.layout is not None:
            out["free_position"] = dataclasses.asdict(self.layout)
            out["canvas_shape"] = list(self.canvases.shape[1:]) if self.canvases is not None else None
        return out

    def save_npz(self, path: str | os.PathLike[str]) -> Path:
        """Write ``x`` (canvases for the free-position variant, else images), ``y`` and provenance.

        The archive is readable by :func:`fitaudit.data.io.load_npz`; it also
        holds ``margin`` (0 unless free-position), ``instance_ids``,
        ``factors``, ``factor_names`` and ``class_names``.
        """
        target = Path(path)
        if target.suffix != ".npz":
            raise InputError(f"`path` must end in .npz; got {str(target)!r}.")
        x = self.canvases if self.canvases is not None else self.images
        return atomic_save_npz(
            target,
            {
                "x": x,
                "y": self.labels,
                "margin": np.int64(self.layout.margin if self.layout is not None else 0),
                "instance_ids": self.instance_ids,
                "factors": self.factors,
                "factor_names": np.array(self.factor_names),
                "class_names": np.array(self.class_names),
            },
        )


def render_batched(
    instances: ShapeInstances, factors: np.ndarray, image_size: int, background: np.ndarray, *, progress: bool, desc: str
) -> np.ndarray:
    """Render in batches of 1024 with a progress bar."""
    out = np.empty((len(instances), 3, image_size, image_size), dtype=np.float32)
    for start in tqdm(range(0, len(instances), _RENDER_BATCH), desc=desc, disable=not progress, unit="batch"):
        rows = np.arange(start, min(start + _RENDER_BATCH, len(instances)))
        out[rows] = render_unchecked(instances.take(rows), factors[rows], image_size, background)
    return out


def _draw(
    n_objects_per_class: int,
    renders_per_object: int,
    split: str,
    classes: Sequence[str | int] | None,
    factor_space: FactorSpace | None,
    world_seed: int,
    random_state: Any,
) -> tuple[ShapeInstances, dict[str, Any], np.random.Generator]:
    """The renders' instances, the dataset fields other than pixels, and the generator."""
    n_objects_per_class = check_int(n_objects_per_class, "n_objects_per_class", minimum=1)
    m = check_int(renders_per_object, "renders_per_object", minimum=1)
    space = check_world_space(factor_space)
    class_ids = check_classes(classes)
    objects = sample_instances(n_objects_per_class, classes=list(class_ids), split=split, world_seed=world_seed)
    renders = objects.take(np.repeat(np.arange(len(objects)), m))
    rng = check_random_state(random_state)
    label_of_class = np.zeros(len(CLASS_NAMES), dtype=np.int64)
    label_of_class[class_ids] = np.arange(len(class_ids))
    fields = {
        "labels": label_of_class[renders.class_id],
        "instance_ids": renders.instance_id,
        "factors": space.sample(len(renders), random_state=rng),
        "class_names": [CLASS_NAMES[c] for c in class_ids],
        "factor_names": space.names,
        "split": split,
        "renders_per_object": m,
        "factor_space": space,
    }
    return renders, fields, rng


def make_dataset(
    n_objects_per_class: int,
    renders_per_object: int,
    *,
    split: str = "train",
    classes: Sequence[str | int] | None = None,
    factor_space: FactorSpace | None = None,
    image_size: int = 32,
    background: Any = BACKGROUND,
    world_seed: int = 0,
    random_state: Any = 0,
    progress: bool = False,
) -> ShapesDataset:
    """Render ``renders_per_object`` views of ``n_objects_per_class`` objects of every class.

    Parameters
    ----------
    n_objects_per_class : int
        Distinct instances per class (from ``split``'s id block).
    renders_per_object : int
        m, the number of renders of every object.
    split : {"train", "validation", "test"}
        Which disjoint block of instances to use.
    classes : list of str or int, optional
        Subset of :data:`~fitaudit.data.shapes.classes.CLASS_NAMES`;
        labels are positions in this list.
    factor_space : FactorSpace, optional
        Where factors are drawn uniformly (default: the whole world).
    image_size : int
        Side in pixels (32 default, 64 available).
    background : RGB triple
    world_seed : int
        Which world (the instances of every split depend only on it).
    random_state : seed
        Draws the factors.
    progress : bool
        Show a progress bar.
    """
    size = check_image_size(image_size)
    bg = check_background(background).astype(np.float32)
    renders, fields, _ = _draw(
        n_objects_per_class, renders_per_object, split, classes, factor_space, world_seed, random_state
    )
    images = render_batched(renders, fields["factors"], size, bg, progress=progress, desc=f"render {split}")
    return ShapesDataset(images=images, **fields)


def make_free_position_dataset(
    n_objects_per_class: int,
    renders_per_object: int,
    *,
    layout: FreePositionLayout | None = None,
    split: str = "train",
    classes: Sequence[str | int] | None = None,
    factor_space: FactorSpace | None = None,
    background: Any = BACKGROUND,
    world_seed: int = 0,
    random_state: Any = 0,
    progress: bool = False,
) -> ShapesDataset:
    """Like :func:`make_dataset`, with the object at a uniform random position on a larger canvas.

    Each object is rendered in a ``layout.object_size`` tile and pasted at
    a uniform position (see :class:`FreePositionLayout` for the position
    set, lossless translation and why condition G3 of the translational
    overfitting test holds, and where only approximately). The dataset's
    ``canvases`` (n, 3, H + 2P, W + 2P) and ``layout.margin`` = P are what
    the translational AEG consumes; ``images`` are the centre crops.
    """
    layout = FreePositionLayout() if layout is None else layout
    if not isinstance(layout, FreePositionLayout):
        raise InputError(f"`layout` must be a FreePositionLayout; got {type(layout).__name__}.")
    bg = check_background(background).astype(np.float32)
    renders, fields, rng = _draw(
        n_objects_per_class, renders_per_object, split, classes, factor_space, world_seed, random_state
    )
    tiles = render_batched(renders, fields["factors"], layout.object_size, bg, progress=progress, desc=f"render {split}")
    positions = layout.sample_positions(len(renders), random_state=rng)
    canvases = layout.compose(tiles, positions, bg)
    return ShapesDataset(
        images=layout.crop(canvases), canvases=canvases, layout=layout, positions=positions, **fields
    )


def make_splits(
    n_objects_per_class: dict[str, int],
    renders_per_object: int | dict[str, int],
    *,
    factor_spaces: dict[str, FactorSpace] | None = None,
    layout: FreePositionLayout | None = None,
    random_state: Any = 0,
    **kwargs: Any,
) -> dict[str, ShapesDataset]:
    """Several splits of one world, e.g. ``{"train": 100, "validation": 20, "test": 50}``.

    ``renders_per_object`` and ``factor_spaces`` may differ per split (a
    dict) -- e.g. a training set with camera elevation limited to
    [-30, 30] and a full-range test set. Each split's factors come from its
    own seed derived from ``random_state``; other keyword arguments go to
    :func:`make_dataset`, or to :func:`make_free_position_dataset` when a
    ``layout`` is given (then every split is free-position).
    """
    if not isinstance(n_objects_per_class, dict) or not n_objects_per_class:
        raise InputError(f"`n_objects_per_class` must be a dict split -> count; got {n_objects_per_class!r}.")
    unknown = sorted(set(n_objects_per_class) - set(SPLIT_ID_OFFSETS))
    if unknown:
        raise InputError(f"`n_objects_per_class` has unknown split(s) {unknown}; use {sorted(SPLIT_ID_OFFSETS)}.")
    seeds = dict(zip(SPLIT_ID_OFFSETS, spawn_seeds(random_state, len(SPLIT_ID_OFFSETS))))
    out = {}
    for split, count in n_objects_per_class.items():
        m = renders_per_object[split] if isinstance(renders_per_object, dict) else renders_per_object
        space = (factor_spaces or {}).get(split)
        if layout is None:
            out[split] = make_dataset(count, m, split=split, factor_space=space, random_state=seeds[split], **kwargs)
        else:
            out[split] = make_free_position_dataset(
                count, m, layout=layout, split=split, factor_space=space, random_state=seeds[split], **kwargs
            )
    return out
