"""Which evaluation pipeline a command uses, and why: one rule for every command.

Every command that scores a model on images (``inspect``, ``audit``,
``overfit``, ``examine``, ``leakage`` with a model) and on ``.npz`` image
arrays decides the pipeline here, by :func:`choose_pipeline`:

1. the pipeline the model records (its ``config.json`` ``"pipeline"``, an
   ONNX file's metadata, a Hugging Face processor:
   :func:`fitaudit.models.io.read_model_metadata`); runs that record one must agree;
2. each setting the user gives (``--resize``, ``--crop``, ``--mean``,
   ``--std``) replaces the recorded one;
3. with no crop from either, the model's declared input size; with no
   resize, the crop (no spare pixels);
4. with no mean/std from either, none: the model sees pixel values in
   [0, 1], and every command says so (:attr:`PipelineChoice.normalisation`
   is ``"none"``);
5. the channels (grey or RGB) the model's input declares, else the
   recorded pipeline's, else as many as the mean has values, else RGB.

``.npz`` image arrays ``(m, c, H, W)`` already have their size: only the
normalisation applies to them (:func:`choose_normalisation`), the recorded
one unless ``--mean``/``--std`` replace it (``--mean 0 --std 1`` for arrays
already normalised).

The choice keeps what the model records beside what is used, so that a
command using another pipeline (the overfitting test's margin, a user's
``--resize``) can measure the accuracy under both;
:func:`fitaudit.report.pipelines.pipeline_lines` puts it into words. User
guide: docs/bring-your-model.md#one-pipeline-rule.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.data.pipeline import EvalPipeline
from fitaudit.models.pipeline_classifier import PipelineClassifier

#: where the normalisation of a choice came from
NORMALISATIONS = ("recorded", "given", "none")


@dataclasses.dataclass(frozen=True)
class PipelineChoice:
    """The pipeline a command uses, the one the model records, and why they differ.

    Attributes
    ----------
    pipeline : EvalPipeline or None
        The pipeline used (``None`` when nothing gives a size and none was required).
    recorded : EvalPipeline or None
        The model's recorded pipeline, in the model's channels (``None``: it records none).
    recorded_by : str or None
        The model file that records it.
    given : tuple of str
        The settings the user gave (``"resize"``, ``"crop"``, ``"mean"``, ``"std"``).
    normalisation : {"recorded", "given", "none"}
        Where the mean and std came from; ``"none"``: nowhere, pixel values in [0, 1].
    arrays : bool
        Arrays of a fixed size (``--data``): only the normalisation applies.
    """

    pipeline: EvalPipeline | None
    recorded: EvalPipeline | None = None
    recorded_by: str | None = None
    given: tuple[str, ...] = ()
    normalisation: str = "none"
    arrays: bool = False

    @property
    def differs(self) -> bool:
        """Whether the pipeline used is not the recorded one (for arrays: another mean or std)."""
        if self.recorded is None or self.pipeline is None:
            return False
        if self.arrays:
            return (self.pipeline.mean, self.pipeline.std) != (self.recorded.mean, self.recorded.std)
        return self.pipeline != self.recorded

    @property
    def normalises(self) -> bool:
        """Whether a mean and std other than 0 and 1 are applied (recorded or given)."""
        return self.pipeline is not None and not _identity(self.pipeline)

    def classifier(self, model: Any, pipeline: EvalPipeline | None = None) -> Any:
        """``model`` taking [0, 1] arrays, normalised by ``pipeline`` (default: the one used) when it normalises."""
        chosen = self.pipeline if pipeline is None else pipeline
        return model if chosen is None or _identity(chosen) else PipelineClassifier(model, chosen)

    def recorded_accuracy(self, model: Any, x: np.ndarray, y: np.ndarray) -> float | None:
        """``model``'s accuracy on [0, 1] arrays ``x`` under the recorded pipeline's normalisation, when another
        is used (``None`` when the pipelines agree or nothing is recorded)."""
        if not self.differs:
            return None
        return float(np.mean(np.asarray(self.classifier(model, self.recorded).predict(x)) == np.asarray(y)))

    def to_dict(self, accuracy: float | None = None, recorded_accuracy: float | None = None) -> dict[str, Any]:
        """JSON-safe: the pipeline used and the recorded one, where they came from, and the accuracy under each.

        ``recorded_accuracy`` is kept only when the pipelines differ (under
        the same pipeline it is ``accuracy``).
        """
        return {
            "used": None if self.pipeline is None else self._settings(self.pipeline),
            "recorded": None if self.recorded is None else self._settings(self.recorded),
            "recorded_by": self.recorded_by, "given": list(self.given), "normalisation": self.normalisation,
            "arrays": self.arrays, "differs": self.differs, "accuracy": accuracy,
            "recorded_accuracy": recorded_accuracy if self.differs else None,
        }

    def _settings(self, pipeline: EvalPipeline) -> dict[str, Any]:
        """The settings that apply: all of them, or only the normalisation for arrays."""
        settings = pipeline.to_dict()
        return {"mean": settings["mean"], "std": settings["std"]} if self.arrays else settings


def _identity(pipeline: EvalPipeline) -> bool:
    """Whether the pipeline's normalisation changes nothing (mean 0, std 1)."""
    return set(pipeline.mean) == {0.0} and set(pipeline.std) == {1.0}


