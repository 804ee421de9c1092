"""Image folders, CSV lists, the evaluation pipeline and canvases (fitaudit.data.images)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fitaudit._errors import InputError
from fitaudit.data.image_files import image_problem
from fitaudit.data.images import check_images, check_model_classes, open_images
from fitaudit.data.pipeline import IMAGENET_MEAN, IMAGENET_STD, EvalPipeline
from fitaudit.models.pipeline_classifier import PipelineClassifier

Image = pytest.importorskip("PIL.Image")

#: (mode, size, format) of the fixture's images: every mode Pillow hands out, portrait and landscape, odd sides
SAMPLES = [
    ("RGB", (53, 41), "JPEG"),
    ("L", (40, 61), "PNG"),
    ("P", (47, 47), "PNG"),
    ("RGBA", (64, 39), "PNG"),
    ("CMYK", (45, 50), "JPEG"),
    ("RGB", (90, 33), "PNG"),
    ("I;16", (44, 52), "PNG"),
]


def random_image(mode: str, size: tuple[int, int], seed: int) -> object:
    rng = np.random.default_rng(seed)
    width, height = size
    rgb = Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8), "RGB")
    if mode == "P":
        return rgb.quantize(32)
    if mode == "I;16":
        return Image.fromarray(rng.integers(0, 65535, (height, width), dtype=np.uint16))
    return rgb.convert(mode)


def write_folder(root: Path, classes: dict[str, int], *, seed: int = 0) -> list[Path]:
    """``root/<class>/<i>.<ext>`` with the SAMPLES cycled; returns the files in ImageFolder order."""
    files = []
    k = seed
    for name in sorted(classes):
        (root / name).mkdir(parents=True)
        for i in range(classes[name]):
            mode, size, fmt = SAMPLES[k % len(SAMPLES)]
            path = root / name / f"{i:03d}.{'jpg' if fmt == 'JPEG' else 'png'}"
            random_image(mode, size, k).save(path, fmt)
            files.append(path)
            k += 1
    return files


def reference_rgb(path: Path) -> object:
    """The file as 8-bit RGB with plain Pillow calls; 16-bit grey mapped 0..65535 onto 0..255 by hand."""
    image = Image.open(path)
    if image.mode == "I;16":  # convert("RGB") alone would clip it to white
        image = Image.fromarray(np.rint(np.asarray(image) / 257.0).astype(np.uint8), "L")
    return image.convert("RGB")


def reference_input(path: Path, resize: int, crop: int, mean, std) -> np.ndarray:
    """torchvision's Resize(R) + CenterCrop(C) + ToTensor + Normalize, written out with plain Pillow calls."""
    image = reference_rgb(path)
    width, height = image.size
    if width <= height:
        new = (resize, int(resize * height / width))
    else:
        new = (int(resize * width / height), resize)
    image = image.resize(new, Image.BILINEAR)
    top = int(round((new[1] - crop) / 2.0))
    left = int(round((new[0] - crop) / 2.0))
    array = np.array(image.crop((left, top, left + crop, top + crop)), dtype=np.float32) / 255.0
    array = array.transpose(2, 0, 1)
    return (array - np.array(mean, np.float32)[:, None, None]) / np.array(std, np.float32)[:, None, None]


@pytest.fixture()
def folder(tmp_path):
    write_folder(tmp_path / "imgs", {"cat": 4, "dog": 3, "ant": 2})
    return tmp_path / "imgs"


def test_folder_lists_classes_sorted_like_imagefolder(folder):
    data = open_images(folder)
    assert data.classes == ["ant", "cat", "dog"]
    assert list(data.labels) == [0, 0, 1, 1, 1, 1, 2, 2, 2]
    assert [Path(p).parent.name for p in data.paths] == ["ant"] * 2 + ["cat"] * 4 + ["dog"] * 3
    # the model's class order wins, and labels index it
    data = open_images(folder, classes=["dog", "cat", "ant", "bee"])
    assert data.classes == ["dog", "cat", "ant", "bee"]
    assert list(data.labels) == [2, 2, 1, 1, 1, 1, 0, 0, 0]


