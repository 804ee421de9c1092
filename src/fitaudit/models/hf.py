"""Hugging Face image classifiers saved with ``save_pretrained`` (the optional ``hf`` extra: ``transformers``).

A folder holding ``config.json`` (with a ``"model_type"``),
``model.safetensors`` (or its sharded index) and
``preprocessor_config.json`` is read as a classifier:

* the class names from ``config.id2label`` (keys 0 .. k-1);
* the evaluation pipeline from ``preprocessor_config.json``
  (:func:`pipeline_of`): its resize (``size``: a fixed height and width, or
  a shortest edge with a centre crop or ConvNeXt's ``crop_pct``), the
  resampling it names (``resample``), ``image_mean`` and ``image_std``;
* the input's channels and side from ``num_channels`` and ``image_size``.

Loading builds the model with ``AutoModelForImageClassification`` from the
local files only and from safetensors only (``pytorch_model.bin`` is a
pickle and is never read). A config that needs code from outside
transformers (``auto_map``, or a ``model_type`` transformers does not know)
is refused unless the caller passes ``trust_code=True`` (``--trust-code``).
The module runs like any torch model (:mod:`fitaudit.models.inference`):
the module returns the ``logits`` of the transformers output.
"""

from __future__ import annotations

import functools
import json
import math
import os
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit._optional import import_optional

CONFIG_FILE = "config.json"
PREPROCESSOR_FILE = "preprocessor_config.json"
WEIGHTS_FILES = ("model.safetensors", "model.safetensors.index.json")

#: Pillow's resampling filters by the number transformers records (``PIL.Image.Resampling``)
RESAMPLING = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming"}

#: transformers' ConvNeXt rule: below this shortest edge, resize to edge / crop_pct and crop the edge
_CROP_PCT_LIMIT = 384


def _folder(path: Path) -> Path:
    return path if path.is_dir() else path.parent