def _agreed(recorded: Sequence[tuple[str, Any]]) -> tuple[str, EvalPipeline, dict[str, Any]] | None:
    """The one pipeline the runs record (name, pipeline, raw dict), None when none records one."""
    known = [(name, EvalPipeline.from_dict(raw, name=f"--model {name}: 'pipeline'"), raw)
             for name, raw in recorded if raw]
    if any(pipeline != known[0][1] for _, pipeline, _ in known[1:]):
        listing = ", ".join(f"{name} ({pipeline.to_dict()})" for name, pipeline, _ in known)
        raise InputError(f"`--models`: the runs record different evaluation pipelines: {listing}.")
    return known[0] if known else None


def _build(resize: int, crop: int, scale: dict[str, Any], channels: int | None, base: EvalPipeline | None,
           ) -> EvalPipeline:
    """An :class:`EvalPipeline` of these settings with the recorded resampling."""
    return EvalPipeline(resize=resize, crop=crop, mean=scale["mean"] if scale["mean"] is not None else (),
                        std=scale["std"] if scale["std"] is not None else (), channels=channels,
                        resample=base.resample if base else "bilinear", squash=base.squash if base else False)


def choose_pipeline(
    recorded: Sequence[tuple[str, Any]] = (),
    *,
    resize: int | None = None,
    crop: int | None = None,
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
    input_size: int | None = None,
    channels: int | None = None,
    required: bool = False,
) -> PipelineChoice:
    """The evaluation pipeline of a run: what the caller gives over what the model files record (the module's rule).

    Parameters
    ----------
    recorded : sequence of (str, dict or None)
        Each model's name and recorded ``pipeline`` (:attr:`fitaudit.models.formats.base.ModelMetadata.pipeline`).
    resize, crop, mean, std :
        The settings given (``None``: not given).
    input_size : int, optional
        The model's input side, the crop's default when nothing records one.
    channels : {1, 3}, optional
        What the model's input declares (:func:`fitaudit.models.layout.input_spec`).
    required : bool
        Raise when no crop comes from anywhere (else the choice's pipeline is ``None``).

    Raises
    ------
    InputError
        Runs recording different pipelines; a recorded pipeline with other
        channels than the model's input; no size when ``required``; any
        setting :class:`EvalPipeline` refuses (e.g. 3 mean values for a grey model).
    """
    agreed = _agreed(recorded)
    name, base, raw = agreed if agreed is not None else (None, None, {})
    if base is not None and channels is not None and base.n_channels != channels and (mean is None or std is None):
        raise InputError(
            f"`--model` {name}: its recorded pipeline normalises {base.n_channels} channel(s) (mean "
            f"{list(base.mean)}) but its input takes {channels}; give --mean and --std with {channels} value(s)."
        )
    given = tuple(key for key, value in (("resize", resize), ("crop", crop), ("mean", mean), ("std", std))
                  if value is not None)
    crop = crop if crop is not None else base.crop if base else input_size
    if crop is None:
        if not required and not given:
            return PipelineChoice(None)
        model = f"{recorded[0][0]} records no evaluation pipeline" if recorded else "no model file gives the pipeline"
        raise InputError(f"`--resize` and `--crop` are needed with --images: {model} "
                         "(ImageNet models: --resize 256 --crop 224 --mean 0.485 0.456 0.406 --std 0.229 0.224 0.225).")
    resize = resize if resize is not None else base.resize if base else crop
    channels = channels if channels is not None else base.n_channels if base is not None else None
    scale = {key: value if value is not None else raw.get(key) for key, value in (("mean", mean), ("std", std))}
    source = "given" if mean is not None or std is not None else "recorded" if raw.get("mean") or raw.get("std") \
        else "none"
    pipeline = _build(resize, crop, scale, channels, base)
    try:  # the recorded pipeline in the model's channels (one with another channel count cannot score it)
        model_pipeline = None if base is None else _build(
            base.resize, base.crop, {"mean": raw.get("mean"), "std": raw.get("std")}, pipeline.n_channels, base)
    except InputError:
        model_pipeline = None
    return PipelineChoice(pipeline, model_pipeline, name, given, source)


