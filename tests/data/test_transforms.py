"""The image-transform generator against straightforward per-image Pillow / scipy / numpy references."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

from fitaudit import InputError
from fitaudit.data.generators import Generator, generate_checked
from fitaudit.data.transforms import (
    IMAGE_FACTORS,
    ImageTransformGenerator,
    identity_factors,
    image_factor_space,
)

torch = pytest.importorskip("torch")
PIL = pytest.importorskip("PIL")
from PIL import Image, ImageEnhance  # noqa: E402

NAMES = [f.name for f in IMAGE_FACTORS]


def smooth_images(n: int, size: int, channels: int = 3, seed: int = 0) -> np.ndarray:
    """Smooth random images in [0, 1] (so that bilinear interpolation is well conditioned)."""
    rng = np.random.default_rng(seed)
    raw = rng.random((n, channels, size, size))
    return np.clip(ndimage.gaussian_filter(raw, sigma=(0, 0, 1.5, 1.5)) * 1.6 - 0.3, 0, 1).astype(np.float32)


def factors(generator: ImageTransformGenerator, n: int = 1, **values: float) -> np.ndarray:
    row = identity_factors(generator.factor_space)
    for name, value in values.items():
        row[NAMES.index(name)] = value
    return np.tile(row, (n, 1))


def reference_warp(canvas: np.ndarray, crop: int, rotation: float, tx: float, ty: float, scale: float) -> np.ndarray:
    """scipy.ndimage.affine_transform per channel, in (row, col) pixel indices, mode 'reflect'."""
    big = canvas.shape[-1]
    theta = np.deg2rad(rotation)
    cos, sin = np.cos(theta), np.sin(theta)
    # output (x, y) relative to the crop centre -> source relative to the canvas centre:
    # src_x = (cos dx - sin dy) / s, src_y = (sin dx + cos dy) / s, d = p - t
    matrix = np.array([[cos, sin], [-sin, cos]]) / scale  # acts on (row, col) = (y, x)
    centre_out, centre_in = (crop - 1) / 2, (big - 1) / 2
    shift = np.array([ty * crop, tx * crop])
    offset = centre_in - matrix @ (np.array([centre_out, centre_out]) + shift)
    return np.stack([ndimage.affine_transform(ch.astype(np.float64), matrix, offset=offset, output_shape=(crop, crop),
                                              order=1, mode="reflect") for ch in canvas])


@pytest.mark.parametrize(
    ("rotation", "tx", "ty", "scale", "padding"),
    [(17.0, 0.0, 0.0, 1.0, 4), (0.0, 0.1, -0.07, 1.0, 4), (0.0, 0.0, 0.0, 0.8, 4), (-23.0, -0.06, 0.09, 1.15, 4),
     (29.0, 0.1, 0.1, 0.8, 0), (-12.0, 0.0, 0.05, 1.2, 0)],
)
def test_warp_matches_scipy_affine_transform(rotation, tx, ty, scale, padding):
    images = smooth_images(2, 16 + 2 * padding)
    gen = ImageTransformGenerator(images, [0, 1], padding=padding)
    out = gen.display(np.arange(2), factors(gen, 2, rotation=rotation, translation_x=tx, translation_y=ty, scale=scale))
    for i in range(2):
        np.testing.assert_allclose(out[i], reference_warp(images[i], 16, rotation, tx, ty, scale), atol=2e-5)


def test_rotation_is_counter_clockwise_like_pillow():
    images = smooth_images(1, 20, channels=1)
    gen = ImageTransformGenerator(images, [0])
    out = gen.display(np.arange(1), factors(gen, rotation=25.0))[0, 0]
    pillow = np.asarray(Image.fromarray(images[0, 0].astype(np.float32), mode="F").rotate(25.0, Image.BILINEAR))
    inner = slice(5, 15)  # away from the corners Pillow fills with 0
    np.testing.assert_allclose(out[inner, inner], pillow[inner, inner], atol=1e-4)


def test_canvas_samples_real_pixels():
    """A shift by the padding shows the canvas's own pixels, not a reflection."""
    images = smooth_images(1, 24)
    gen = ImageTransformGenerator(images, [0], padding=4)
    out = gen.display(np.arange(1), factors(gen, translation_x=0.25))  # 4 px of the 16 px crop
    np.testing.assert_allclose(out[0], images[0, :, 4:20, 0:16], atol=1e-6)
    assert gen.border == "canvas" and ImageTransformGenerator(images, [0]).border == "reflection"


