"""Every mode Pillow opens decodes to the pixels it holds, or is refused (fitaudit.data.decode).

Each case writes known 8-bit (or 16-bit) pixels in one mode and compares the
decoded grey and RGB pixels with them, converted by hand (luma by ITU-R
601-2, 16-bit values by ``v * 255 / 65535``): the reference never calls the
code under test nor Pillow's ``convert``.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from fitaudit._errors import InputError
from fitaudit.data.decode import as_mode, load_image
from fitaudit.data.image_files import image_problem
from fitaudit.data.images import check_images, open_images
from fitaudit.data.pipeline import EvalPipeline

Image = pytest.importorskip("PIL.Image")

RNG = np.random.default_rng(11)
RGB = RNG.integers(0, 256, (9, 13, 3), dtype=np.uint8)
GREY = RNG.integers(0, 256, (9, 13), dtype=np.uint8)
ALPHA = RNG.integers(0, 256, (9, 13), dtype=np.uint8)
PALETTE = RNG.integers(0, 256, (8, 3), dtype=np.uint8)
INDEX = RNG.integers(0, 8, (9, 13), dtype=np.uint8)
WIDE = RNG.integers(0, 65536, (9, 13), dtype=np.uint16)
WIDE_RGB = RNG.integers(0, 65536, (9, 13, 3), dtype=np.uint16)


def luma(rgb: np.ndarray) -> np.ndarray:
    """ITU-R 601-2 luma of 8-bit RGB, by hand."""
    return rgb.astype(np.float64) @ np.array([0.299, 0.587, 0.114])


def palette_image(index: np.ndarray, mode: str = "P") -> object:
    image = Image.fromarray(index, "L")
    image = image.convert("P") if mode == "P" else image
    image.putpalette(PALETTE.reshape(-1).tolist())
    return image


def png16_rgb(path: Path, values: np.ndarray) -> None:
    """A 16-bit RGB PNG written chunk by chunk (Pillow cannot write one)."""
    height, width, _ = values.shape
    raw = b"".join(b"\x00" + values[row].astype(">u2").tobytes() for row in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 16, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def cmyk_of(rgb: np.ndarray) -> np.ndarray:
    """CMYK with no black: C = 255 - R, M = 255 - G, Y = 255 - B, K = 0."""
    return np.concatenate([255 - rgb, np.zeros(rgb.shape[:2] + (1,), np.uint8)], axis=2)


def ycbcr_of(rgb: np.ndarray) -> np.ndarray:
    """JFIF's full-range YCbCr of 8-bit RGB, by hand."""
    r, g, b = (rgb[..., i].astype(np.float64) for i in range(3))
    y = 0.299 * r + 0.587 * g + 0.114 * b
    cb = 128 - 0.168736 * r - 0.331264 * g + 0.5 * b
    cr = 128 + 0.5 * r - 0.418688 * g - 0.081312 * b
    return np.rint(np.stack([y, cb, cr], axis=2)).clip(0, 255).astype(np.uint8)


