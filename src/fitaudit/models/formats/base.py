"""What every model format says about itself: :class:`ModelFormat`, and what a file records (:class:`ModelMetadata`).

A format is a small class (in the manner of optuna's ``BaseSampler``): how
a path is recognised as one of its files or folders (:meth:`~ModelFormat.recognises`),
how it is loaded safely into a :class:`~fitaudit.models.base.Classifier`
(:meth:`~ModelFormat.load`, with the refusals that keep code from running
unasked), whether loading it runs code it brings (:meth:`~ModelFormat.runs_code`),
what it records about its data (:meth:`~ModelFormat.metadata`), which
files beside it are part of the model and so of its fingerprint
(:meth:`~ModelFormat.companion_files`), and what runs it
(:attr:`~ModelFormat.runs_on`, :attr:`~ModelFormat.backends`). The formats
and the order they are tried in are one table,
:data:`fitaudit.models.formats.FORMATS`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from fitaudit._errors import InputError
from fitaudit.models.base import Classifier
from fitaudit.models.inference.settings import BACKENDS
from fitaudit.models.layout import CHANNELS_LAST, NO_CHANNEL_AXIS, InputSpec, input_spec

#: the formats a refusal points to (every message that turns a model file away ends with them)
SAFE_FORMATS = (
    "use ONNX (.onnx), safetensors weights with a config.json (fitaudit.models.save_torch_model), "
    "skops (.skops) for scikit-learn, XGBoost's .json/.ubj or LightGBM's .txt model files"
)

#: the keys :func:`fitaudit.models.io.read_model_metadata` reads and :func:`fitaudit.models.formats.onnx.export_onnx` writes
METADATA_KEYS = ("classes", "pipeline", "data_fingerprint")

#: what runs a loaded model: a torch module (on fitaudit's inference backends), onnxruntime, or the format's own library
RUNNERS = ("torch", "onnxruntime", "native")


@dataclasses.dataclass(frozen=True)
class ModelMetadata:
    """What a model file says about the data it expects (every field optional).

    Attributes
    ----------
    classes : list of str or None
        Class names in the order of the model's outputs.
    pipeline : dict or None
        The evaluation transform (``resize``, ``crop``, ``mean``, ``std``;
        :meth:`fitaudit.data.pipeline.EvalPipeline.from_dict`).
    data_fingerprint : str or None
        A fingerprint of the training set (``fitaudit shapes train`` writes
        it), so runs of one procedure on the same data can be recognised.
    input_shape : tuple or None
        The shape of one example the model declares (``None`` entries free),
        read without running the model: an ONNX graph's input, a torch
        config's ``input_shape`` (else the first layer of a built-in
        architecture), a scikit-learn model's ``n_features_in_``.
    """

    classes: list[str] | None = None
    pipeline: dict[str, Any] | None = None
    data_fingerprint: str | None = None
    input_shape: tuple[int | None, ...] | None = None

    @property
    def spec(self) -> InputSpec:
        """Grey or RGB, and the layout, of the model's image input (:func:`fitaudit.models.layout.input_spec`)."""
        return input_spec(self.input_shape)

    def check_classes(self, names: Sequence[str], what: str) -> None:
        """Class names given for the model's outputs must be the recorded ones, in order.

        Another order would score every input against the wrong label. ``what``
        names the argument in the message, e.g. ``"`--classes`"``.
        """
        if self.classes and list(names) != list(self.classes):
            raise InputError(
                f"{what} {','.join(map(str, names))} contradicts the class names the model records, in its "
                f"label order: {','.join(self.classes)}."
            )


def declared_shape(shape: Any) -> tuple[int | None, ...] | None:
    """``shape`` as a tuple of positive ints and Nones, or None when absent or malformed."""
    if not isinstance(shape, list) or not all(d is None or (isinstance(d, int) and d > 0) for d in shape):
        return None
    return tuple(shape)


