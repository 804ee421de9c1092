"""Safe loading of model files, and what they record about their data.

Which formats exist, how each is recognised and loaded, is the format
registry's (:data:`fitaudit.models.formats.FORMATS`); this module asks it:

* ``.onnx`` -- run by onnxruntime (:mod:`fitaudit.models.formats.onnx`);
* a torch model folder, ``weights.safetensors`` with a ``config.json``
  naming the architecture (:mod:`fitaudit.models.formats.torch_folder`;
  the user's own architecture file only with ``trust_code=True``);
* a Hugging Face image classifier folder (:mod:`fitaudit.models.formats.hf`);
* a Keras 3 ``.keras`` file (:mod:`fitaudit.models.formats.keras`);
* ``.skops`` -- a scikit-learn model, loaded with an explicit allowlist of
  types and functions (:mod:`fitaudit.models.formats.skops`);
* XGBoost ``.json``/``.ubj`` and LightGBM ``.txt`` model files
  (:mod:`fitaudit.models.formats.boosting`);
* TorchScript (``.pt``, ``.pth``, ``.ts``, ``.torchscript``) only with
  ``trust_torchscript=True``. Other ``.pt``/``.pth``/``.pkl``/``.joblib``
  files are refused: they are pickles, which run code when loaded
  (:mod:`fitaudit.models.formats.torchscript`). Nothing here ever unpickles.

What a model file says about its data (:func:`read_model_metadata`):
``"classes"`` (class names in output order), ``"pipeline"`` (the evaluation
transform, :class:`fitaudit.data.pipeline.EvalPipeline` settings) and
``"data_fingerprint"`` (its training set), top-level keys of ``config.json``
or ONNX metadata properties (JSON text);
:func:`fitaudit.models.formats.onnx.export_onnx` writes them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit.models.base import Classifier
from fitaudit.models.formats import find_format
from fitaudit.models.formats.base import SAFE_FORMATS, ModelMetadata
from fitaudit.models.layout import InputSpec
from fitaudit.models.native import DEFAULT_BATCH_SIZE, TABLE_KINDS


def runs_code(path: str | os.PathLike[str]) -> bool:
    """Whether loading the model file runs code it brings: a TorchScript file, a config naming an architecture
    file, a skops, Hugging Face or Keras file naming code beyond fitaudit's allowlist (a pickle, never loaded).

    Such files load only with ``trust_torchscript`` / ``trust_code``; every other format loads as data.
    """
    found = find_format(Path(path))
    return found is not None and found.runs_code(Path(path))


def load_model(
    path: str | os.PathLike[str],
    *,
    trust_torchscript: bool = False,
    trust_code: bool = False,
    n_classes: int | None = None,
    batch_size: int | None = None,
    device: Any = "cpu",
    name: str = "path",
) -> Classifier:
    """Load a model file safely and wrap it in a :class:`Classifier`.

    Parameters
    ----------
    path : path
        ``.onnx`` file; torch model folder, ``config.json`` or
        ``weights.safetensors``; Hugging Face folder; ``.keras`` file;
        ``.skops`` file; XGBoost ``.json``/``.ubj`` or LightGBM ``.txt``
        file; TorchScript file (only with ``trust_torchscript``): the
        formats of :data:`fitaudit.models.formats.FORMATS`.
    trust_torchscript : bool
        Allow :func:`torch.jit.load`, which runs code stored in the file.
        Only for files you trust.
    trust_code : bool
        Allow a torch folder whose ``config.json`` names the user's own
        architecture file (imports it, running its code), and skops,
        Hugging Face or Keras files that name code beyond the allowlist.
    n_classes, batch_size, device
        Passed to the adapter (see :func:`fitaudit.models.as_classifier`; ``batch_size=None``: a memory-bounded
        chunk of a table for scikit-learn, XGBoost and LightGBM models, 256 rows for the others);
        ``n_classes`` defaults to what the file records (a torch config's
        ``"n_classes"``, a Hugging Face ``id2label``, a Keras output's width).
    name : str
        Argument name used in error messages (``"--model"`` on the CLI).

    Returns
    -------
    Classifier
        The native model is its ``.model``.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"`{name}` must be a file or folder path; got {type(path).__name__}.")
    target = Path(path)
    if not target.exists():
        raise InputError(f"`{name}`: {str(target)!r} does not exist.")
    found = find_format(target)
    if found is None:
        raise InputError(f"`{name}`: cannot tell the format of {str(target)!r} from its name; {SAFE_FORMATS}.")
    if batch_size is None and found.kind not in TABLE_KINDS:
        batch_size = DEFAULT_BATCH_SIZE  # an image model (as_classifier lets a torch module choose its own)
    return found.load(target, n_classes=n_classes, batch_size=batch_size, device=device, trust_code=trust_code,
                      trust_torchscript=trust_torchscript, name=name)