def write_case(mode: str, folder: Path) -> tuple[Path, np.ndarray, int]:
    """A file in ``mode``, the RGB pixels it holds, and the largest error allowed (grey levels)."""
    path = folder / f"{mode.replace(';', '_')}.png"
    if mode == "1":
        binary = np.where(GREY > 127, 255, 0).astype(np.uint8)
        Image.fromarray(binary, "L").convert("1").save(path)
        return path, np.repeat(binary[..., None], 3, axis=2), 0
    if mode == "L":
        Image.fromarray(GREY, "L").save(path)
        return path, np.repeat(GREY[..., None], 3, axis=2), 0
    if mode == "LA":
        Image.fromarray(np.stack([GREY, ALPHA], axis=2), "LA").save(path)
        return path, np.repeat(GREY[..., None], 3, axis=2), 0
    if mode == "P":
        palette_image(INDEX).save(path)
        return path, PALETTE[INDEX], 0
    if mode in ("RGB", "RGBA"):
        Image.fromarray(RGB if mode == "RGB" else np.concatenate([RGB, ALPHA[..., None]], axis=2), mode).save(path)
        return path, RGB, 0
    if mode == "CMYK":
        path = path.with_suffix(".tif")
        Image.fromarray(cmyk_of(RGB), "CMYK").save(path)
        return path, RGB, 0
    if mode == "CMYK-JPEG":
        path = folder / "cmyk.jpg"
        smooth = np.repeat(np.repeat(RGB[:3, :3], 8, axis=0), 8, axis=1)  # flat 8x8 blocks: JPEG keeps them
        Image.fromarray(cmyk_of(smooth), "CMYK").save(path, quality=100)
        return path, smooth, 4
    if mode == "YCbCr":
        path = path.with_suffix(".tif")
        Image.fromarray(ycbcr_of(RGB), "YCbCr").save(path)
        return path, RGB, 3
    if mode == "I;16":
        Image.fromarray(WIDE).save(path)
        return path, np.repeat(np.rint(WIDE / 257.0).astype(np.uint8)[..., None], 3, axis=2), 0
    if mode == "RGB;16":
        png16_rgb(path, WIDE_RGB)
        return path, np.rint(WIDE_RGB / 257.0).astype(np.uint8), 1  # Pillow keeps the high byte: v >> 8
    if mode == "GIF":
        path = folder / "animated.gif"
        first, second = palette_image(INDEX), palette_image((INDEX + 3) % 8)
        first.save(path, save_all=True, append_images=[second], duration=100, loop=0)
        return path, PALETTE[INDEX], 0
    raise AssertionError(mode)


MODES = ["1", "L", "LA", "P", "RGB", "RGBA", "CMYK", "CMYK-JPEG", "YCbCr", "I;16", "RGB;16", "GIF"]


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_decodes_to_the_pixels_it_holds(mode, tmp_path):
    path, expected, tolerance = write_case(mode, tmp_path)
    assert image_problem(path) is None
    rgb = np.asarray(load_image(path, 3)).astype(int)
    assert rgb.shape == expected.shape
    assert np.abs(rgb - expected).max() <= tolerance
    grey = np.asarray(load_image(path, 1)).astype(float)
    assert grey.shape == expected.shape[:2]
    # grey from colour is the luma of the decoded colours (Pillow rounds in fixed point: within one level)
    assert np.abs(grey - luma(rgb)).max() <= 1.0


def test_sixteen_bit_grey_is_not_white(tmp_path):
    """The reported case: a 16-bit PNG came out pure white (everything above 255 clipped)."""
    path, expected, _ = write_case("I;16", tmp_path)
    grey = np.asarray(load_image(path, 1))
    np.testing.assert_array_equal(grey, expected[..., 0])
    assert grey.min() < 50 and grey.mean() < 200
    pipeline = EvalPipeline(resize=9, crop=9, channels=1)
    assert pipeline.model_input(Image.open(path)).shape == (1, 9, 9)


def test_palette_with_alpha_and_other_byte_orders_in_memory():
    """PA cannot be written to a file by Pillow; big-endian 16-bit grey is another byte order of I;16."""
    pa = palette_image(INDEX).convert("PA")
    np.testing.assert_array_equal(np.asarray(as_mode(pa, 3)), PALETTE[INDEX])
    big = Image.frombytes("I;16B", (13, 9), WIDE.astype(">u2").tobytes())
    np.testing.assert_array_equal(np.asarray(as_mode(big, 1)), np.rint(WIDE / 257.0).astype(np.uint8))


@pytest.mark.parametrize("mode", ["I", "F"])
def test_unscaled_modes_are_refused(mode, tmp_path):
    path = tmp_path / f"{mode}.tif"
    values = WIDE.astype(np.int32) if mode == "I" else WIDE.astype(np.float32) / 65535
    Image.fromarray(values).save(path)
    assert Image.open(path).mode == mode
    assert "value range the file does not record" in image_problem(path)
    with pytest.raises(InputError, match=f"mode {mode}.*8 or 16 bits"):
        load_image(path)