def test_pipeline_matches_plain_pillow_reference(folder):
    pipeline = EvalPipeline(resize=37, crop=29, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    data = open_images(folder)
    batches = list(data.batches(pipeline, kind="input", batch_size=4, decode_threads=2))
    assert [len(b.index) for b in batches] == [4, 4, 1]
    inputs = np.concatenate([b.images for b in batches])
    assert inputs.shape == (9, 3, 29, 29) and inputs.dtype == np.float32
    for path, got in zip(data.paths, inputs):
        np.testing.assert_allclose(got, reference_input(Path(path), 37, 29, IMAGENET_MEAN, IMAGENET_STD), atol=1e-6)
    np.testing.assert_array_equal(np.concatenate([b.labels for b in batches]), data.labels)


def test_resize_is_antialiased_bilinear_like_torch():
    """An independent check of the resize: torch's antialiased bilinear interpolation agrees within a grey level."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 256, (120, 90, 3), dtype=np.uint8)
    smooth = np.asarray(Image.fromarray(pixels).resize((45, 60), Image.BOX))  # avoid aliasing-sensitive noise
    pipeline = EvalPipeline(resize=30, crop=30)
    ours = pipeline.canvas(Image.fromarray(smooth))
    tensor = torch.from_numpy(smooth.transpose(2, 0, 1)[None].astype(np.float32) / 255)
    theirs = torch.nn.functional.interpolate(tensor, size=(40, 30), mode="bilinear", antialias=True)[0].numpy()
    top = int(round((40 - 30) / 2))
    assert np.abs(ours - theirs[:, top : top + 30]).max() < 2.5 / 255


def test_canvas_centre_crop_is_the_model_input(folder):
    pipeline = EvalPipeline(resize=41, crop=30, mean=(0.5, 0.4, 0.3), std=(0.2, 0.3, 0.4))
    assert pipeline.margin == 5 and pipeline.canvas_size == 40 and pipeline.default_eps() == 1
    data = open_images(folder)
    canvases = np.concatenate([b.images for b in data.batches(pipeline, batch_size=5)])
    inputs = np.concatenate([b.images for b in data.batches(pipeline, kind="input", batch_size=5)])
    assert canvases.shape == (9, 3, 40, 40) and canvases.min() >= 0 and canvases.max() <= 1
    np.testing.assert_allclose(pipeline.normalise(canvases[:, :, 5:35, 5:35]), inputs, atol=1e-6)
    # and each canvas is the centre 40x40 square of the resized image
    for path, canvas in zip(data.paths, canvases):
        image = pipeline.resized(reference_rgb(path))
        pixels = np.asarray(image, dtype=np.float32).transpose(2, 0, 1) / 255
        top = int(round((image.size[1] - 30) / 2)) - 5
        left = int(round((image.size[0] - 30) / 2)) - 5
        np.testing.assert_array_equal(canvas, pixels[:, top : top + 40, left : left + 40])


def test_pixel_canvases_are_the_canvases_in_uint8(folder):
    """``kind="pixels"``: the canvases as uint8, channels first; divided by 255 in float32 they are the float canvases."""
    pipeline = EvalPipeline(resize=41, crop=30)
    data = open_images(folder)
    canvases = np.concatenate([b.images for b in data.batches(pipeline, batch_size=5)])
    pixels = np.concatenate([b.images for b in data.batches(pipeline, kind="pixels", batch_size=5)])
    assert pixels.dtype == np.uint8 and pixels.shape == canvases.shape == (9, 3, 40, 40)
    np.testing.assert_array_equal(pixels.astype(np.float32) / np.float32(255), canvases)
    with pytest.raises(InputError, match="`kind` must be 'canvas', 'pixels' or 'input'; got 'floats'"):
        next(data.batches(pipeline, kind="floats"))


def test_imagenet_protocol_numbers():
    pipeline = EvalPipeline(resize=256, crop=224, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    assert (pipeline.margin, pipeline.default_eps(), pipeline.canvas_size) == (16, 5, 256)
    assert EvalPipeline.from_dict(pipeline.to_dict()) == pipeline
    assert pipeline.to_dict()["margin"] == 16


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"resize": 20, "crop": 24}, r"`--resize` must be at least `--crop`.*got --resize 20 < --crop 24"),
        ({"resize": 24, "crop": 24, "mean": (0.5, 0.5)}, r"`--mean` must be 3 numbers, one per RGB channel; got 2"),
        ({"resize": 24, "crop": 24, "std": (0.5, 0.0, 1.0)}, r"`--std` must be positive"),
        ({"resize": 24, "crop": 0}, r"`--crop` must be a positive integer; got 0"),
        # the 0-255 scale some libraries use: the [0, 1] crops would be normalised to meaningless inputs
        ({"resize": 24, "crop": 24, "mean": (123.7, 116.3, 103.5)},
         r"`--mean` must be in \[0, 1\] per channel.*got \[123.7, 116.3, 103.5\] \(on the 0-255 scale"),
        ({"resize": 24, "crop": 24, "mean": (-0.1, 0.5, 0.5)}, r"`--mean` must be in \[0, 1\] per channel"),
        ({"resize": 24, "crop": 24, "std": (58.4, 57.1, 57.4)}, r"`--std` must be in \(0, 1\] per channel"),
    ],
)
def test_pipeline_bad_settings(kwargs, message):
    with pytest.raises(InputError, match=message):
        EvalPipeline(**kwargs)


def test_eps_too_large_for_the_margin():
    pipeline = EvalPipeline(resize=36, crop=24)  # P = 6
    assert pipeline.check_eps(2) == 2
    with pytest.raises(InputError, match=r"`--eps` 3 needs 3 \* eps = 9 spare pixels.*P = .* = 6; use --eps <= 2"):
        pipeline.check_eps(3)
    with pytest.raises(InputError, match=r"leave P = floor\(\(R - C\) / 2\) = 2 spare pixels.*at least --crop \+ 6 = 30"):
        EvalPipeline(resize=28, crop=24).default_eps()


def test_csv_with_names_and_with_indices(folder, tmp_path):
    files = sorted(folder.rglob("*.*"))
    named = tmp_path / "named.csv"
    named.write_text("path,label\n" + "".join(f"{f.relative_to(tmp_path)},{f.parent.name}\n" for f in files))
    data = open_images(named)
    assert data.classes == ["ant", "cat", "dog"] and len(data) == 9
    assert all(Path(p).is_file() for p in data.paths)
    indexed = tmp_path / "indexed.csv"
    indexed.write_text("".join(f"{f},{i % 4}\n" for i, f in enumerate(files)))
    data = open_images(indexed)
    assert data.classes is None and list(data.labels[:5]) == [0, 1, 2, 3, 0]
    with pytest.raises(InputError, match=r"has label 3, but model m has only 3 outputs"):
        check_model_classes(data, 3, model="m")
    other_header = tmp_path / "other_header.csv"
    other_header.write_text("file,class\n" + "".join(f"{f},{i % 4}\n" for i, f in enumerate(files)))
    with pytest.raises(InputError, match=r"1 files .* do not exist: .*file \(if the first row is a header, it must "
                                         r"read path,label\)\.$"):
        open_images(other_header)


def test_bad_folders(tmp_path):
    with pytest.raises(InputError, match=r"`--images`: .* has no class sub-folders"):
        (tmp_path / "empty").mkdir()
        open_images(tmp_path / "empty")
    write_folder(tmp_path / "a", {"x": 2, "y": 1})
    (tmp_path / "a" / "z").mkdir()
    with pytest.raises(InputError, match=r"class folder '.*z' holds no images"):
        open_images(tmp_path / "a")
    write_folder(tmp_path / "b", {"x": 2, "y": 1})
    (tmp_path / "b" / "x" / "notes.txt").write_text("hello")
    with pytest.raises(InputError, match=r"1 files are not images \(by their suffix: .*\): .*notes.txt"):
        open_images(tmp_path / "b")
    write_folder(tmp_path / "c", {"x": 2, "y": 1})
    with pytest.raises(InputError, match=r"has classes the model does not know: 'y' \(the model's 2 classes: x, w\)"):
        open_images(tmp_path / "c", classes=["x", "w"])
    data = open_images(tmp_path / "c")
    with pytest.raises(InputError, match=r"has 2 classes \(x, y\) but model m.onnx has 10 outputs; give the model's class names"):
        check_model_classes(data, 10, model="m.onnx")
    with pytest.raises(InputError, match=r"`--images`: '.*nothing' does not exist"):
        open_images(tmp_path / "nothing")


def test_broken_files_are_listed_by_name_before_any_decoding(tmp_path):
    files = write_folder(tmp_path / "d", {"x": 6, "y": 6})
    jpeg = next(f for f in files if f.suffix == ".jpg")
    png = next(f for f in files if f.suffix == ".png")
    jpeg.write_bytes(jpeg.read_bytes()[: len(jpeg.read_bytes()) // 2])  # truncated download
    png.write_bytes(png.read_bytes()[:-30])
    fake = tmp_path / "d" / "y" / "fake.jpg"
    fake.write_text("not an image")
    assert all(image_problem(f) is None for f in files if f not in (jpeg, png))
    assert "truncated or corrupt JPEG" in image_problem(jpeg)
    assert "truncated or corrupt PNG" in image_problem(png)
    assert "not an image Pillow can read" in image_problem(fake)
    data = open_images(tmp_path / "d")
    with pytest.raises(InputError, match=r"`--images`: 3 of 13 files are not usable images: .*pass --skip-broken") as info:
        check_images(data)
    assert all(str(f) in str(info.value) for f in (jpeg, png, fake))
    clean, broken = check_images(data, skip_broken=True)
    assert len(clean) == 10 and sorted(b.path for b in broken) == sorted(map(str, (jpeg, png, fake)))
    assert list(clean.labels) == [data.labels[data.paths.index(p)] for p in clean.paths]
    # decoding without the check: the broken file is named when its batch is reached, or counted when skipped
    with pytest.raises(InputError, match=r"`--images`: '.*' could not be decoded"):
        list(data.batches(EvalPipeline(resize=32, crop=24), batch_size=4))
    batches = list(data.batches(EvalPipeline(resize=32, crop=24), batch_size=4, skip_broken=True))
    assert sum(len(b.broken) for b in batches) == 3
    kept = np.concatenate([b.index for b in batches])
    assert len(kept) == 10 and set(data.paths[i] for i in kept) == set(clean.paths)


def test_jpeg_with_trailing_bytes_is_not_broken(tmp_path):
    path = tmp_path / "a.jpg"
    random_image("RGB", (20, 20), 0).save(path, "JPEG")
    path.write_bytes(path.read_bytes() + b"trailing metadata")
    assert image_problem(path) is None


def test_pipeline_classifier_normalises_before_the_model():
    pipeline = EvalPipeline(resize=4, crop=4, mean=(0.5, 0.5, 0.5), std=(0.25, 0.5, 1.0))
    seen = []

    class Probe:
        n_classes = 2

        def logits(self, x):
            seen.append(np.asarray(x))
            return np.stack([x[:, 0].mean(axis=(1, 2)), x[:, 1].mean(axis=(1, 2))], axis=1)

    wrapped = PipelineClassifier(Probe(), pipeline)
    x = np.full((3, 3, 4, 4), 0.75, np.float32)
    np.testing.assert_allclose(wrapped.logits(x), [[1.0, 0.5]] * 3)
    np.testing.assert_allclose(seen[0][:, 2], 0.25)
    assert wrapped.n_classes == 2 and list(wrapped.predict(x)) == [0, 0, 0]
    np.testing.assert_allclose(wrapped.predict_proba(x).sum(axis=1), 1.0)


def test_batches_memory_holds_two_batches_at_most(folder):
    """The decoder stays at most one batch ahead: after the first batch is taken, no more than 2 were decoded."""
    import fitaudit.data.images as images

    calls = []
    original = images._decode

    def counting(path, pipeline, kind):
        calls.append(path)
        return original(path, pipeline, kind)

    images._decode = counting
    try:
        iterator = open_images(folder).batches(EvalPipeline(resize=24, crop=24), batch_size=2, decode_threads=1)
        next(iterator)
        import time

        time.sleep(0.2)
        assert len(calls) <= 4  # the batch taken and the next one
        rest = list(iterator)
    finally:
        images._decode = original
    assert len(rest) == 4 and len(calls) == 9


def test_choose_pipeline_one_rule_for_every_command():
    from fitaudit.data.pipeline_rule import choose_pipeline

    imagenet = {"resize": 256, "crop": 224, "mean": list(IMAGENET_MEAN), "std": list(IMAGENET_STD)}
    # nothing given, nothing recorded: no pipeline (or an error naming the options when one is required)
    assert choose_pipeline([("m", None)]).pipeline is None
    with pytest.raises(InputError, match=r"`--resize` and `--crop` are needed with --images: m records no evaluation"):
        choose_pipeline([("m", None)], required=True)
    # the recorded pipeline, each given setting replacing its own
    assert choose_pipeline([("m", imagenet)]).pipeline == EvalPipeline(256, 224, IMAGENET_MEAN, IMAGENET_STD)
    assert choose_pipeline([("m", imagenet)], resize=288).pipeline == EvalPipeline(288, 224, IMAGENET_MEAN, IMAGENET_STD)
    assert choose_pipeline([("m", imagenet)], mean=(0.5, 0.5, 0.5)).pipeline.mean == (0.5, 0.5, 0.5)
    # no crop recorded: the model's input size; no resize: the crop; no normalisation: said (normalisation "none")
    choice = choose_pipeline([("m", None)], input_size=32)
    assert choice.pipeline == EvalPipeline(32, 32) and choice.normalisation == "none"
    assert choose_pipeline([], resize=40, crop=32).pipeline == EvalPipeline(40, 32)
    assert choose_pipeline([], mean=(0.1, 0.2, 0.3), crop=8).pipeline == EvalPipeline(8, 8, (0.1, 0.2, 0.3))
    # several runs must record the same pipeline; one recording none takes the others'
    assert choose_pipeline([("a", imagenet), ("b", None)]).pipeline.resize == 256
    with pytest.raises(InputError, match=r"`--models`: the runs record different evaluation pipelines"):
        choose_pipeline([("a", imagenet), ("b", {**imagenet, "resize": 232})])
    # a mean without any size is an error naming the options, not silently ignored
    with pytest.raises(InputError, match=r"`--resize` and `--crop` are needed"):
        choose_pipeline([("m", None)], mean=(0.5, 0.5, 0.5))