def read_model_metadata(path: str | os.PathLike[str], *, name: str = "--model") -> ModelMetadata:
    """Read the class names, evaluation pipeline and training-data fingerprint a model file records.

    A torch folder's ``config.json`` holds them as top-level keys (older
    files from ``fitaudit shapes train``: ``metadata.class_names``,
    ``metadata.pipeline`` and ``metadata.data_fingerprint``); an ONNX file as metadata properties
    (JSON text); a Hugging Face folder in ``config.json`` (``id2label``)
    and ``preprocessor_config.json`` (:mod:`fitaudit.models.formats.hf`). Every
    format but XGBoost's and skops' declares its input's shape where it can
    (:attr:`ModelMetadata.input_shape`; :func:`model_input_spec` reads a
    skops model's); other formats record nothing else (each format's
    :meth:`~fitaudit.models.formats.base.ModelFormat.metadata`).

    Raises
    ------
    InputError
        A recorded value of the wrong type (e.g. ``classes`` not a list of strings).
    """
    target = Path(path)
    found = find_format(target)
    return ModelMetadata() if found is None else found.metadata(target, name=name)


def model_input_spec(
    path: str | os.PathLike[str], metadata: ModelMetadata | None = None, *, name: str = "--model"
) -> InputSpec:
    """What a model file declares about its image input (:func:`fitaudit.models.layout.input_spec`).

    ``metadata`` (:func:`read_model_metadata` of ``path``) is read when not
    given; a ``.skops`` file, which records nothing beside the model, is
    loaded for its ``n_features_in_`` (flat images).
    """
    target = Path(path)
    found = find_format(target)
    metadata = metadata if metadata is not None else read_model_metadata(target, name=name)
    return metadata.spec if found is None else found.input_spec(target, metadata, name=name)


def class_order(
    model: Any = None, classes: str | Sequence[str] | None = None, *, name: str = "classes"
) -> list[str] | None:
    """The class names in the model's output order: one rule for every command and the API.

    ``classes`` (a list, or names separated by commas as ``--classes`` takes
    them) wins; when the model file records class names too, they must be
    the same in the same order (another order would score every image
    against the wrong label). Without ``classes``, the names the model file
    records (``model`` a path; an in-memory model records none); None when
    neither gives them (folders are then read in sorted order, the
    torchvision ``ImageFolder`` convention, and a model at chance on them
    is stopped by :func:`fitaudit.models.labels.stop_at_chance`).

    Parameters
    ----------
    model : path or model, optional
    classes : str or sequence of str, optional
    name : str
        The argument or option, for errors (``--classes`` on the command line).
    """
    recorded = read_model_metadata(model, name="--model") if isinstance(model, (str, os.PathLike)) else None
    if classes is None:
        return recorded.classes if recorded is not None and recorded.classes else None
    given = [c.strip() for c in classes.split(",")] if isinstance(classes, str) else [str(c) for c in classes]
    given = [c for c in given if c]
    if not given:
        raise InputError(f"`{name}` must list class names (separated by commas on the command line); got none.")
    if len(set(given)) != len(given):
        raise InputError(f"`{name}` names a class twice: {','.join(given)}.")
    if recorded is not None:
        recorded.check_classes(given, f"`{name}`")
    return given


def runs_pipelines(
    paths: Sequence[str | os.PathLike[str]], *, name: str = "--model", models_name: str = "--models",
) -> tuple[list[tuple[str, Any]], InputSpec | None]:
    """Each model path with the pipeline it records, and the input (grey or RGB, size) they declare alike.

    The first is what :func:`fitaudit.data.pipeline_rule.choose_pipeline`
    reads as ``recorded``; the second gives its ``channels`` and ``input_size``.

    Raises
    ------
    InputError
        Runs declaring different channel counts (naming ``models_name``).
    """
    metadata = [(str(path), read_model_metadata(path, name=name)) for path in paths]
    specs = [(path, model_input_spec(path, meta)) for path, meta in metadata]
    declared = [(path, spec) for path, spec in specs if spec.channels is not None]
    if len({spec.channels for _, spec in declared}) > 1:
        listing = ", ".join(f"{path} ({spec.channels})" for path, spec in declared)
        raise InputError(f"`{models_name}`: the runs take images of different channel counts: {listing}.")
    return [(path, meta.pipeline) for path, meta in metadata], declared[0][1] if declared else None


def runs_class_order(
    paths: Sequence[str | os.PathLike[str]], classes: str | Sequence[str] | None = None, *, name: str = "classes",
    models_name: str = "--models",
) -> list[str] | None:
    """:func:`class_order` for several model files that must predict the same classes in the same order.

    The runs that record class names must record the same ones; ``classes``,
    when given, must be those (it is the order when none records any).

    Parameters
    ----------
    paths : sequence of paths
        The model files (N runs of one procedure, a population's models).
    classes : str or sequence of str, optional
    name, models_name : str
        The arguments or options naming ``classes`` and ``paths``, for errors.
    """
    recorded = [(path, read_model_metadata(path, name=models_name).classes) for path in paths]
    named = [(path, names) for path, names in recorded if names]
    for path, names in named[1:]:
        if names != named[0][1]:
            raise InputError(
                f"`{models_name}`: the models record different class names ({','.join(named[0][1])} in "
                f"{str(named[0][0])!r}, {','.join(names)} in {str(path)!r}); they must predict the same classes "
                "in the same order."
            )
    return class_order(named[0][0] if named else None, classes, name=name)