def to_pil(image: np.ndarray) -> Image.Image:
    return Image.fromarray(np.round(np.moveaxis(image, 0, -1) * 255).astype(np.uint8), mode="RGB")


def from_pil(image: Image.Image) -> np.ndarray:
    return np.moveaxis(np.asarray(image, dtype=np.float32) / 255, -1, 0)


@pytest.mark.parametrize(("name", "enhancer", "value"),
                         [("contrast", ImageEnhance.Contrast, 0.6), ("contrast", ImageEnhance.Contrast, 1.4),
                          ("saturation", ImageEnhance.Color, 0.5), ("saturation", ImageEnhance.Color, 1.5)])
def test_contrast_and_saturation_match_pillow(name, enhancer, value):
    images = np.round(smooth_images(3, 12) * 255).astype(np.float32) / 255  # exactly representable in uint8
    gen = ImageTransformGenerator(images, [0, 1, 2])
    out = gen.display(np.arange(3), factors(gen, 3, **{name: value}))
    for i in range(3):
        pillow = from_pil(enhancer(to_pil(images[i])).enhance(value))
        # Pillow works in uint8 and rounds the mean grey level to an integer
        np.testing.assert_allclose(out[i], pillow, atol=2.5 / 255)


def test_brightness_is_added_and_clipped():
    images = smooth_images(2, 10)
    gen = ImageTransformGenerator(images, [0, 1])
    for value in (-0.3, 0.25):
        out = gen.display(np.arange(2), factors(gen, 2, brightness=value))
        np.testing.assert_array_equal(out, np.clip(images + np.float32(value), 0, 1))


def test_blur_matches_scipy_gaussian_filter():
    images = smooth_images(2, 14)
    gen = ImageTransformGenerator(images, [0, 1])
    sigmas = np.array([0.6, 1.5])
    f = factors(gen, 2)
    f[:, NAMES.index("blur")] = sigmas
    out = gen.display(np.arange(2), f)
    radius = 5  # ceil(3 * 1.5), shared by the batch
    for i, sigma in enumerate(sigmas):
        ref = ndimage.gaussian_filter(images[i].astype(np.float64), sigma=(0, sigma, sigma), mode="mirror",
                                      truncate=radius / sigma)
        np.testing.assert_allclose(out[i], ref, atol=1e-5)


MASK = (1 << 64) - 1


