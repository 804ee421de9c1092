"""A user's own images: folders, CSV lists, the evaluation pipeline and canvases.

The standard evaluation of an image classifier (and the protocol of
Werpachowski, Gyorgy, Szepesvari, NeurIPS 2019, Sec. 5 on ImageNet):
resize the shorter side to R (bilinear, antialiased), centre crop C x C,
scale to [0, 1], normalise per channel ``(x - mean) / std``. User guide:
docs/overfit.md#your-own-images-image-folders-and-the-evaluation-pipeline.

* :class:`EvalPipeline` -- that pipeline as one object (``resize``, ``crop``,
  ``mean``, ``std``), recorded in results with :meth:`EvalPipeline.to_dict`.
  It gives the model's inputs and, where R > C, the *canvases* of the
  translational AEG: the centre ``C + 2P`` square of the resized image,
  ``P = floor((R - C) / 2)`` (:attr:`EvalPipeline.margin`), whose centre
  ``C x C`` crop is exactly the model's input before normalisation;
  the default shift is ``eps = floor(P / 3)`` (:meth:`EvalPipeline.default_eps`;
  ImageNet's R = 256, C = 224: P = 16, eps = 5).
* :class:`ImageDataset` -- a list of image files with labels, from a folder
  ``root/<class>/<file>`` (classes sorted, as torchvision's ``ImageFolder``)
  or a CSV of ``path,label`` (:func:`open_images`). The class order may come
  from the model's metadata and is checked against the folder.
* :meth:`ImageDataset.check` -- a fast pass over every file (header, and
  the end-of-image marker of JPEG and PNG; a full decode only for suspects)
  that lists broken files by name before any long run starts;
  :func:`check_images` raises or drops them (``skip_broken``).
* :meth:`ImageDataset.batches` -- the images decoded and transformed in
  batches by a pool of threads (Pillow releases the GIL while decoding and
  resizing), one batch ahead of the consumer: memory holds at most two
  batches whatever the number of images.
* :class:`PipelineClassifier` -- a classifier on [0, 1] images that applies
  the pipeline's normalisation before calling the model, so canvases can be
  shifted before normalising (the two commute).

Images are decoded to 8-bit RGB, or grey for a model that takes one channel
(:attr:`EvalPipeline.channels`), whatever mode Pillow opens them in
(:mod:`fitaudit.data.decode`: 16-bit grey scaled, alpha dropped, the first
frame of an animation; float and 32-bit integer pixels refused). Nothing
here imports torch.
"""

from __future__ import annotations

import csv
import dataclasses
import errno
import functools
import os
import re
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit._validation import check_int, size_text
from fitaudit.data.decode import (
    DECODE_THREADS,
    FORMATS_TEXT,
    IMAGE_FORMATS,
    IMAGE_SUFFIXES,
    MODES,
    as_mode,
    load_image,
    mode_problem,
    open_image,
)

#: Pillow's resampling filters a pipeline may name (``PIL.Image.Resampling``, lower case)
RESAMPLING = ("bilinear", "bicubic", "nearest", "lanczos", "box", "hamming")

#: ImageNet's per-channel mean and standard deviation (torchvision's models)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

#: the most one decoded image may take (a float32 RGB canvas of side --resize): --resize up to 4729
MAX_IMAGE_BYTES = 2**28
#: an integer label of a CSV (an output index): ASCII digits, optionally negative (refused below)
_INTEGER = re.compile(r"-?[0-9]+")
#: a label that looks like a number without being an output index ("--1", "+3", "²", "10**30", "1e3")
_NUMBER_LIKE = re.compile(r"[-+]*[\d²³¹⁰-⁹]+(?:(?:\*\*|[eE^.])[-+]?[\d²³¹⁰-⁹]+)?")
#: the largest output index a CSV label may name
_MAX_LABEL = 2**31 - 1
#: how many broken files an error message lists by name
_LISTED = 10
#: image sets up to this many bytes are keyed by their files' content unless told otherwise
#: (``verify_content``): keying 256 MB by content took 2.2 s against 0.15 s by sizes and times on a
#: busy 2-core machine (benchmarks/results/image_keys.txt); larger sets are keyed by sizes and times
CONTENT_KEY_LIMIT = 256 * 2**20
#: how each rule of :meth:`ImageDataset.key_rule` is put in a reuse message
KEY_RULES = {"content": "by the files' content", "stat": "by the files' sizes and modification times"}
#: the option of the commands that can leave broken image files out, suggested when one is found
SKIP_OPTION = "--skip-broken"

_JPEG_END = b"\xff\xd9"
_PNG_END = b"IEND\xaeB`\x82"


def _pil() -> Any:
    return import_optional("PIL.Image", "reading images")


def _per_channel(channels: int) -> str:
    return "3 numbers, one per RGB channel" if channels == 3 else "1 number, for a grey (1-channel) model"


def _count(values: Any) -> int:
    """How many values ``values`` holds (0 for none, or for something that is not a sequence)."""
    try:
        return len(values)
    except TypeError:
        return 0


