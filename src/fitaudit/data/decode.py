"""Decoding image files into 8-bit grey or RGB pixels, whatever mode Pillow opens them in.

A classifier's evaluation pipeline starts from 8-bit pixels ``v`` and scales
them to ``v / 255`` (:class:`fitaudit.data.pipeline.EvalPipeline`). Every
mode Pillow opens is brought to that scale here, or refused with a reason:

* ``1``, ``L``, ``P``, ``RGB``, ``CMYK``, ``YCbCr`` and their variants:
  Pillow's own conversion (``Image.convert``; grey from colour by ITU-R
  601-2 luma, ``L = 0.299 R + 0.587 G + 0.114 B``, as torchvision's
  ``Grayscale``);
* ``LA``, ``PA``, ``RGBA``: the colour values, the alpha channel dropped
  (as torchvision's ``ImageFolder`` loader does);
* 16-bit grey (``I;16`` and its byte orders; a PNG opened as ``I``):
  ``round(v * 255 / 65535)`` (``Image.convert("L")`` clips every value
  above 255, so most of such an image came out pure white);
* 16-bit RGB PNG: Pillow reads the high byte of each value (``v >> 8``);
* animated images (GIF, APNG, WebP): the first frame;
* 32-bit integer (``I`` other than a PNG) and floating-point (``F``)
  pixels: refused, since their value range is not recorded in the file;
* more pixels than the ``image_pixels`` bound (:mod:`fitaudit.data.limits`,
  50 million by default; ``--limit image-pixels=N`` raises it): refused
  from the header, before decoding.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.data.limits import limits

#: file suffixes taken as images when listing a folder (other files are reported)
#: decoding threads by default, in the library and on the command line: the cores this process may run on.
#: Pillow releases the GIL while it decodes, so the threads decode in parallel; the decode stage must keep up
#: with a model on a GPU (benchmarks/bench_decode.py measures images per second against its consumption).
DECODE_THREADS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 2)

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".tif", ".tiff", ".webp")

#: Pillow formats accepted (by content, whatever the suffix)
IMAGE_FORMATS = ("JPEG", "PNG", "GIF", "BMP", "TIFF", "WEBP")

#: the formats named in messages
FORMATS_TEXT = "JPEG, PNG, GIF, BMP, TIFF or WebP"

#: the number of channels of grey and of colour images, and the Pillow mode each decodes to
MODES = {1: "L", 3: "RGB"}

#: 16-bit grey modes (Pillow's byte orders), scaled from [0, 65535] to [0, 255]
_WIDE_GREY = ("I;16", "I;16B", "I;16L", "I;16N")

#: modes whose pixel range the file does not record (Pillow opens 32-bit integer and float TIFFs so)
_UNSCALED = {
    "I": "32-bit integer pixels", "F": "32-bit floating-point pixels",
}


def _pil() -> Any:
    return import_optional("PIL.Image", "reading images")


def open_image(path: str | os.PathLike[str]) -> Any:
    """Pillow's ``Image.open`` (the header only), without its own decompression-bomb warning: the pixel bound
    here is fitaudit's (:func:`mode_problem`)."""
    pil = _pil()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pil.DecompressionBombWarning)
        return pil.open(path)


def mode_problem(image: Any) -> str | None:
    """Why an opened image cannot be decoded to 8-bit pixels (its mode, or more pixels than allowed), or None."""
    width, height = image.size
    allowed = limits().image_pixels
    if width * height > allowed:
        return (f"{width} x {height} pixels, more than the {allowed:,} fitaudit decodes per image "
                f"(raise it with `--limit image-pixels={width * height}`)")
    mode = image.mode
    if mode == "I" and image.format == "PNG":  # older Pillow opens 16-bit grey PNGs as "I"
        return None
    if mode in _UNSCALED:
        return (f"{_UNSCALED[mode]} (mode {mode}), whose value range the file does not record; "
                "save it with 8 or 16 bits per channel")
    return None


def _wide_grey(image: Any) -> Any:
    """A 16-bit grey image as 8-bit grey: ``round(v * 255 / 65535)``."""
    values = np.asarray(image, dtype=np.float64)
    return _pil().fromarray(np.rint(values * (255.0 / 65535.0)).clip(0, 255).astype(np.uint8), "L")


def as_mode(image: Any, channels: int = 3) -> Any:
    """An opened (loaded) Pillow image as 8-bit grey (``channels=1``) or RGB (``channels=3``).

    Raises
    ------
    InputError
        ``channels`` not 1 or 3; a mode whose range is unknown (:func:`mode_problem`).
    """
    if channels not in MODES:
        raise InputError(f"`channels` must be 1 (grey) or 3 (RGB); got {channels!r}.")
    problem = mode_problem(image)
    if problem:
        raise InputError(problem)
    if image.mode in _WIDE_GREY or image.mode == "I":
        image = _wide_grey(image)
    target = MODES[channels]
    return image if image.mode == target else image.convert(target)


def load_image(path: str | os.PathLike[str], channels: int = 3) -> Any:
    """Decode an image file's first frame into an 8-bit grey or RGB PIL image (fully loaded).

    Raises
    ------
    InputError
        A mode that is refused (:func:`mode_problem`); Pillow's own errors
        for unreadable files pass through.
    """
    with open_image(path) as image:
        image.seek(0)
        problem = mode_problem(image)
        if problem:
            raise InputError(f"{os.fspath(path)!r}: {problem}.")
        image.load()  # the pixels stay in memory when the file is closed
        return as_mode(image, channels)
