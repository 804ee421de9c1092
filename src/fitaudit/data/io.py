"""Loading and validating user data.

File layout
-----------
A dataset is a numpy ``.npz`` archive (``numpy.savez``, see :func:`save_npz`)
with two arrays:

* ``x`` -- inputs, float, shape ``(m, d)`` for feature vectors or
  ``(m, C, H, W)`` for images: channels first, values in ``[0, 1]``;
* ``y`` -- integer class labels in ``0, 1, ..., k-1``, shape ``(m,)``.

Other arrays in the archive are ignored. Files are read with
``allow_pickle=False``: object arrays are refused, never unpickled.
"""

from __future__ import annotations

import math
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_int, check_labels, check_memory, size_text
from fitaudit.checkpoint import atomic_save_npz
from fitaudit.data.archives import check_archive

#: first bytes of a zip archive (a .npz) and of a single .npy array
_ZIP_MAGIC = b"PK"
_NPY_MAGIC = b"\x93NUMPY"


def _validate_inputs(x: Any, name: str, *, image: bool) -> np.ndarray:
    array = np.asarray(x)
    if not (np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.bool_)) or np.issubdtype(
        array.dtype, np.complexfloating
    ):
        raise InputError(f"`{name}` must hold real numbers; got dtype {array.dtype}.")
    if image:
        if array.ndim != 4:
            raise InputError(
                f"`{name}` must be a batch of images of shape (m, C, H, W); got shape {array.shape}."
            )
        if array.shape[1] > 4 and array.shape[-1] in (1, 3, 4):
            raise InputError(
                f"`{name}` looks channels-last (shape {array.shape}); images must be channels-first "
                "(m, C, H, W): transpose with x.transpose(0, 3, 1, 2)."
            )
        if not np.issubdtype(array.dtype, np.floating):
            raise InputError(
                f"`{name}` must hold float images with values in [0, 1]; got dtype {array.dtype} "
                "(for 8-bit images use x / 255)."
            )
    elif array.ndim < 2:
        raise InputError(
            f"`{name}` must have one row per example, shape (m, d) or (m, C, H, W); got shape {array.shape}."
        )
    if array.shape[0] == 0:
        raise InputError(f"`{name}` is empty: it has 0 examples.")
    if np.issubdtype(array.dtype, np.floating):
        finite = np.isfinite(array)
        if not finite.all():
            rows = int(np.count_nonzero(~finite.reshape(len(array), -1).all(axis=1)))
            raise InputError(f"`{name}` must be finite; {rows} example(s) hold NaN or infinite values.")
    else:
        array = array.astype(np.float64)
    if image:
        low, high = float(array.min()), float(array.max())
        if low < 0.0 or high > 1.0:
            raise InputError(
                f"`{name}` must hold image values in [0, 1]; got values in [{low:g}, {high:g}]."
            )
    return array


def validate_dataset(
    x: Any,
    y: Any,
    *,
    n_classes: int | None = None,
    image: bool = False,
    name_x: str = "x",
    name_y: str = "y",
) -> tuple[np.ndarray, np.ndarray]:
    """Check a labelled dataset and return it as ``(x, y)`` arrays.

    Parameters
    ----------
    x : array-like, shape (m, ...)
        Real-valued inputs, finite, at least one example. Integer inputs
        become float64; float inputs keep their dtype.
    y : array-like, shape (m,)
        Integer class labels (integer-valued floats are accepted).
    n_classes : int, optional
        The model's number of classes; every label must be below it.
    image : bool
        ``x`` must be channels-first float images ``(m, C, H, W)`` in [0, 1].
    name_x, name_y : str
        Argument names used in error messages.

    Returns
    -------
    x : ndarray, shape (m, ...)
    y : ndarray of int64, shape (m,)
    """
    if n_classes is not None:
        n_classes = check_int(n_classes, "n_classes", minimum=2)
    inputs = _validate_inputs(x, name_x, image=image)
    labels_raw = np.asarray(y)
    if labels_raw.ndim == 1 and labels_raw.shape[0] != inputs.shape[0]:
        raise InputError(
            f"`{name_x}` has {inputs.shape[0]} examples but `{name_y}` has {labels_raw.shape[0]} "
            "labels; they must match one to one."
        )
    labels = check_labels(labels_raw, name_y, n_classes=n_classes)
    return inputs, labels