def _read_json(path: Path, name: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(f"`{name}`: {str(path)!r} is not valid JSON ({exc}).") from exc
    if not isinstance(data, dict):
        raise InputError(f"`{name}`: {str(path)!r} must be a JSON object.")
    return data


def is_hf_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (a folder, or a file in it) is a transformers model: its ``config.json`` has a ``"model_type"``."""
    target = Path(path)
    if not (target.is_dir() or target.suffix in (".json", ".safetensors")):
        return False
    config = _folder(target) / CONFIG_FILE
    try:
        data = json.loads(config.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(data, dict) and isinstance(data.get("model_type"), str) and "architecture" not in data


def read_config(path: str | os.PathLike[str], *, name: str = "--model") -> dict[str, Any]:
    """The folder's ``config.json``."""
    return _read_json(_folder(Path(path)) / CONFIG_FILE, name)


def needs_code(config: dict[str, Any]) -> bool:
    """Whether building the model runs code from outside transformers: an ``auto_map``, or a ``model_type`` it does not know."""
    if config.get("auto_map"):
        return True
    transformers = import_optional("transformers", "reading a Hugging Face model")
    return config.get("model_type") not in transformers.CONFIG_MAPPING


def class_names(config: dict[str, Any], *, name: str = "--model") -> list[str] | None:
    """``id2label`` in output order, or None when the config has none (or only transformers' ``LABEL_i`` defaults)."""
    labels = config.get("id2label")
    if not isinstance(labels, dict) or not labels:
        return None
    try:
        order = {int(key): str(value) for key, value in labels.items()}
    except (TypeError, ValueError):
        raise InputError(f"`{name}`: 'id2label' in config.json must map 0, 1, ... to names; got {labels!r}.") from None
    if sorted(order) != list(range(len(order))):
        raise InputError(f"`{name}`: 'id2label' in config.json must have keys 0 .. {len(order) - 1}; got {sorted(order)}.")
    names = [order[i] for i in range(len(order))]
    return None if names == [f"LABEL_{i}" for i in range(len(names))] else names


def input_shape(config: dict[str, Any]) -> list[int | None]:
    """``[num_channels, image_size, image_size]`` (sizes None when the config does not fix them)."""
    channels = config.get("num_channels", 3)
    size = config.get("image_size")
    side = size if isinstance(size, int) else None
    return [channels if isinstance(channels, int) else 3, side, side]


def _side(value: Any, key: str, where: str) -> tuple[int | None, int | None]:
    """(height, width) of a ``size`` / ``crop_size`` entry: an int, or a dict of ``height``/``width``; ``shortest_edge`` -> (None, edge)."""
    if isinstance(value, int):
        return value, value
    if isinstance(value, dict) and "height" in value and "width" in value:
        return value["height"], value["width"]
    if isinstance(value, dict) and "shortest_edge" in value:
        return None, value["shortest_edge"]
    raise InputError(f"{where}: '{key}' must be an int, {{'height', 'width'}} or {{'shortest_edge'}}; got {value!r}.")


def pipeline_of(preprocessor: dict[str, Any], *, where: str) -> dict[str, Any] | None:
    """The :class:`fitaudit.data.images.EvalPipeline` settings of a transformers image processor's config.

    Returns None when it does not resize (then ``--resize``/``--crop`` are
    needed). A fixed ``{"height": H, "width": H}`` is a resize of both sides
    to H (``squash``); a shortest edge S with ``crop_pct`` (ConvNeXt) is a
    resize to ``int(S / crop_pct)`` and a centre crop S (S < 384); a
    shortest edge with ``crop_size`` is a resize to S and that centre crop.

    Raises
    ------
    InputError
        Settings fitaudit's pipeline cannot reproduce: a non-square size or
        crop, a rescale factor other than 1/255, no rescaling, an unknown
        resampling filter.
    """
    if not preprocessor.get("do_resize", True):
        return None
    if preprocessor.get("do_rescale", True) is False or not math.isclose(
        float(preprocessor.get("rescale_factor", 1 / 255)), 1 / 255, rel_tol=1e-6
    ):
        raise InputError(f"{where}: the processor does not scale pixels by 1/255 (do_rescale, rescale_factor), "
                         "which fitaudit's pipeline does; give --resize, --crop, --mean and --std.")
    code = preprocessor.get("resample", 2)
    if code not in RESAMPLING:
        raise InputError(f"{where}: 'resample' must be one of {sorted(RESAMPLING)} (Pillow's filters); got {code!r}.")
    height, width = _side(preprocessor.get("size"), "size", where)
    settings: dict[str, Any] = {"resample": RESAMPLING[code]}
    if height is not None:  # a fixed size: both sides resized to it
        if height != width:
            raise InputError(f"{where}: a non-square 'size' {height}x{width} is not supported; give --resize and --crop.")
        settings.update(resize=height, crop=height, squash=True)
    elif preprocessor.get("crop_pct") is not None and width is not None:
        crop_pct = float(preprocessor["crop_pct"])
        if width < _CROP_PCT_LIMIT:
            settings.update(resize=int(width / crop_pct), crop=width)
        else:
            settings.update(resize=width, crop=width, squash=True)
    else:
        settings.update(resize=width, crop=width)
    if preprocessor.get("do_center_crop") and preprocessor.get("crop_size") is not None:
        crop_h, crop_w = _side(preprocessor["crop_size"], "crop_size", where)
        if crop_h != crop_w:
            raise InputError(f"{where}: a non-square 'crop_size' is not supported; give --crop.")
        settings["crop"] = crop_h
    elif height is None and preprocessor.get("crop_pct") is None:
        raise InputError(f"{where}: a shortest-edge resize without a centre crop gives images of many shapes; "
                         "give --crop.")
    if preprocessor.get("do_normalize", True):
        settings.update(mean=preprocessor.get("image_mean"), std=preprocessor.get("image_std"))
    return settings


def recorded_pipeline(path: str | os.PathLike[str], *, name: str = "--model") -> dict[str, Any] | None:
    """The pipeline of the folder's ``preprocessor_config.json`` (None when it has none or it does not resize)."""
    file = _folder(Path(path)) / PREPROCESSOR_FILE
    if not file.is_file():
        return None
    pipeline = pipeline_of(_read_json(file, name), where=f"`{name}`: {str(file)!r}")
    if pipeline is not None:
        pipeline["channels"] = input_shape(read_config(path, name=name))[0]
    return pipeline


@functools.cache
def _logits_module() -> Any:
    """The torch module class wrapping a transformers model (defined once torch is imported)."""
    torch = import_optional("torch", "loading a Hugging Face model")

    class HFLogits(torch.nn.Module):  # type: ignore[name-defined]
        """A transformers image classifier, returning the ``logits`` of its output."""

        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, pixel_values: Any) -> Any:
            return self.inner(pixel_values=pixel_values).logits

    return HFLogits


def load_module(path: str | os.PathLike[str], *, trust_code: bool = False, name: str = "--model") -> Any:
    """Build the transformers model from the folder's config and safetensors weights; returns a module giving logits.

    Raises
    ------
    InputError
        No safetensors weights; a config that needs outside code without
        ``trust_code``; transformers cannot build or load it.
    """
    folder = _folder(Path(path))
    config = read_config(folder, name=name)
    if not any((folder / f).is_file() for f in WEIGHTS_FILES):
        raise InputError(
            f"`{name}`: {str(folder)!r} holds no model.safetensors; fitaudit reads Hugging Face weights from "
            "safetensors only (pytorch_model.bin is a pickle): save with save_pretrained(safe_serialization=True)."
        )
    if needs_code(config) and not trust_code:
        raise InputError(
            f"`{name}`: {str(folder)!r} needs code from outside transformers to build (an 'auto_map', or model_type "
            f"{config.get('model_type')!r} that transformers does not know); running it needs --trust-code "
            "(trust_code=True), only for a model you trust."
        )
    transformers = import_optional("transformers", "loading a Hugging Face model")
    bars = transformers.utils.logging
    shown = bars.is_progress_bar_enabled()
    bars.disable_progress_bar()  # its per-weight bar would interleave with the command's output
    try:
        model = transformers.AutoModelForImageClassification.from_pretrained(
            str(folder), local_files_only=True, use_safetensors=True, trust_remote_code=trust_code,
        )
    except Exception as exc:  # transformers raises OSError, ValueError, KeyError for unknown or broken folders
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"`{name}`: transformers could not load {str(folder)!r} as an image classifier ({first}).") from exc
    finally:
        if shown:
            bars.enable_progress_bar()
    return _logits_module()(model).eval()