def recorded_metadata(values: dict[str, Any], where: str, name: str) -> ModelMetadata:
    """The :class:`ModelMetadata` of the values a file records (``where`` says where, for errors).

    Raises
    ------
    InputError
        A recorded value of the wrong type (``classes`` not a list of strings, ``pipeline`` not an object).
    """
    classes, pipeline, data = (values.get(key) for key in METADATA_KEYS)
    if classes is not None and not (isinstance(classes, list) and all(isinstance(c, str) for c in classes)):
        raise InputError(f"`{name}`: 'classes' in {where} must be a list of class names; got {classes!r}.")
    if pipeline is not None and not isinstance(pipeline, dict):
        raise InputError(f"`{name}`: 'pipeline' in {where} must be a JSON object; got {pipeline!r}.")
    return ModelMetadata(
        classes=classes, pipeline=pipeline, data_fingerprint=data if isinstance(data, str) else None,
        input_shape=declared_shape(values.get("input_shape")),
    )


def declare_input(adapter: Classifier, shape: Sequence[int | None]) -> Classifier:
    """``adapter`` with the input shape its file declares and, for a channels-last or channel-less input,
    the layout channels-first images are put in (a flat input keeps the model's own flattening)."""
    adapter.input_shape = tuple(shape)
    layout = input_spec(adapter.input_shape).layout
    if layout in (CHANNELS_LAST, NO_CHANNEL_AXIS):
        adapter.image_layout = layout
    return adapter


def first_lines(exc: BaseException) -> str:
    """An error's message on one line: its first two lines and how many more there were.

    torch's ``load_state_dict`` lists one size mismatch per tensor on its own line.
    """
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    more = f" (and {len(lines) - 2} more lines)" if len(lines) > 2 else ""
    return " ".join(lines[:2]) + more


def head(path: Path, size: int = 256) -> bytes:
    """The first ``size`` bytes of a file (to recognise a format by its content)."""
    with open(path, "rb") as handle:
        return handle.read(size)


class ModelFormat:
    """One model file format.

    A subclass sets :attr:`name`, :attr:`kind`, :attr:`runs_on` (and
    :attr:`suffixes`, which the default :meth:`recognises` reads) and
    implements :meth:`load`; the other methods have defaults that say
    "records nothing, runs no code, is its own file".
    """

    #: the format's name in :data:`fitaudit.models.formats.FORMATS`
    name: ClassVar[str]
    #: the model's kind as ``fitaudit inspect`` reports it (:attr:`fitaudit.models.inspection.InspectResult.kind`)
    kind: ClassVar[str]
    #: what runs the loaded model, one of :data:`RUNNERS`
    runs_on: ClassVar[str]
    #: file suffixes (lower case) its files are known by
    suffixes: ClassVar[tuple[str, ...]] = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    @property
    def backends(self) -> tuple[str, ...]:
        """The ``backend`` values a model of this format runs under (:mod:`fitaudit.models.inference`).

        A torch module runs on every backend; an ONNX model in onnxruntime
        (``"onnx"``) only; other models run as they are (``"auto"`` only).
        """
        return {"torch": BACKENDS, "onnxruntime": ("auto", "onnx")}.get(self.runs_on, ("auto",))

    def recognises(self, path: Path) -> bool:
        """Whether ``path`` is one of this format's files or folders (tried in the order of ``FORMATS``)."""
        return path.suffix.lower() in self.suffixes

    def load(
        self, path: Path, *, n_classes: int | None, batch_size: int | None, device: Any, trust_code: bool,
        trust_torchscript: bool, name: str,
    ) -> Classifier:
        """The model in its adapter (arguments as :func:`fitaudit.models.load_model`); an
        :class:`~fitaudit.InputError` naming ``name`` when it is refused or unreadable."""
        raise NotImplementedError

    def runs_code(self, path: Path) -> bool:
        """Whether loading the file runs code it brings (it then loads only with ``trust_code`` /
        ``trust_torchscript``); every format loads as data unless it says otherwise."""
        return False

    def metadata(self, path: Path, *, name: str) -> ModelMetadata:
        """What the file records about its data (:func:`fitaudit.models.io.read_model_metadata`); nothing by default."""
        return ModelMetadata()

    def input_spec(self, path: Path, metadata: ModelMetadata, *, name: str) -> InputSpec:
        """What the file declares about its image input; by default what its :meth:`metadata` says."""
        return metadata.spec

    def companion_files(self, path: Path) -> list[Path]:
        """Files beside the model's file that are part of the model (its fingerprint hashes them); none by default."""
        return []