def _channels(values: Any, option: str, channels: int) -> tuple[float, ...]:
    """``channels`` finite floats (one per channel) or an error naming ``option``."""
    try:
        numbers = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        raise InputError(f"`{option}` must be {_per_channel(channels)}; got {values!r}.") from None
    if len(numbers) != channels:
        raise InputError(f"`{option}` must be {_per_channel(channels)}; got {len(numbers)}: {list(numbers)}.")
    if not all(np.isfinite(numbers)):
        raise InputError(f"`{option}` must be finite; got {list(numbers)}.")
    return numbers


@dataclasses.dataclass(frozen=True)
class EvalPipeline:
    """The evaluation transform: resize shorter side to R, centre crop C, normalise.

    Parameters
    ----------
    resize : int
        R, the length of the shorter side after resizing (bilinear,
        antialiased: Pillow's ``BILINEAR`` filter, as torchvision's
        ``Resize(R)`` on PIL images; the longer side becomes
        ``int(R * long / short)``).
    crop : int
        C, the side of the centre crop (``C <= R``); the crop's corner is at
        ``round((H - C) / 2), round((W - C) / 2)``, as torchvision's
        ``CenterCrop``.
    mean, std : floats, one per channel
        Per-channel normalisation ``(x - mean) / std`` of the [0, 1] crop
        (default: none; ImageNet: :data:`IMAGENET_MEAN`, :data:`IMAGENET_STD`).
    channels : {1, 3}, optional
        What the model takes: 3 (RGB) or 1 (grey, 8-bit luma of the decoded
        image). Default: as many as ``mean`` (or ``std``) has values, else 3.
    resample : str
        Pillow's resampling filter of the resize: ``"bilinear"`` (default,
        torchvision's), ``"bicubic"``, ``"nearest"``, ``"lanczos"``,
        ``"box"`` or ``"hamming"`` (as a Hugging Face processor names it).
    squash : bool
        Resize both sides to R, ignoring the aspect ratio (a Hugging Face
        processor with a fixed ``size``), instead of the shorter side.

    Notes
    -----
    Errors name the command-line options (``--resize``, ``--crop``,
    ``--mean``, ``--std``, ``--eps``), the same names as the fields.
    """

    resize: int
    crop: int
    mean: tuple[float, ...] = ()
    std: tuple[float, ...] = ()
    channels: int | None = None
    resample: str = "bilinear"
    squash: bool = False

    def __post_init__(self) -> None:
        resize = check_int(self.resize, "--resize", minimum=1)
        crop = check_int(self.crop, "--crop", minimum=1)
        image = 4 * 3 * resize * resize  # one float32 RGB canvas of R x R, the least a decoded image takes
        if image > MAX_IMAGE_BYTES:
            raise InputError(
                f"`--resize` {resize} would make every decoded image at least 3 x {resize} x {resize} float32 values "
                f"({size_text(image)}; more than the {size_text(MAX_IMAGE_BYTES)} fitaudit allows per image), "
                "before a batch of them is held; use the resize the model was evaluated with "
                "(a model file's 'pipeline' records it)."
            )
        if resize < crop:
            raise InputError(
                f"`--resize` must be at least `--crop` (the crop is taken from the resized image); "
                f"got --resize {resize} < --crop {crop}."
            )
        given = next((_count(v) for v in (self.mean, self.std) if _count(v)), 3)
        channels = (given if given in MODES else 3) if self.channels is None else self.channels
        if channels not in MODES:
            raise InputError(f"`channels` must be 1 (grey) or 3 (RGB); got {channels!r}.")
        mean = _channels(self.mean if _count(self.mean) else (0.0,) * channels, "--mean", channels)
        std = _channels(self.std if _count(self.std) else (1.0,) * channels, "--std", channels)
        if min(std) <= 0:
            raise InputError(f"`--std` must be positive; got {list(std)}.")
        for option, values, low in (("--mean", mean, "["), ("--std", std, "(")):
            if max(values) > 1 or min(values) < 0:  # the crop's pixel values are in [0, 1]: so are their means and stds
                raise InputError(
                    f"`{option}` must be in {low}0, 1] per channel, for pixel values in [0, 1] (ImageNet: --mean "
                    f"0.485 0.456 0.406 --std 0.229 0.224 0.225); got {list(values)} (on the 0-255 scale? divide by 255)."
                )
        object.__setattr__(self, "resize", resize)
        object.__setattr__(self, "crop", crop)
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "std", std)
        object.__setattr__(self, "channels", channels)
        if self.resample not in RESAMPLING:
            raise InputError(f"`resample` must be one of {', '.join(RESAMPLING)}; got {self.resample!r}.")
        if not isinstance(self.squash, bool):
            raise InputError(f"`squash` must be true or false; got {self.squash!r}.")

    @property
    def margin(self) -> int:
        """P = floor((R - C) / 2), the spare pixels per side of the canvases."""
        return (self.resize - self.crop) // 2

    @property
    def canvas_size(self) -> int:
        """C + 2P, the side of the canvases."""
        return self.crop + 2 * self.margin

    def default_eps(self) -> int:
        """eps = floor(P / 3): the largest shift whose h_g (shifts up to 3 eps) stays inside the canvas.

        Raises
        ------
        InputError
            When P < 3, i.e. R - C < 6: no translational AEG fits.
        """
        return self.check_eps(None)

    def check_eps(self, eps: int | None) -> int:
        """``eps`` (or the default floor(P / 3) for None) checked against 3 eps <= P."""
        room = self.margin // 3
        if eps is None:
            if room < 1:
                raise InputError(
                    f"`--resize` {self.resize} and `--crop` {self.crop} leave P = floor((R - C) / 2) = "
                    f"{self.margin} spare pixels per side; the translational AEG needs P >= 3 eps, so "
                    f"at least 3 (make --resize at least --crop + 6 = {self.crop + 6})."
                )
            return room
        eps = check_int(eps, "--eps", minimum=1)
        if 3 * eps > self.margin:
            fix = (
                f"use --eps <= {room} or a larger --resize"
                if room >= 1
                else f"make --resize at least --crop + {6 * eps} = {self.crop + 6 * eps}"
            )
            raise InputError(
                f"`--eps` {eps} needs 3 * eps = {3 * eps} spare pixels per side, but `--resize` "
                f"{self.resize} and `--crop` {self.crop} leave P = floor((R - C) / 2) = {self.margin}; "
                f"{fix}."
            )
        return eps

    @property
    def n_channels(self) -> int:
        """The number of channels of the model's input (1 or 3)."""
        return len(self.mean)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe settings (``resize``, ``crop``, ``mean``, ``std``, ``channels``, ``margin``; ``resample`` and ``squash`` when not the default)."""
        settings: dict[str, Any] = {
            "resize": self.resize, "crop": self.crop, "mean": list(self.mean), "std": list(self.std),
            "channels": self.n_channels, "margin": self.margin,
        }
        if self.resample != "bilinear":
            settings["resample"] = self.resample
        if self.squash:
            settings["squash"] = True
        return settings

    @classmethod
    def from_dict(cls, data: Any, *, name: str = "pipeline") -> EvalPipeline:
        """Rebuild from :meth:`to_dict` output (or a model's ``config.json`` ``"pipeline"``)."""
        if not isinstance(data, dict) or not {"resize", "crop"} <= set(data):
            raise InputError(
                f"`{name}` must be a JSON object with 'resize' and 'crop' (and optional 'mean', "
                f"'std'); got {data!r}."
            )
        options = {k: data[k] for k in ("mean", "std", "channels", "resample", "squash") if data.get(k) is not None}
        return cls(resize=data["resize"], crop=data["crop"], **options)

    def resized(self, image: Any) -> Any:
        """The PIL image with its shorter side resized to R (both sides with ``squash``), antialiased."""
        width, height = image.size
        if self.squash:
            size = (self.resize, self.resize)
        elif width <= height:
            size = (self.resize, int(self.resize * height / width))
        else:
            size = (int(self.resize * width / height), self.resize)
        return image.resize(size, getattr(_pil().Resampling, self.resample.upper()))

    def _corner(self, width: int, height: int) -> tuple[int, int]:
        """(top, left) of the centre C x C crop of a ``width x height`` image."""
        return int(round((height - self.crop) / 2.0)), int(round((width - self.crop) / 2.0))

    def canvas_pixels(self, image: Any) -> np.ndarray:
        """The uint8 canvas of a PIL image: shape ``(C + 2P, C + 2P, channels)`` (rows, columns, channels).

        The image is first decoded to grey or RGB (:func:`fitaudit.data.decode.as_mode`);
        the resized image's centre C x C crop sits at offset (P, P) inside it.
        """
        resized = self.resized(as_mode(image, self.n_channels))
        top, left = self._corner(*resized.size)
        p = self.margin
        pixels = np.asarray(resized)[top - p : top + self.crop + p, left - p : left + self.crop + p]
        return pixels[:, :, None] if pixels.ndim == 2 else pixels

    def canvas(self, image: Any) -> np.ndarray:
        """The canvas in [0, 1], channels first: float32 ``(channels, C + 2P, C + 2P)``, not normalised."""
        return self.to_array(self.canvas_pixels(image), "canvas")

    def model_input(self, image: Any) -> np.ndarray:
        """What the model sees: the normalised centre crop, float32 ``(channels, C, C)``."""
        return self.to_array(self.canvas_pixels(image), "input")

    @functools.cached_property
    def _tables(self) -> dict[str, np.ndarray]:
        """Per channel, the float32 value of each of the 256 grey levels: ``v / 255`` and ``(v / 255 - mean) / std``.

        The same float32 operations as :meth:`normalise` on ``v / 255``, so a
        lookup gives bit-identical numbers in one pass.
        """
        unit = np.arange(256, dtype=np.float32) / np.float32(255.0)
        return {"canvas": np.stack([unit] * self.n_channels), "input": self.normalise(unit[None, None, :])[:, 0, :]}

    def to_array(self, pixels: np.ndarray, kind: str = "canvas") -> np.ndarray:
        """uint8 canvas pixels ``(S, S, channels)`` as float32 channels first.

        ``kind="canvas"``: the whole canvas in [0, 1], ``(channels, S, S)``;
        ``kind="input"``: the normalised centre crop, ``(channels, C, C)``.
        """
        if kind == "input":
            p = self.margin
            pixels = pixels[p : p + self.crop, p : p + self.crop]
        table = self._tables[kind]
        out = np.empty((self.n_channels, pixels.shape[0], pixels.shape[1]), dtype=np.float32)
        for channel in range(self.n_channels):
            np.take(table[channel], pixels[:, :, channel], out=out[channel])
        return out

    def normalise(self, x: np.ndarray) -> np.ndarray:
        """``(x - mean) / std`` per channel of [0, 1] images ``(..., channels, H, W)``, float32."""
        mean = np.asarray(self.mean, dtype=np.float32)[:, None, None]
        std = np.asarray(self.std, dtype=np.float32)[:, None, None]
        return ((np.asarray(x, dtype=np.float32) - mean) / std).astype(np.float32, copy=False)


def normalise_tensor(x: Any, mean: Sequence[float], std: Sequence[float]) -> Any:
    """``(x - mean) / std`` per channel of a torch tensor of images ``(..., channels, H, W)``, where it lies.

    The device path's normalisation (the translational AEG's crops, the
    leakage search's penultimate features, the examiner's image transforms,
    :class:`~fitaudit.data.transforms.ImageTransformGenerator`): on a float32 tensor the same
    float32 operations as :meth:`EvalPipeline.normalise`, so the same numbers
    on any device.
    """
    torch = import_optional("torch", "normalising images on a device")
    mean_t = torch.as_tensor(mean, dtype=x.dtype, device=x.device)[:, None, None]
    std_t = torch.as_tensor(std, dtype=x.dtype, device=x.device)[:, None, None]
    return (x - mean_t) / std_t


@dataclasses.dataclass(frozen=True)
class BrokenImage:
    """A file that cannot be used as an image: its path and why."""

    path: str
    reason: str


def _link_problem(path: str) -> str | None:
    """Why a symbolic link cannot be followed (it dangles or loops), or None (not a link, or a good one)."""
    if not os.path.islink(path):
        return None
    try:
        os.stat(path)
    except OSError as exc:
        return "a symbolic link that loops" if exc.errno == errno.ELOOP else "a symbolic link to a missing file"
    return None


def _ends_cleanly(path: str, image_format: str) -> bool:
    """Whether the file ends with its format's end marker (JPEG EOI, PNG IEND): a truncation check."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - 64))
        tail = handle.read()
    if image_format == "JPEG":
        return tail.rstrip(b"\x00\r\n ").endswith(_JPEG_END)
    return tail.endswith(_PNG_END)


def image_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` is not a usable image, or None when it is.

    Fast for good JPEG and PNG files: Pillow reads the header only (format
    and mode, :func:`fitaudit.data.decode.mode_problem`), and the file's
    last bytes must hold the format's end marker; a file without it (a
    truncated download, or trailing data) and every other format is decoded
    in full, and is broken only if that fails. A symbolic link that dangles
    or loops is broken.
    """
    name = os.fspath(path)
    link = _link_problem(name)
    if link:
        return link
    try:
        with open_image(name) as image:
            image_format = image.format
            problem = mode_problem(image)
    except Exception as exc:  # Pillow raises UnidentifiedImageError, OSError, DecompressionBombError...
        return f"not an image Pillow can read ({type(exc).__name__})"
    if image_format not in IMAGE_FORMATS:
        return f"a {image_format} image, not {FORMATS_TEXT}"
    if problem:
        return problem
    if image_format in ("JPEG", "PNG") and _ends_cleanly(name, image_format):
        return None
    try:
        load_image(name)
    except Exception as exc:  # truncated or corrupt data
        return f"truncated or corrupt {image_format} ({exc})"
    return None


@dataclasses.dataclass(frozen=True, eq=False)  # holds arrays: compared by identity
class ImageBatch:
    """One batch of decoded images.

    Attributes
    ----------
    index : ndarray of int, shape (n,)
        Positions of the images in the :class:`ImageDataset`.
    images : ndarray of float32 or uint8
        ``(n, channels, C + 2P, C + 2P)`` canvases in [0, 1] (``kind="canvas"``),
        the same canvases as uint8 pixels 0-255 (``kind="pixels"``: a quarter
        of the bytes, for a device that scales and normalises them itself) or
        ``(n, channels, C, C)`` normalised model inputs (``kind="input"``).
    labels : ndarray of int, shape (n,)
    broken : list of BrokenImage
        Files of this batch that failed to decode and were skipped
        (``skip_broken=True``); their positions are not in ``index``.
    """

    index: np.ndarray
    images: np.ndarray
    labels: np.ndarray
    broken: list[BrokenImage]


def _total_size(paths: Sequence[str]) -> int:
    """Bytes in the files (those that cannot be read count nothing: the checks name them)."""
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except OSError:
            pass
    return total


def _file_sha256(path: str) -> str:
    """SHA-256 of a file's bytes, read in blocks."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _decode(path: str, pipeline: EvalPipeline, kind: str) -> np.ndarray | BrokenImage:
    """One file as a float32 canvas or model input (:meth:`EvalPipeline.to_array`), uint8 canvas pixels
    channels first (``kind="pixels"``), or why it failed.

    Runs in a worker thread: Pillow and numpy release the GIL for the heavy parts.
    """
    try:
        pixels = pipeline.canvas_pixels(load_image(path, pipeline.n_channels))
        if kind == "pixels":
            return np.ascontiguousarray(pixels.transpose(2, 0, 1))
        return pipeline.to_array(pixels, kind)
    except Exception as exc:  # any decoding failure is reported by name, never a traceback
        return BrokenImage(path, f"could not be decoded ({type(exc).__name__}: {exc})")


@dataclasses.dataclass(frozen=True, eq=False)  # holds arrays: compared by identity
class ImageDataset:
    """Image files and their labels (nothing decoded until :meth:`batches`).

    Attributes
    ----------
    paths : tuple of str
        The files, in order (folder: classes sorted, files sorted within a class).
    labels : ndarray of int, shape (m,)
        Class indices into :attr:`classes` (or, for a CSV of integer labels
        without class names, the model's output indices).
    classes : list of str or None
        Class names by index; None for integer labels without names.
    source : str
        The folder or CSV they came from.
    verify_content : bool or None
        How :meth:`fingerprint` keys the files: True by their content
        (every byte read), False by their sizes and modification times, None
        (default) by content when they hold at most :data:`CONTENT_KEY_LIMIT`
        bytes (:meth:`key_rule`).
    """

    paths: tuple[str, ...]
    labels: np.ndarray
    classes: list[str] | None
    source: str
    verify_content: bool | None = None

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def n_classes(self) -> int | None:
        """Number of classes named, or None for unnamed integer labels."""
        return None if self.classes is None else len(self.classes)

    def subset(self, rows: Sequence[int] | np.ndarray) -> ImageDataset:
        """The images at positions ``rows`` (in that order), keyed by the rule of the whole set."""
        rows = np.asarray(rows, dtype=np.int64)
        return dataclasses.replace(
            self, paths=tuple(self.paths[i] for i in rows), labels=self.labels[rows],
            verify_content=self.key_rule() == "content",
        )

    def key_rule(self) -> str:
        """``"content"`` or ``"stat"``: how :meth:`fingerprint` keys the files (see ``verify_content``)."""
        if self.verify_content is None:
            return "content" if _total_size(self.paths) <= CONTENT_KEY_LIMIT else "stat"
        return "content" if self.verify_content else "stat"

    def fingerprint(self) -> str:
        """Hash of the file list, labels, and every file's content or size and modification time.

        By :meth:`key_rule`: the content (a file replaced in place by another
        of the same size and time changes it), or the sizes and times alone
        (no file read; such a replacement would not change it).
        """
        from fitaudit.checkpoint import fingerprint

        files: list[tuple[Any, ...]]
        if self.key_rule() == "content":
            files = [(p, _file_sha256(p)) for p in self.paths]
        else:
            files = [(p, info.st_size, info.st_mtime_ns) for p, info in ((p, os.stat(p)) for p in self.paths)]
        return fingerprint("ImageDataset", self.key_rule(), files, self.labels, self.classes)

    def check(self, *, decode_threads: int = DECODE_THREADS, progress: bool = False) -> list[BrokenImage]:
        """Every file that is not a usable image (:func:`image_problem`), in order.

        Parameters
        ----------
        decode_threads : int
            Threads reading the files (default: this machine's cores, :data:`~fitaudit.data.decode.DECODE_THREADS`).
        progress : bool
            A progress bar on stderr.
        """
        decode_threads = check_int(decode_threads, "decode_threads", minimum=1)
        with ThreadPoolExecutor(decode_threads) as pool:
            problems = list(
                tqdm(
                    pool.map(image_problem, self.paths, chunksize=64),
                    total=len(self.paths), desc="checking images", disable=not progress, unit="img",
                )
            )
        return [BrokenImage(p, why) for p, why in zip(self.paths, problems) if why is not None]

    def arrays(
        self, pipeline: EvalPipeline, *, kind: str = "input", batch_size: int = 256, decode_threads: int = DECODE_THREADS,
        progress: bool = False, name: str = "--images",
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every image decoded at once, ``(x, labels)``: for sets that must be in memory (a population's data).

        ``x`` is float32 ``(m, channels, C, C)`` model inputs (``kind="input"``) or
        ``(m, channels, S, S)`` canvases; a broken file raises (run
        :func:`check_images` first to list them all).
        """
        x = np.concatenate([b.images for b in self.batches(pipeline, kind=kind, batch_size=batch_size,
                                                            decode_threads=decode_threads, progress=progress, name=name)])
        return x, np.asarray(self.labels, dtype=np.int64)

    def batches(
        self,
        pipeline: EvalPipeline,
        *,
        kind: str = "canvas",
        batch_size: int = 64,
        decode_threads: int = DECODE_THREADS,
        skip_broken: bool = False,
        progress: bool = False,
        name: str = "--images",
        skip_option: str | None = SKIP_OPTION,
    ) -> Iterator[ImageBatch]:
        """Decode and transform the images batch by batch, in order.

        Parameters
        ----------
        pipeline : EvalPipeline
        kind : {"canvas", "pixels", "input"}
            Canvases in [0, 1] for the translational AEG, the same canvases
            as uint8 pixels (channels first), or the normalised model inputs.
        batch_size : int
            Images per batch; the next batch is decoded while the caller
            works on the current one.
        decode_threads : int
            Decoding threads (default: this machine's cores, :data:`~fitaudit.data.decode.DECODE_THREADS`).
        skip_broken : bool
            Skip files that fail to decode (listed in :attr:`ImageBatch.broken`)
            instead of raising.
        progress : bool
            A progress bar over images (stderr).
        name : str
            Option named in error messages.
        skip_option : str or None
            The caller's option that sets ``skip_broken``, suggested in the
            error (``None``: the caller has none, nothing is suggested).

        Raises
        ------
        InputError
            A file fails to decode and ``skip_broken`` is False. Run
            :func:`check_images` first to find every such file in one pass.
        """
        if kind not in ("canvas", "pixels", "input"):
            raise InputError(f"`kind` must be 'canvas', 'pixels' or 'input'; got {kind!r}.")
        batch_size = check_int(batch_size, "batch_size", minimum=1)
        decode_threads = check_int(decode_threads, "decode_threads", minimum=1)
        starts = range(0, len(self), batch_size)
        bar = tqdm(total=len(self), desc="images", unit="img", disable=not progress)
        with ThreadPoolExecutor(decode_threads) as pool:
            pending: deque[tuple[int, list[Future[Any]]]] = deque()

            def submit(start: int) -> None:
                chunk = self.paths[start : start + batch_size]
                pending.append((start, [pool.submit(_decode, p, pipeline, kind) for p in chunk]))

            for start in starts[:1]:
                submit(start)
            next_start = 1
            try:
                while pending:
                    start, futures = pending.popleft()
                    if next_start < len(starts):
                        submit(starts[next_start])
                        next_start += 1
                    yield self._assemble(start, [f.result() for f in futures], pipeline, kind, skip_broken, name, skip_option)
                    bar.update(len(futures))
            finally:
                for _, futures in pending:
                    for future in futures:
                        future.cancel()
                bar.close()

    def _assemble(
        self, start: int, decoded: list[Any], pipeline: EvalPipeline, kind: str, skip_broken: bool, name: str,
        skip_option: str | None,
    ) -> ImageBatch:
        broken = [d for d in decoded if isinstance(d, BrokenImage)]
        if broken and not skip_broken:
            skip = f" or pass {skip_option} (run the check first to list every broken file)" if skip_option else ""
            raise InputError(f"`{name}`: {broken[0].path!r} {broken[0].reason}; remove it{skip}.")
        keep = [i for i, d in enumerate(decoded) if not isinstance(d, BrokenImage)]
        index = start + np.asarray(keep, dtype=np.int64)
        size = pipeline.crop if kind == "input" else pipeline.canvas_size
        dtype = np.uint8 if kind == "pixels" else np.float32
        images = np.stack([decoded[i] for i in keep]) if keep else np.zeros((0, pipeline.n_channels, size, size), dtype)
        return ImageBatch(index=index, images=images, labels=self.labels[index], broken=broken)


def _listing(broken: Sequence[BrokenImage]) -> str:
    shown = "; ".join(f"{b.path} ({b.reason})" for b in broken[:_LISTED])
    more = f"; and {len(broken) - _LISTED} more" if len(broken) > _LISTED else ""
    return shown + more


def check_images(
    dataset: ImageDataset,
    *,
    skip_broken: bool = False,
    decode_threads: int = DECODE_THREADS,
    progress: bool = False,
    name: str = "--images",
    skip_option: str | None = SKIP_OPTION,
) -> tuple[ImageDataset, list[BrokenImage]]:
    """Check every file before a long run; raise listing the broken ones, or drop them.

    Parameters
    ----------
    dataset : ImageDataset
    skip_broken : bool
        Drop broken files (and count them) instead of raising.
    decode_threads, progress :
        See :meth:`ImageDataset.check`.
    name : str
        Option named in the error.
    skip_option : str or None
        The caller's option that sets ``skip_broken``, suggested in the
        error (``None``: the caller has none).

    Returns
    -------
    (ImageDataset, list of BrokenImage)
        The usable images and the broken files.

    Raises
    ------
    InputError
        Broken files and not ``skip_broken`` (the first ten listed by name),
        or no usable image left.
    """
    broken = dataset.check(decode_threads=decode_threads, progress=progress)
    if broken and not skip_broken:
        skip = f", or pass {skip_option} to leave them out (they are counted in the result)" if skip_option else ""
        raise InputError(
            f"`{name}`: {len(broken)} of {len(dataset)} files are not usable images: "
            f"{_listing(broken)}. Remove them{skip}."
        )
    bad = {b.path for b in broken}
    rows = [i for i, p in enumerate(dataset.paths) if p not in bad]
    if len(rows) < 2:
        raise InputError(f"`{name}`: fewer than 2 usable images in {dataset.source!r}.")
    return dataset.subset(rows), broken


def _named_dataset(
    paths: list[str], names: list[str], classes: Sequence[str] | None, *, kind: str, source: str, name: str
) -> ImageDataset:
    """Files labelled by class name: the class list is ``classes`` (or the sorted names); unknown names are an error."""
    if classes is None:
        ordered = sorted(set(names))
    else:
        ordered = [str(c) for c in classes]
        unknown = sorted(set(names) - set(ordered))
        if unknown:
            shown = ", ".join(repr(u) for u in unknown[:_LISTED])
            raise InputError(
                f"`{name}`: {kind} {source!r} has classes the model does not know: {shown} "
                f"(the model's {len(ordered)} classes: {', '.join(ordered[:_LISTED])}"
                + (", ..." if len(ordered) > _LISTED else "") + ")."
            )
    index = {c: i for i, c in enumerate(ordered)}
    labels = np.asarray([index[n] for n in names], dtype=np.int64)
    return ImageDataset(paths=tuple(paths), labels=labels, classes=ordered, source=source)


def open_image_folder(
    root: str | os.PathLike[str], *, classes: Sequence[str] | None = None, name: str = "--images"
) -> ImageDataset:
    """List a folder ``root/<class>/<file>`` (torchvision's ``ImageFolder`` layout).

    Parameters
    ----------
    root : path
        One sub-folder per class; hidden files and folders (``.name``) are ignored.
    classes : list of str, optional
        The model's class order (e.g. ``classes`` from its ``config.json``);
        each sub-folder must be one of them, and labels index this list.
        Default: the sub-folder names, sorted.
    name : str
        Option named in errors.

    Raises
    ------
    InputError
        Not a folder, no class sub-folders, an empty class folder, files
        directly in ``root``, files without an image suffix (listed), or a
        class folder the model does not know.
    """
    folder = Path(root)
    if not folder.is_dir():
        raise InputError(f"`{name}`: {str(folder)!r} is not a folder (expected root/<class>/<image>).")
    entries = sorted(e for e in folder.iterdir() if not e.name.startswith("."))
    class_dirs = [e for e in entries if e.is_dir()]
    loose = [e.name for e in entries if not e.is_dir()]
    if not class_dirs:
        raise InputError(
            f"`{name}`: {str(folder)!r} has no class sub-folders; expected root/<class>/<image> "
            "(or give a CSV of path,label)."
        )
    if loose:
        raise InputError(
            f"`{name}`: {str(folder)!r} holds files outside class folders ({', '.join(loose[:_LISTED])}); "
            "expected root/<class>/<image>."
        )
    paths: list[str] = []
    names: list[str] = []
    odd: list[str] = []
    for class_dir in class_dirs:
        files = sorted(
            f for f in class_dir.rglob("*") if (f.is_file() or _link_problem(str(f))) and not any(
                part.startswith(".") for part in f.relative_to(class_dir).parts
            )
        )
        if not files:
            raise InputError(f"`{name}`: class folder {str(class_dir)!r} holds no images.")
        for f in files:
            if f.suffix.lower() in IMAGE_SUFFIXES:
                paths.append(str(f))
                names.append(class_dir.name)
            else:
                odd.append(str(f))
    if odd:
        raise InputError(
            f"`{name}`: {len(odd)} files are not images (by their suffix: {', '.join(IMAGE_SUFFIXES)}): "
            f"{', '.join(odd[:_LISTED])}{' ...' if len(odd) > _LISTED else ''}; move them out of "
            f"{str(folder)!r}."
        )
    return _named_dataset(paths, names, classes, kind="folder", source=str(folder), name=name)


def open_image_csv(
    path: str | os.PathLike[str], *, classes: Sequence[str] | None = None, name: str = "--images"
) -> ImageDataset:
    """Read a CSV of ``path,label`` rows (an optional header row ``path,label``).

    Relative paths are relative to the CSV's folder. Labels are either all
    integers (class indices of the model) or all names (indexed in
    ``classes``, default the sorted names).
    """
    file = Path(path)
    try:
        with open(file, newline="", encoding="utf-8-sig") as handle:  # a byte-order mark is not part of the header
            rows = [row for row in csv.reader(handle) if row and any(cell.strip() for cell in row)]
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"`{name}`: could not read {str(file)!r} ({exc}).") from exc
    if rows and [c.strip().lower() for c in rows[0]] == ["path", "label"]:
        rows = rows[1:]
    bad = [i for i, row in enumerate(rows, 1) if len(row) != 2]
    if bad:
        raise InputError(f"`{name}`: {str(file)!r} row {bad[0]} must be path,label; got {rows[bad[0] - 1]!r}.")
    if not rows:
        raise InputError(f"`{name}`: {str(file)!r} lists no images (expected rows path,label).")
    base = file.parent
    paths = [str(base / p.strip()) if not Path(p.strip()).is_absolute() else p.strip() for p, _ in rows]
    missing = [p for p in paths if not Path(p).is_file() and not _link_problem(p)]  # bad links: listed as broken
    if missing:
        header = " (if the first row is a header, it must read path,label)" if missing[0] == paths[0] else ""
        raise InputError(
            f"`{name}`: {len(missing)} files listed in {str(file)!r} do not exist: "
            f"{', '.join(missing[:_LISTED])}{' ...' if len(missing) > _LISTED else ''}{header}."
        )
    texts = [label.strip() for _, label in rows]
    if all(_INTEGER.fullmatch(t) for t in texts):  # ASCII digits only: "²" or "--1" are names, not numbers
        values = [int(t) for t in texts]
        if min(values) < 0 or max(values) > _MAX_LABEL:
            worst = min(values) if min(values) < 0 else max(values)
            raise InputError(f"`{name}`: integer labels in {str(file)!r} must be output indices from 0 to "
                             f"{_MAX_LABEL}; got {worst}.")
        labels = np.asarray(values, dtype=np.int64)
        return ImageDataset(
            paths=tuple(paths), labels=labels, classes=list(classes) if classes else None, source=str(file)
        )
    numeric = [t for t in texts if _NUMBER_LIKE.fullmatch(t)]
    if numeric and len(numeric) == len(texts):  # "--1", "²", "10**30": meant as numbers, readable as none
        raise InputError(f"`{name}`: {str(file)!r} has the label {numeric[0]!r}, which is neither an output index "
                         "(0, 1, 2, ... in ASCII digits) nor a class name; labels are one or the other.")
    return _named_dataset(paths, texts, classes, kind="CSV", source=str(file), name=name)


def open_images(
    path: str | os.PathLike[str], *, classes: Sequence[str] | None = None, name: str = "--images"
) -> ImageDataset:
    """An image folder (:func:`open_image_folder`) or a ``.csv`` list (:func:`open_image_csv`)."""
    target = Path(path)
    if target.is_file() and target.suffix.lower() == ".csv":
        return open_image_csv(target, classes=classes, name=name)
    if target.is_file():
        raise InputError(f"`{name}`: {str(target)!r} must be a folder root/<class>/<image> or a .csv file.")
    if not target.exists():
        raise InputError(f"`{name}`: {str(target)!r} does not exist.")
    return open_image_folder(target, classes=classes, name=name)


def check_model_classes(dataset: ImageDataset, n_classes: int, *, model: str, name: str = "--images") -> None:
    """The data's classes must be the model's outputs: as many names, labels in range.

    Raises
    ------
    InputError
        Named classes whose number differs from the model's outputs, or
        labels outside ``0 .. n_classes - 1``.
    """
    if dataset.classes is not None and len(dataset.classes) != n_classes:
        raise InputError(
            f"`{name}`: {dataset.source!r} has {len(dataset.classes)} classes "
            f"({', '.join(dataset.classes[:_LISTED])}{', ...' if len(dataset.classes) > _LISTED else ''}) "
            f"but model {model} has {n_classes} outputs; give the model's class names in order as "
            "'classes' in its config.json (or its ONNX metadata) so the folders can be matched."
        )
    top = int(dataset.labels.max()) if len(dataset) else -1
    if top >= n_classes:
        raise InputError(
            f"`{name}`: {dataset.source!r} has label {top}, but model {model} has only {n_classes} outputs."
        )


class PipelineClassifier:
    """A classifier on [0, 1] images ``(n, 3, C, C)``: normalises, then calls the model.

    Lets the translational AEG shift un-normalised canvases (normalising a
    shifted crop equals shifting the normalised image;
    docs/overfit.md#translational-aegs-for-images).

    Parameters
    ----------
    model : classifier
        Anything with ``n_classes`` and ``logits`` (:class:`fitaudit.models.ClassifierProtocol`).
    pipeline : EvalPipeline
    """

    def __init__(self, model: Any, pipeline: EvalPipeline) -> None:
        self.model = model
        self.pipeline = pipeline

    def __repr__(self) -> str:
        return f"PipelineClassifier({self.model!r}, {self.pipeline!r})"

    def __getattr__(self, name: str) -> Any:
        """What the wrapped model says of itself (``kind``, ``batch_size``, ``image_layout`` ...)."""
        if name.startswith("__") or name in ("model", "pipeline"):
            raise AttributeError(name)
        return getattr(self.model, name)

    @property
    def n_classes(self) -> int:
        """The wrapped model's number of classes."""
        return int(self.model.n_classes)

    def logits(self, x: Any) -> np.ndarray:
        """The model's scores on ``(x - mean) / std``."""
        return np.asarray(self.model.logits(self.pipeline.normalise(x)))

    def predict_proba(self, x: Any) -> np.ndarray:
        """Softmax of :meth:`logits`."""
        from fitaudit.models.base import softmax

        return softmax(self.logits(x).astype(np.float64))

    def predict(self, x: Any) -> np.ndarray:
        """Index of the first largest score."""
        return np.argmax(self.logits(x), axis=1)
