"""A user's own images: folders and CSV lists of files with labels, decoded in batches.

* :class:`ImageDataset` -- a list of image files with labels, from a folder
  ``root/<class>/<file>`` (classes sorted, as torchvision's ``ImageFolder``)
  or a CSV of ``path,label`` (:func:`open_images`). The class order may come
  from the model's metadata and is checked against the folder.
* :meth:`ImageDataset.check` -- a fast pass over every file
  (:func:`fitaudit.data.image_files.image_problem`) that lists broken files
  by name before any long run starts; :func:`check_images` raises or drops
  them (``skip_broken``).
* :meth:`ImageDataset.batches` -- the images decoded and transformed by an
  :class:`~fitaudit.data.pipeline.EvalPipeline` in batches by a pool of
  threads (Pillow releases the GIL while decoding and resizing), one batch
  ahead of the consumer: memory holds at most two batches whatever the
  number of images.

Images are decoded to 8-bit RGB, or grey for a model that takes one channel
(:attr:`EvalPipeline.channels`), whatever mode Pillow opens them in
(:mod:`fitaudit.data.decode`: 16-bit grey scaled, alpha dropped, the first
frame of an animation; float and 32-bit integer pixels refused). Nothing
here imports torch.
"""

from __future__ import annotations

import csv
import dataclasses
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
from fitaudit._validation import check_int
from fitaudit.data.decode import DECODE_THREADS, IMAGE_SUFFIXES, load_image
from fitaudit.data.image_files import BrokenImage, image_problem, link_problem
from fitaudit.data.pipeline import EvalPipeline

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
            f for f in class_dir.rglob("*") if (f.is_file() or link_problem(str(f))) and not any(
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
    missing = [p for p in paths if not Path(p).is_file() and not link_problem(p)]  # bad links: listed as broken
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