def splitmix(x: int) -> int:
    """splitmix64's finaliser on Python ints (unsigned 64-bit arithmetic, independent of torch's int64)."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def reference_noise(seed: int, instance: int, factor_row: np.ndarray, size: int) -> np.ndarray:
    key = seed
    for word in [instance, *(int(b) for b in factor_row.astype(np.float64).view(np.uint64))]:
        key = splitmix(((key ^ word) + 0x9E3779B97F4A7C15) & MASK)
    out = []
    for m in range(1, (size + 1) // 2 + 1):
        z = splitmix((key + m * 0x9E3779B97F4A7C15) & MASK)
        u1, u2 = ((z >> 40) + 1) / 2**24, ((z >> 16) & 0xFFFFFF) / 2**24
        out += [np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2), np.sqrt(-2 * np.log(u1)) * np.sin(2 * np.pi * u2)]
    return np.asarray(out[:size])


def test_noise_matches_a_scalar_splitmix_reference():
    images = smooth_images(3, 5) * 0.5 + 0.25  # no clipping at std 0.05; 75 pixels: an odd count
    gen = ImageTransformGenerator(images, [0, 1, 2], random_state=7)
    f = factors(gen, 3, noise=0.05)
    out = gen.display(np.arange(3), f)
    for i in range(3):
        ref = reference_noise(7, i, f[i], 3 * 5 * 5).reshape(3, 5, 5)
        np.testing.assert_allclose(out[i], np.clip(images[i] + np.float32(0.05) * ref.astype(np.float32), 0, 1),
                                   atol=1e-6)


def test_noise_seeded_by_instance_and_factors():
    images = smooth_images(3, 24) * 0.5 + 0.25
    gen = ImageTransformGenerator(images, [0, 1, 2], random_state=7)
    f = factors(gen, 3, noise=0.05)
    out = gen.display(np.arange(3), f)
    # the same query in another batch, alone or reordered: the same image
    np.testing.assert_array_equal(gen.display(np.array([2]), f[2:]), out[2:])
    np.testing.assert_array_equal(gen.display(np.array([2, 0]), f[[2, 0]]), out[[2, 0]])
    # another instance, another factor value or another seed: other noise
    assert not np.allclose(out[0] - images[0], out[1] - images[1], atol=1e-3)
    other = gen.display(np.arange(1), factors(gen, noise=0.0500001))
    assert not np.allclose(other[0], out[0], atol=1e-4)
    reseeded = ImageTransformGenerator(images, [0, 1, 2], random_state=8).display(np.arange(1), f[:1])
    assert not np.allclose(reseeded[0], out[0], atol=1e-4)
    # standard normal: mean 0, std 1, uncorrelated neighbours
    z = gen.noise(np.arange(3), f).numpy().ravel()
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1) < 0.05 and abs(np.corrcoef(z[:-1], z[1:])[0, 1]) < 0.05


def test_occlusion_matches_a_pixel_loop():
    images = smooth_images(2, 16)
    gen = ImageTransformGenerator(images, [0, 1])
    f = factors(gen, 2, occlusion=0.25)
    f[:, NAMES.index("occlusion_u")] = [0.5, 0.1]
    f[:, NAMES.index("occlusion_v")] = [0.3, 0.9]
    out = gen.display(np.arange(2), f)
    for i in range(2):
        ref = images[i].copy()
        cu, cv = f[i, NAMES.index("occlusion_u")] * 16, f[i, NAMES.index("occlusion_v")] * 16
        for r in range(16):
            for c in range(16):
                if abs(c + 0.5 - cu) < 2 and abs(r + 0.5 - cv) < 2:  # side 0.25 * 16 = 4 px
                    ref[:, r, c] = 0.5
        np.testing.assert_array_equal(out[i], ref)
    assert np.sum(out[0] == 0.5) >= 3 * 16


def test_every_factor_in_order_matches_the_chained_references():
    images = smooth_images(1, 20)
    gen = ImageTransformGenerator(images, [0], padding=2, mean=[0.4, 0.5, 0.6], std=[0.2, 0.25, 0.3], random_state=3)
    f = factors(gen, rotation=-11.0, translation_x=0.05, translation_y=-0.04, scale=1.1, brightness=0.1,
                contrast=1.3, saturation=0.7, blur=0.8, noise=0.03, occlusion=0.2)
    out = gen.generate(np.arange(1), f)[0]
    x = reference_warp(images[0], 16, -11.0, 0.05, -0.04, 1.1)
    x = np.clip(x + 0.1, 0, 1)
    grey = np.tensordot([0.299, 0.587, 0.114], x, axes=1)
    x = np.clip(1.3 * x + (1 - 1.3) * grey.mean(), 0, 1)
    x = np.clip(0.7 * x + 0.3 * np.tensordot([0.299, 0.587, 0.114], x, axes=1), 0, 1)
    x = ndimage.gaussian_filter(x, sigma=(0, 0.8, 0.8), mode="mirror", truncate=3 / 0.8)
    x = np.clip(x + 0.03 * gen.noise(np.arange(1), f).numpy()[0], 0, 1)
    x[:, 6:10, 6:10] = 0.5  # a 3.2 px square centred at (8, 8)
    x = (x - np.array([0.4, 0.5, 0.6])[:, None, None]) / np.array([0.2, 0.25, 0.3])[:, None, None]
    np.testing.assert_allclose(out, x, atol=2e-4)


@pytest.mark.parametrize("channels", [1, 3])
def test_jpeg_quality_matches_a_pillow_round_trip_and_100_leaves_the_image(channels):
    import io

    images = np.round(smooth_images(3, 16, channels=channels) * 255).astype(np.float32) / 255
    gen = ImageTransformGenerator(images, [0, 1, 2])
    for value, quality in ((30.0, 30), (74.6, 75), (49.5, 50)):  # rounded half up to a whole quality
        out = gen.display(np.arange(3), factors(gen, 3, jpeg_quality=value))
        for i in range(3):
            pixels = np.round(np.moveaxis(images[i], 0, -1) * 255).astype(np.uint8)
            buffer = io.BytesIO()
            Image.fromarray(pixels[..., 0] if channels == 1 else pixels).save(buffer, format="JPEG", quality=quality)
            decoded = np.asarray(Image.open(io.BytesIO(buffer.getvalue())), dtype=np.float32) / 255
            expected = decoded[None] if channels == 1 else np.moveaxis(decoded, -1, 0)
            np.testing.assert_array_equal(out[i], expected)
        assert np.abs(out - images).max() > 1 / 255  # lossy
    untouched = gen.display(np.arange(3), factors(gen, 3, jpeg_quality=99.6))
    np.testing.assert_array_equal(untouched, images)


def test_flip_mirrors_the_crop_from_one_half_of_its_range():
    images = smooth_images(2, 14)
    for padding in (0, 3):
        gen = ImageTransformGenerator(images, [0, 1], padding=padding)
        p = padding
        crop = images[:, :, p : 14 - p, p : 14 - p]
        np.testing.assert_array_equal(gen.display(np.arange(2), factors(gen, 2, flip=0.49)), crop)
        np.testing.assert_array_equal(gen.display(np.arange(2), factors(gen, 2, flip=0.5)), crop[..., ::-1])
        # then the warp: a shift right of the mirror image is the mirror of a shift left
        right = gen.display(np.arange(2), factors(gen, 2, flip=1.0, translation_x=0.2))
        left = gen.display(np.arange(2), factors(gen, 2, translation_x=-0.2))
        np.testing.assert_allclose(right, left[..., ::-1], atol=1e-5)


def test_identity_factors_return_the_untouched_model_input():
    images = smooth_images(5, 20)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    for padding in (0, 2):
        gen = ImageTransformGenerator(images, [0, 1, 2, 0, 1], padding=padding, mean=mean, std=std)
        out = gen.generate(np.arange(5), factors(gen, 5))
        p = padding
        crop = images[:, :, p : 20 - p, p : 20 - p]
        expected = (crop - np.float32(mean)[:, None, None]) / np.float32(std)[:, None, None]
        np.testing.assert_array_equal(out, expected.astype(np.float32))
        np.testing.assert_array_equal(out, gen.model_input(np.arange(5)))


def test_an_ordinary_generator():
    gen = ImageTransformGenerator(smooth_images(3, 8, channels=1), [0, 1, 1], class_names=["a", "b"])
    assert isinstance(gen, Generator)
    out = generate_checked(gen, np.array([0, 2]), gen.factor_space.sample(2, random_state=0))
    assert out.shape == (2, 1, 8, 8) and out.dtype == np.float32
    assert gen.describe()["border"] == "reflection" and gen.describe()["images"]["n"] == 3


def test_default_ranges_and_narrowing():
    space = image_factor_space()
    assert (space["rotation"].low, space["rotation"].high) == (-10.0, 10.0)  # calibrated on photos (issue 50)
    assert (space["noise"].low, space["noise"].high) == (0.0, 0.03)
    assert (space["jpeg_quality"].low, space["jpeg_quality"].high, space["jpeg_quality"].default) == (50.0, 100.0, 100.0)
    assert (space["flip"].low, space["flip"].high, space["flip"].default) == (0.0, 1.0, 0.0)
    narrowed = image_factor_space({"rotation": (-15, 15), "blur": 0.0, "contrast": (0.2, 2.0)})
    assert (narrowed["rotation"].low, narrowed["rotation"].high) == (-15.0, 15.0)
    assert narrowed["blur"].low == narrowed["blur"].high == 0.0
    assert narrowed["contrast"].low == 0.2  # wider than the default, inside the allowed range
    no_square = image_factor_space({"occlusion": 0})
    assert no_square["occlusion_u"].low == no_square["occlusion_u"].high == 0.5


def test_grey_images_get_no_colour_factor():
    """The default space follows the images' channels: grey (1-channel) images have no saturation to vary."""
    from fitaudit.examine.examination import free_factors

    grey = ImageTransformGenerator(smooth_images(2, 8, channels=1), [0, 1])
    rgb = ImageTransformGenerator(smooth_images(2, 8), [0, 1])
    assert grey.factor_space.names == rgb.factor_space.names  # the same columns: generate() takes the same rows
    assert grey.factor_space["saturation"].low == grey.factor_space["saturation"].high == 1.0
    assert "saturation" not in [grey.factor_space.names[c] for c in free_factors(grey.factor_space)]
    assert (rgb.factor_space["saturation"].low, rgb.factor_space["saturation"].high) == (0.8, 1.2)
    assert "noise" in [grey.factor_space.names[c] for c in free_factors(grey.factor_space)]  # grey noise stays
    assert ImageTransformGenerator(smooth_images(2, 8, channels=1), [0, 1], factors={"saturation": 1.0}).factor_space[
        "saturation"].high == 1.0
    with pytest.raises(InputError, match=r"`--factor` saturation: the images are grey \(1 channel\), without colour"):
        ImageTransformGenerator(smooth_images(2, 8, channels=1), [0, 1], factors={"saturation": (0.5, 1.5)},
                                option="--factor")


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        ({"zoom": (1, 2)}, "`--factor` names unknown factor 'zoom'"),
        ({"rotation": (20, -20)}, "`--factor` rotation: the range is inverted (low 20 > high -20)"),
        ({"rotation": ()}, "`--factor` rotation: expected (low, high) or one number"),
        ({"scale": (0.1, 1)}, "`--factor` scale: (0.1, 1) is outside the allowed range [0.25, 4]"),
        ({"noise": (0, float("nan"))}, "`--factor` noise: the range must be finite"),
    ],
)
def test_bad_factor_ranges_name_the_option(ranges, message):
    with pytest.raises(InputError) as info:
        image_factor_space(ranges, option="--factor")
    assert message in str(info.value)


