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

Loading builds the model with ``AutoModelForImageClassification`` from local
files only and from safetensors only: fitaudit checks which ``.safetensors``
files hold the weights (:func:`weight_files`: ``model.safetensors``, or the
shards a ``model.safetensors.index.json`` names, each a ``.safetensors`` file
in the folder) and points transformers at a folder of links to those files and
``config.json`` alone, so ``pytorch_model.bin`` (a pickle) is never read,
whatever an index says. A config that needs code from outside transformers
(``auto_map``, or a ``model_type`` transformers does not know) is refused
unless the caller passes ``trust_code=True`` (``--trust-code``).
The module runs like any torch model (:mod:`fitaudit.models.inference`):
the module returns the ``logits`` of the transformers output.
"""

from __future__ import annotations

import functools
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.models.base import Classifier
from fitaudit.models.formats.base import ModelFormat, ModelMetadata, recorded_metadata

CONFIG_FILE = "config.json"
PREPROCESSOR_FILE = "preprocessor_config.json"
WEIGHTS_FILE = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"
SAFETENSORS_SUFFIX = ".safetensors"

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
    return _outside_code(config) is not None


def _outside_code(config: dict[str, Any]) -> str | None:
    """Why building the model would run code from outside transformers (None when it would not)."""
    if config.get("auto_map"):
        return f"its config.json names code of its own ('auto_map': {config['auto_map']!r})"
    transformers = import_optional("transformers", "reading a Hugging Face model")
    if config.get("model_type") not in transformers.CONFIG_MAPPING:
        return f"its model_type {config.get('model_type')!r} is not one transformers knows"
    return None


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
    """The :class:`fitaudit.data.pipeline.EvalPipeline` settings of a transformers image processor's config.

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


def weight_files(folder: Path, *, name: str = "--model") -> list[Path]:
    """The ``.safetensors`` files holding the folder's weights: ``model.safetensors``, or the shards its index names.

    Every shard the index's ``weight_map`` names must be a ``.safetensors``
    file directly in the folder; anything else (``pytorch_model.bin``, a
    path outside the folder) is refused, so no pickle is ever opened.

    Raises
    ------
    InputError
        No safetensors weights; an index that is not a ``weight_map`` of
        ``.safetensors`` files present in the folder.
    """
    if (folder / WEIGHTS_FILE).is_file():
        return [folder / WEIGHTS_FILE]
    index = folder / WEIGHTS_INDEX
    if not index.is_file():
        raise InputError(
            f"`{name}`: {str(folder)!r} holds no {WEIGHTS_FILE}; fitaudit reads Hugging Face weights from "
            "safetensors only (pytorch_model.bin is a pickle): save with save_pretrained(safe_serialization=True)."
        )
    weight_map = _read_json(index, name).get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise InputError(f"`{name}`: {str(index)!r} must hold a non-empty 'weight_map' of tensor names to files.")
    shards = sorted({str(shard) for shard in weight_map.values()})
    for shard in shards:
        if Path(shard).name != shard or not shard.endswith(SAFETENSORS_SUFFIX):
            raise InputError(
                f"`{name}`: {str(index)!r} maps weights to {shard!r}; fitaudit reads Hugging Face weights only "
                f"from {SAFETENSORS_SUFFIX} files in the model's folder (never a pickle such as pytorch_model.bin)."
            )
        if not (folder / shard).is_file():
            raise InputError(f"`{name}`: {str(index)!r} maps weights to {shard!r}, which is not in {str(folder)!r}.")
    return [folder / shard for shard in shards]


def _safe_view(folder: Path, files: list[Path], *, trust_code: bool, staging: Path) -> Path:
    """A folder of links to what transformers may read: config.json, the checked safetensors files (and their index).

    transformers is pointed at this folder, not the user's, so no other
    weights file (a ``pytorch_model.bin`` pickle above all) is there for it to
    find, whatever an index or its own fallbacks would ask for. Python files
    are linked only with ``trust_code`` (a config's ``auto_map`` names them).
    """
    keep = [folder / CONFIG_FILE, *files]
    if len(files) > 1 or files[0].name != WEIGHTS_FILE:
        keep.append(folder / WEIGHTS_INDEX)
    if trust_code:
        keep += sorted(folder.glob("*.py"))
    for file in keep:
        (staging / file.name).symlink_to(file.resolve())
    return staging


