"""The standard evaluation pipeline of an image classifier: :class:`EvalPipeline`.

Resize the shorter side to R (bilinear, antialiased), centre crop C x C,
scale to [0, 1], normalise per channel ``(x - mean) / std`` (the protocol of
Werpachowski, Gyorgy, Szepesvari, NeurIPS 2019, Sec. 5 on ImageNet). Where
R > C it also gives the *canvases* of the translational AEG: the centre
``C + 2P`` square of the resized image, ``P = floor((R - C) / 2)``
(:attr:`EvalPipeline.margin`), whose centre ``C x C`` crop is exactly the
model's input before normalisation; the default shift is
``eps = floor(P / 3)`` (:meth:`EvalPipeline.default_eps`; ImageNet's
R = 256, C = 224: P = 16, eps = 5). :func:`normalise_tensor` is the same
normalisation on a torch tensor, where it lies. User guide:
docs/overfit.md#your-own-images-image-folders-and-the-evaluation-pipeline.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit._validation import check_int, size_text
from fitaudit.data.decode import MODES, as_mode

#: Pillow's resampling filters a pipeline may name (``PIL.Image.Resampling``, lower case)
RESAMPLING = ("bilinear", "bicubic", "nearest", "lanczos", "box", "hamming")

#: ImageNet's per-channel mean and standard deviation (torchvision's models)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

#: the most one decoded image may take (a float32 RGB canvas of side --resize): --resize up to 4729
MAX_IMAGE_BYTES = 2**28


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

    def check_eps(self, eps: int | None, stride: int = 1) -> int:
        """``eps`` (or the default floor(P / (3 stride)) for None) checked against 3 eps stride <= P.

        ``stride`` is the translational AEG's step in pixels
        (:class:`~fitaudit.overfit.translation.TranslationAEG`): its weights
        look ``3 eps`` steps of ``stride`` pixels away from the crop.
        """
        stride = check_int(stride, "--stride", minimum=1)
        step = 3 * stride
        room = self.margin // step
        need = "3 eps" if stride == 1 else f"3 eps * stride = {step} eps"
        if eps is None:
            if room < 1:
                by = "" if stride == 1 else f" at `--stride` {stride}"
                fix = (f"make --resize at least --crop + {2 * step} = {self.crop + 2 * step}"
                       + ("" if stride == 1 or self.margin < 3 else f", or use --stride <= {self.margin // 3}"))
                raise InputError(
                    f"`--resize` {self.resize} and `--crop` {self.crop} leave P = floor((R - C) / 2) = "
                    f"{self.margin} spare pixels per side; the translational AEG{by} needs P >= {need}, so "
                    f"at least {step} ({fix})."
                )
            return room
        eps = check_int(eps, "--eps", minimum=1)
        if step * eps > self.margin:
            fix = (
                f"use --eps <= {room} or a larger --resize"
                if room >= 1
                else f"make --resize at least --crop + {2 * step * eps} = {self.crop + 2 * step * eps}"
            )
            times = "3 * eps" if stride == 1 else f"3 * eps * `--stride` {stride}"
            raise InputError(
                f"`--eps` {eps} needs {times} = {step * eps} spare pixels per side, but `--resize` "
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