def test_folder_of_many_formats_decodes_like_the_reference(tmp_path):
    """GIF, BMP, TIFF and WebP files are listed and decoded, the first frame of an animation."""
    folder = tmp_path / "imgs"
    (folder / "a").mkdir(parents=True)
    (folder / "b").mkdir()
    lossless = {"a/x.gif": "GIF", "a/y.bmp": "BMP", "b/z.tiff": "TIFF", "b/w.webp": "WEBP"}
    for name, fmt in lossless.items():
        image = palette_image(INDEX) if fmt == "GIF" else Image.fromarray(RGB, "RGB")
        options = {"lossless": True} if fmt == "WEBP" else {}
        image.save(folder / name, fmt, **options)
    data = open_images(folder)
    kept, broken = check_images(data)
    assert broken == [] and len(kept) == 4
    pipeline = EvalPipeline(resize=9, crop=9)
    inputs = data.arrays(pipeline)[0]
    for path, got in zip(data.paths, inputs):
        truth = PALETTE[INDEX] if path.endswith(".gif") else RGB
        top, left = 0, 2  # the centre 9 x 9 of a 9 x 13 image
        np.testing.assert_allclose(got, truth[top : top + 9, left : left + 9].transpose(2, 0, 1) / 255.0, atol=1e-6)


def test_dangling_and_looping_links_are_listed_as_broken(tmp_path):
    folder = tmp_path / "imgs"
    for name in ("a", "b"):
        (folder / name).mkdir(parents=True)
        for i in range(2):
            Image.fromarray(RGB, "RGB").save(folder / name / f"{i}.png")
    (folder / "a" / "gone.png").symlink_to(tmp_path / "missing.png")
    loop = folder / "b" / "loop.png"
    loop.symlink_to(loop)
    data = open_images(folder)
    assert len(data) == 6
    with pytest.raises(InputError, match="2 of 6 files are not usable images") as info:
        check_images(data)
    assert "gone.png (a symbolic link to a missing file)" in str(info.value)
    assert "loop.png (a symbolic link that loops)" in str(info.value)
    kept, broken = check_images(data, skip_broken=True)
    assert len(kept) == 4 and sorted(Path(b.path).name for b in broken) == ["gone.png", "loop.png"]


def test_csv_with_byte_order_mark_reads_its_header(tmp_path):
    for i in range(2):
        Image.fromarray(RGB, "RGB").save(tmp_path / f"{i}.png")
    listing = tmp_path / "list.csv"
    listing.write_text("path,label\n0.png,cat\n1.png,dog\n", encoding="utf-8-sig")
    assert listing.read_bytes().startswith(b"\xef\xbb\xbf")
    data = open_images(listing)
    assert data.classes == ["cat", "dog"] and list(data.labels) == [0, 1] and len(data) == 2


def test_one_decode_default_the_machines_cores_in_the_library_and_the_cli():
    import inspect
    import os

    from fitaudit.cli import _common, build_parser
    from fitaudit.data.decode import DECODE_THREADS
    from fitaudit.data.images import ImageDataset
    from fitaudit.overfit.images import ImageAEGSettings, overfit_test_images

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert DECODE_THREADS == cores and _common.DECODE_THREADS == DECODE_THREADS
    for function in (ImageDataset.check, ImageDataset.arrays, ImageDataset.batches, check_images,
                     overfit_test_images):
        assert inspect.signature(function).parameters["decode_threads"].default == DECODE_THREADS, function
    assert ImageAEGSettings.__dataclass_fields__["decode_threads"].default == DECODE_THREADS
    parsed = build_parser().parse_args(["overfit", "--model", "m.onnx", "--images", "imgs"])
    assert parsed.decode_threads == DECODE_THREADS