class _Model:
    """A classifier of known input shape and number of classes."""

    def __init__(self, input_shape, n_classes):
        self.input_shape, self.n_classes = input_shape, n_classes

    def logits(self, x):
        return np.zeros((len(x), self.n_classes))


@pytest.mark.parametrize(
    ("images", "labels", "model", "message"),
    [
        (smooth_images(2, 8, channels=1), [0, 1], _Model((3, 8, 8), 2), "the images are grey (1 channel) but the model takes RGB"),
        (smooth_images(2, 8), [0, 1], _Model((3, 12, 12), 2), "the model's input height is 12 px but the images give 8 px (smaller than"),
        (smooth_images(2, 8), [0, 3], _Model((3, 8, 8), 3), "label 3 cannot be output by the model, which has 3 classes"),
    ],
)
def test_images_the_model_cannot_take(images, labels, model, message):
    gen = ImageTransformGenerator(images, labels)
    with pytest.raises(InputError) as info:
        gen.check_model(model, option="--images")
    assert str(info.value).startswith("`--images`") and message in str(info.value)


def test_bad_images():
    with pytest.raises(InputError, match="`images` must hold finite values in"):
        ImageTransformGenerator(np.full((1, 3, 4, 4), 2.0), [0])
    with pytest.raises(InputError, match="`images` must be an array"):
        ImageTransformGenerator(np.zeros((1, 2, 4, 4)), [0])
    with pytest.raises(InputError, match="`labels` must have one label per image"):
        ImageTransformGenerator(np.zeros((2, 3, 4, 4)), [0])
    with pytest.raises(InputError, match="`padding` 2 leaves no crop"):
        ImageTransformGenerator(np.zeros((1, 3, 4, 4)), [0], padding=2)