#: the settings of a pipeline a caller may give (the rest is the model's)
SETTINGS = ("resize", "crop", "mean", "std")


def given_settings(pipeline: Any, *, arrays: bool = False) -> dict[str, Any]:
    """The settings ``pipeline`` gives: all of an :class:`EvalPipeline`, the keys of a dict (``{"resize": 34}``).

    ``arrays``: only ``mean`` and ``std`` apply (``.npz`` arrays have their size).
    """
    if pipeline is None:
        return {}
    if isinstance(pipeline, EvalPipeline):  # its mean 0 and std 1 are no normalisation given
        settings = {key: getattr(pipeline, key) for key in SETTINGS}
        if _identity(pipeline):
            settings = {key: settings[key] for key in ("resize", "crop")}
    elif isinstance(pipeline, dict):
        unknown = sorted(set(pipeline) - set(SETTINGS) - {"channels", "resample", "squash", "margin"})
        if unknown:
            raise InputError(f"`pipeline` takes {', '.join(SETTINGS)}; got {', '.join(map(str, unknown))}.")
        settings = {key: pipeline[key] for key in SETTINGS if pipeline.get(key) is not None}
    else:
        raise InputError(f"`pipeline` must be an EvalPipeline or a dict of its settings; got {type(pipeline).__name__}.")
    if arrays and set(settings) - {"mean", "std"}:
        raise InputError("`pipeline` with `data` arrays sets only `mean` and `std` (the arrays have their size); "
                         f"got {', '.join(sorted(settings))}.")
    return settings


def choose_normalisation(
    recorded: Sequence[tuple[str, Any]], x: np.ndarray, *, mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None, name: str = "--data",
) -> PipelineChoice:
    """The normalisation of ``.npz`` image arrays ``x`` (m, c, H, W): given over recorded (the module's rule).

    Arrays of another shape (features, flat vectors), and arrays of other
    than 1 or 3 channels that nothing normalises, take none (a choice whose
    pipeline is ``None``). Arrays normalised by a mean and std must be
    pixel values in [0, 1], as the pipeline's crops are.

    Raises
    ------
    InputError
        A normalisation to apply to values outside [0, 1] (arrays already
        normalised: ``--mean 0 --std 1``), or one with another channel count.
    """
    if (mean is not None or std is not None) and np.ndim(x) != 4:
        raise InputError(f"`--mean`/`--std` normalise image arrays (m, c, H, W); `{name}` holds x of shape "
                         f"{tuple(np.shape(x))}.")
    nothing = mean is None and std is None and not any(raw for _, raw in recorded)
    if np.ndim(x) != 4 or (nothing and np.shape(x)[1] not in (1, 3)):  # not images a pipeline could normalise
        return PipelineChoice(None, arrays=True)
    side = int(max(np.shape(x)[2:]))
    choice = choose_pipeline(recorded, resize=side, crop=side, mean=mean, std=std, channels=int(np.shape(x)[1]))
    choice = dataclasses.replace(choice, given=tuple(g for g in choice.given if g in ("mean", "std")), arrays=True)
    low, high = (float(np.min(x)), float(np.max(x))) if np.size(x) else (0.0, 1.0)
    if choice.pipeline is not None and choice.normalises and (low < 0 or high > 1):
        where = "its model file records" if choice.normalisation == "recorded" else "--mean/--std give"
        raise InputError(
            f"`{name}`: x holds values in [{low:.3g}, {high:.3g}], but the normalisation {where} (mean "
            f"{list(choice.pipeline.mean)}, std {list(choice.pipeline.std)}) applies to pixel values in [0, 1]; "
            "give images in [0, 1], or --mean 0 --std 1 when the arrays are already normalised."
        )
    return choice