def load_module(path: str | os.PathLike[str], *, trust_code: bool = False, name: str = "--model") -> Any:
    """Build the transformers model from the folder's config and fill it from its safetensors files; returns a module giving logits.

    Raises
    ------
    InputError
        No safetensors weights (or an index naming anything else); a config
        that needs outside code without ``trust_code``; transformers cannot
        build it; weights missing from the files.
    """
    folder = _folder(Path(path))
    config = read_config(folder, name=name)
    files = weight_files(folder, name=name)
    outside = _outside_code(config)
    if outside is not None and not trust_code:
        raise InputError(
            f"`{name}`: {str(folder)!r} needs code from outside transformers to build ({outside}); running it "
            "needs --trust-code (trust_code=True), only for a model you trust."
        )
    transformers = import_optional("transformers", "loading a Hugging Face model")
    bars = transformers.utils.logging
    shown = bars.is_progress_bar_enabled()
    bars.disable_progress_bar()  # its per-weight bar would interleave with the command's output
    try:
        with tempfile.TemporaryDirectory(prefix="fitaudit-hf-") as staging:
            view = _safe_view(folder, files, trust_code=trust_code, staging=Path(staging))
            model, loading = transformers.AutoModelForImageClassification.from_pretrained(
                str(view), local_files_only=True, use_safetensors=True, trust_remote_code=trust_code,
                output_loading_info=True,
            )
    except Exception as exc:  # transformers raises OSError, ValueError, KeyError for unknown or broken folders
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"`{name}`: transformers could not load {str(folder)!r} as an image classifier ({first}).") from exc
    finally:
        if shown:
            bars.enable_progress_bar()
    _check_complete(loading, folder, name)
    return _logits_module()(model).eval()


def _check_complete(loading: dict[str, Any], folder: Path, name: str) -> None:
    """Refuse a model some of whose weights transformers did not find in the files (it would leave them random)."""
    missing = sorted(loading.get("missing_keys") or [])
    mismatched = sorted(str(entry[0]) for entry in loading.get("mismatched_keys") or [])
    if missing or mismatched:
        listed = ", ".join((missing + mismatched)[:3])
        raise InputError(
            f"`{name}`: the safetensors weights in {str(folder)!r} do not fill the model its config.json describes "
            f"({len(missing) + len(mismatched)} weights missing or of another shape: {listed}); transformers would "
            "leave them untrained. Save the classifier itself with save_pretrained."
        )


class HFFolder(ModelFormat):
    """A transformers image classifier saved with ``save_pretrained`` (module docstring), run as a torch module."""

    name = "hf"
    kind = "hf"
    runs_on = "torch"
    suffixes = (".json", ".safetensors")

    def recognises(self, path: Path) -> bool:
        return is_hf_folder(path)

    def load(
        self, path: Path, *, n_classes: int | None, batch_size: int | None, device: Any, trust_code: bool,
        trust_torchscript: bool, name: str,
    ) -> Classifier:
        from fitaudit.models.native import wrap_native

        config = read_config(path, name=name)
        labels = config.get("id2label")
        if n_classes is None and isinstance(labels, dict) and len(labels) >= 2:
            n_classes = len(labels)
        adapter = wrap_native(load_module(path, trust_code=trust_code, name=name), n_classes=n_classes,
                              batch_size=batch_size, device=device)
        adapter.input_shape = tuple(input_shape(config))
        return adapter

    def runs_code(self, path: Path) -> bool:
        """Whether building it needs code from outside transformers (:func:`needs_code`)."""
        return needs_code(read_config(path))

    def metadata(self, path: Path, *, name: str) -> ModelMetadata:
        """``id2label``, the preprocessor's pipeline and the input's channels and side."""
        config = read_config(path, name=name)
        values = {"classes": class_names(config, name=name), "pipeline": recorded_pipeline(path, name=name),
                  "input_shape": input_shape(config)}
        return recorded_metadata(values, f"the Hugging Face files of {str(path)!r}", name)