def former_normalise(x, mean, std):
    """The generator's own normalisation before it used data.pipeline.normalise_tensor (the reference)."""
    mean_t = torch.as_tensor(mean, dtype=x.dtype, device=x.device).view(1, -1, 1, 1)
    std_t = torch.as_tensor(std, dtype=x.dtype, device=x.device).view(1, -1, 1, 1)
    return (x - mean_t) / std_t


@pytest.mark.parametrize("channels", [1, 3])
def test_normalisation_is_the_shared_one_and_bit_equal_to_the_former(monkeypatch, channels):
    import fitaudit.data.transforms as transforms
    from fitaudit.data.pipeline import normalise_tensor

    mean, std = [0.485, 0.456, 0.406][:channels], [0.229, 0.224, 0.225][:channels]
    gen = ImageTransformGenerator(smooth_images(6, 20, channels=channels), [0, 1, 2, 0, 1, 2], padding=2,
                                  mean=mean, std=std, random_state=1, batch_size=4)
    f = gen.factor_space.sample(6, random_state=2)
    calls: list[tuple[int, ...]] = []

    def counting(x, mean_, std_):
        calls.append(tuple(x.shape))
        return normalise_tensor(x, mean_, std_)

    monkeypatch.setattr(transforms, "normalise_tensor", counting)  # absent while the generator had its own
    out = gen.generate(np.arange(6), f)
    on_device = gen.generate_tensor(np.arange(6), f)
    untouched = gen.model_input(np.arange(6))
    display = torch.as_tensor(gen.display(np.arange(6), f))  # the images for people: not normalised
    assert calls == [(4, channels, 16, 16), (2, channels, 16, 16)] * 2 + [(6, channels, 16, 16)]
    np.testing.assert_array_equal(out, former_normalise(display, gen.mean, gen.std).numpy())
    np.testing.assert_array_equal(on_device.numpy(), out)
    crops = torch.as_tensor(smooth_images(6, 20, channels=channels)[:, :, 2:18, 2:18])
    np.testing.assert_array_equal(untouched, former_normalise(crops, gen.mean, gen.std).numpy())