def read_npz(path: str | os.PathLike[str], *, name: str = "data") -> tuple[np.ndarray, np.ndarray]:
    """Read arrays ``x`` and ``y`` from an ``.npz`` archive, without validating them.

    Use :func:`load_npz` unless the labels need encoding first (e.g. the
    string classes of a scikit-learn model).
    """
    target = Path(path)
    if target.is_dir():
        raise InputError(f"`{name}`: {str(target)!r} is a folder; expected a .npz file.")
    if not target.is_file():
        raise InputError(f"`{name}`: file {str(target)!r} does not exist.")
    with open(target, "rb") as handle:
        head = handle.read(len(_NPY_MAGIC))
    if not head:
        raise InputError(f"`{name}`: {str(target)!r} is empty (0 bytes); expected a .npz archive with arrays x and y.")
    if not head.startswith(_ZIP_MAGIC) and not head.startswith(_NPY_MAGIC):
        raise InputError(
            f"`{name}`: {str(target)!r} is not a .npz archive (it does not start with the zip "
            "signature); save datasets with numpy.savez(path, x=x, y=y)."
        )
    check_archive(target, name=name)
    try:
        archive = np.load(target, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"`{name}`: {str(target)!r} is not a readable .npz archive ({exc}).") from exc
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise InputError(
            f"`{name}`: {str(target)!r} holds a single array; save x and y together with "
            "numpy.savez(path, x=x, y=y)."
        )
    with archive:
        arrays = []
        for key in ("x", "y"):
            if key not in archive.files:
                present = ", ".join(archive.files) or "none"
                raise InputError(
                    f"`{name}`: file {target.name!r} has no array {key!r} (it has: {present}); "
                    "a dataset needs arrays 'x' (inputs) and 'y' (labels)."
                )
            _check_member(target, key, name)
            try:
                arrays.append(archive[key])
            except ValueError as exc:  # object arrays need pickle, which is refused
                raise InputError(
                    f"`{name}`: array {key!r} in {target.name!r} is an object array; only numeric "
                    "arrays are loaded (pickled data is never read)."
                ) from exc
    return arrays[0], arrays[1]


def _check_member(path: Path, key: str, name: str) -> None:
    """Refuse array ``key`` of the archive from its header alone: more bytes than memory allows, or fewer
    bytes in the file than the header claims (a 6 KB file saying (1e11, 64)); nothing is allocated first."""
    try:
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo(f"{key}.npy")
            with archive.open(info) as handle:
                version = np.lib.format.read_magic(handle)
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                shape, _, dtype = read(handle)
                offset = handle.tell()
    except (KeyError, ValueError, OSError, zipfile.BadZipFile, EOFError):
        return  # np.load says what is wrong with it
    if dtype.hasobject:
        return  # refused when read (pickled data is never loaded)
    nbytes = math.prod(int(side) for side in shape) * dtype.itemsize
    claims = f"`{name}`: {str(path)!r}: array {key!r} claims shape {tuple(int(d) for d in shape)} of {dtype}"
    check_memory(nbytes, claims)
    if info.file_size - offset < nbytes:
        raise InputError(f"{claims} ({size_text(nbytes)}) but holds {size_text(info.file_size - offset)}: "
                         "the file is truncated or corrupt.")


def read_margin(path: str | os.PathLike[str], *, name: str = "data") -> int:
    """Spare pixels per side of the canvases in an ``.npz`` dataset: its scalar array ``margin``, 0 without one.

    ``fitaudit shapes dataset --free-position`` (and
    :meth:`fitaudit.data.shapes.ShapesDataset.save_npz`) store canvases
    ``(m, C, H + 2P, W + 2P)`` in ``x`` and ``P`` in ``margin``: the images
    are the centre ``H x W`` crops (:func:`centre_crop`).
    """
    with np.load(Path(path), allow_pickle=False) as archive:
        if "margin" not in archive.files:
            return 0
        try:
            value = archive["margin"]
        except ValueError as exc:  # an object array would need pickle, which is refused
            raise InputError(f"`{name}`: array 'margin' is an object array; expected one integer.") from exc
    if value.ndim != 0 or not np.issubdtype(value.dtype, np.integer) or np.issubdtype(value.dtype, np.bool_) \
            or int(value) < 0:
        shown = value.item() if value.ndim == 0 else f"an array of shape {value.shape}"
        raise InputError(f"`{name}`: array 'margin' must be one integer >= 0 (pixels per side); got {shown!r} "
                         f"({value.dtype}).")
    return int(value)


def centre_crop(canvases: np.ndarray, margin: int) -> np.ndarray:
    """The images x: crops at offset ``(P, P)`` of canvases ``(m, C, H + 2P, W + 2P)``."""
    return canvases[:, :, margin : canvases.shape[2] - margin, margin : canvases.shape[3] - margin]


def load_npz(
    path: str | os.PathLike[str],
    *,
    n_classes: int | None = None,
    image: bool = False,
    name: str = "data",
) -> tuple[np.ndarray, np.ndarray]:
    """Load and validate a dataset saved as ``.npz`` with arrays ``x`` and ``y``.

    Parameters
    ----------
    path : path
        The archive (layout in the module docstring).
    n_classes : int, optional
        Bound on the labels, e.g. the ``n_classes`` of the model the data is
        for (``as_classifier(model).n_classes``).
    image : bool
        Require channels-first images in [0, 1].
    name : str
        Argument name used in error messages (``"--data"`` on the CLI).

    Returns
    -------
    x : ndarray, shape (m, ...)
    y : ndarray of int64, shape (m,)
    """
    x, y = read_npz(path, name=name)
    return validate_dataset(
        x, y, n_classes=n_classes, image=image, name_x=f"{name}['x']", name_y=f"{name}['y']"
    )


def save_npz(path: str | os.PathLike[str], x: Any, y: Any) -> Path:
    """Validate ``(x, y)`` and save them as a compressed ``.npz`` (arrays ``x``, ``y``).

    Returns
    -------
    Path
        The file written (numpy appends ``.npz`` when missing).
    """
    inputs, labels = validate_dataset(x, y)
    target = Path(path)
    if target.suffix != ".npz":
        target = target.with_name(target.name + ".npz")
    return atomic_save_npz(target, {"x": inputs, "y": labels})
