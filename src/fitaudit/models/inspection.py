"""What a model file holds, and how accurate it is on a dataset (``fitaudit inspect``).

:func:`inspect_model` loads a model safely (:func:`fitaudit.models.load_model`:
nothing is unpickled), describes it and, given a dataset, scores it. A
dataset of canvases with a spare margin (``fitaudit shapes dataset
--free-position``, array ``margin`` > 0) is scored on its centre crops,
the images the canvases hold, and :attr:`InspectResult.margin` says so.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.data.io import centre_crop, read_margin, read_npz, validate_dataset
from fitaudit.models.formats import find_format
from fitaudit.models.io import load_model, runs_code
from fitaudit.models.labels import LabelSet, label_set, stop_at_chance
from fitaudit.results import Result
from fitaudit.stats.binomial import binomial_interval
from fitaudit.verdict import Verdict


@dataclasses.dataclass(repr=False)
class InspectResult(Result):
    """What :func:`inspect_model` found.

    Attributes
    ----------
    model : str
        The path given.
    kind : str
        The model's format: ``"onnx"``, ``"sklearn"``, ``"xgboost"``, ``"lightgbm"``, ``"keras"`` (a
        ``.keras`` file), ``"hf"`` (a Hugging Face folder) or ``"torch"`` (both run as torch modules too);
        a file's is its format's :attr:`~fitaudit.models.formats.base.ModelFormat.kind`.
    n_classes : int
    classes : list or None
        The labels the model was trained on (a scikit-learn model's
        ``classes_``), else the class names its file records; column ``j``
        is ``classes[j]`` (:mod:`fitaudit.models.labels`).
    input_shape : list or None
        Shape of one example, when the model file says (``None`` = any size).
    feature_names : list of str or None
        The table columns the model takes, matched by these names (a
        scikit-learn model's ``feature_names_in_``, the names an XGBoost or
        LightGBM file records, the inputs of an ONNX graph with one input per
        column); ``None``: none recorded.
    n_examples : int or None
        Size of the dataset, when one was given.
    accuracy : float or None
        Fraction of correctly classified examples of the dataset.
    margin : int
        The dataset held canvases with this many spare pixels per side; the
        model was scored on their centre crops (0: scored on ``x`` as it is).
    accuracy_interval : list of float or None
        The exact (Clopper-Pearson) 95% interval of the accuracy
        (:func:`fitaudit.stats.binomial_interval`).
    first_questions : list of dict or None
        The first questions of an audit on the same data
        (:func:`fitaudit.auditing.checks.first_questions`, which ``fitaudit
        inspect`` adds): per part ``id``, ``title``, ``verdict`` (``status``,
        ``reason``, ``numbers``, ``sentence``: the part's verdict) and ``numbers``.
    runs_code : bool
        Loading the model ran code the file brings (TorchScript, or an
        architecture file), as ``trust_torchscript``/``trust_code`` allowed
        (:func:`fitaudit.models.io.runs_code`).
    pipeline : dict or None
        Which pipeline (or normalisation of image arrays) scored the data,
        the one the model records and the accuracy under each
        (:meth:`fitaudit.data.pipeline_rule.PipelineChoice.to_dict`).
    """

    model: str
    kind: str
    n_classes: int
    classes: list[Any] | None = None
    input_shape: list[int | None] | None = None
    feature_names: list[str] | None = None
    n_examples: int | None = None
    accuracy: float | None = None
    margin: int = 0
    accuracy_interval: list[float] | None = None
    first_questions: list[dict[str, Any]] | None = None
    runs_code: bool = False
    pipeline: dict[str, Any] | None = None

    def verdict(self, **_: Any) -> Verdict:
        """The first questions' worst status, when they were asked; else a description (``info``).

        ``fail`` when any first question failed, then ``inconclusive``, then
        ``pass`` when one passed; the counts are in the numbers.
        """
        statuses = [q["verdict"]["status"] for q in self.first_questions or []]
        numbers = {status: statuses.count(status) for status in ("fail", "inconclusive", "pass", "info", "skipped")}
        for status, reason in (("fail", "first_question_failed"), ("inconclusive", "first_question_inconclusive"),
                               ("pass", "first_questions_passed")):
            if status in statuses:
                return Verdict(status, reason, numbers)
        return Verdict("info", "model_described", {"accuracy": self.accuracy, "n_examples": self.n_examples})


def _format(model: Any, kind: str) -> str:
    """The adapter's ``kind``; for a torch module loaded from a file, the file's format as the registry names it
    (:attr:`fitaudit.models.formats.base.ModelFormat.kind`: a Keras file and a Hugging Face folder are named,
    though torch runs them)."""
    found = find_format(Path(model)) if kind == "torch" and isinstance(model, (str, os.PathLike)) else None
    return kind if found is None else found.kind


def inspect_model(
    model: str | os.PathLike[str],
    data: Any = None,
    *,
    image: bool = False,
    trust_torchscript: bool = False,
    trust_code: bool = False,
    batch_size: int | None = None,
    device: str = "cpu",
    model_name: str = "model",
    data_name: str = "data",
    adapter: Any = None,
    label: str | None = None,
    features: Any = None,
    pipeline: Any = None,
) -> InspectResult:
    """Load ``model`` safely, describe it and, with ``data``, score it.

    Parameters
    ----------
    model : path
        A model file or folder (:func:`fitaudit.models.load_model`).
    data : path or table, optional
        An ``.npz`` dataset with arrays ``x`` and ``y`` (and ``margin`` for
        canvases, whose centre crops are scored), or a table (CSV or parquet
        file, DataFrame) with its ``label`` column. Labels follow
        :mod:`fitaudit.models.labels`.
    image : bool
        Require channels-first images in [0, 1].
    trust_torchscript, trust_code, batch_size, device
        Passed to :func:`~fitaudit.models.load_model`.
    model_name, data_name : str
        How error messages name the two (``--model``, ``--data`` on the CLI).
    adapter : Classifier, optional
        ``model`` already loaded (it is not loaded again).
    label, features : optional
        A table's label column and feature columns.
    pipeline : EvalPipeline or dict, optional
        The ``mean`` and ``std`` of ``.npz`` image arrays (pixel values in
        [0, 1]) over those the model file records (the one pipeline rule,
        :mod:`fitaudit.data.pipeline_rule`; ``{"mean": [0], "std": [1]}`` for
        arrays already normalised); :attr:`InspectResult.pipeline` says
        which was used, with the accuracy under the recorded one when it differs.
    """
    if adapter is None:
        adapter = load_model(
            model, trust_torchscript=trust_torchscript, trust_code=trust_code, batch_size=batch_size, device=device,
            name=model_name,
        )
    result = InspectResult(
        model=str(model),
        kind=_format(model, adapter.kind),
        n_classes=adapter.n_classes,
        classes=_classes(adapter, model),
        input_shape=None if adapter.input_shape is None else list(adapter.input_shape),
        feature_names=None if adapter.feature_names is None else list(adapter.feature_names),
        runs_code=runs_code(model),
    )
    if data is None:
        return result
    x, y, margin = scored_arrays(adapter, data, image=image, name=data_name, labels=label_set(adapter, model),
                                 label=label, features=features)
    from fitaudit.data.pipeline_rule import choose_normalisation, given_settings
    from fitaudit.models.io import runs_pipelines

    choice = choose_normalisation(runs_pipelines([model], name=model_name)[0], x, name=data_name,
                                  **given_settings(pipeline, arrays=True))
    predictions = choice.classifier(adapter).predict(x)  # image arrays in [0, 1], normalised as the rule says
    stop_at_chance(y, predictions, adapter.n_classes, name=data_name, labels=label_set(adapter, model),
                   normalisation=None if choice.pipeline is None else choice.normalisation)
    result.n_examples = int(len(y))
    correct = int(np.sum(predictions == y))
    result.accuracy = correct / len(y)
    interval = binomial_interval(correct, len(y))
    result.accuracy_interval = [interval.low, interval.high]
    result.margin = margin
    if choice.pipeline is not None:
        result.pipeline = choice.to_dict(result.accuracy, choice.recorded_accuracy(adapter, x, y))
    return result


def _classes(adapter: Any, model: Any) -> list[Any] | None:
    """The class names (or trained labels) the model has, in output order."""
    names = label_set(adapter, model).names
    return None if names is None else list(names)


def scored_arrays(
    adapter: Any, data: Any, *, image: bool = False, name: str = "data", labels: LabelSet | None = None,
    label: str | None = None, features: Any = None, label_option: str = "label", features_option: str = "features",
) -> tuple[Any, np.ndarray, int]:
    """``(x, y, margin)`` of a dataset as ``adapter`` scores it.

    An ``.npz`` file's canvases saved with a spare ``margin`` are cut to
    their centre crops; a table (CSV, parquet, DataFrame) keeps its columns.
    The labels are encoded as the model's output indices by ``labels``
    (default: :func:`~fitaudit.models.labels.label_set` of ``adapter``);
    ``x`` and ``y`` are validated against the model's classes (and as
    channels-first images in [0, 1] with ``image`` or canvases).
    """
    from fitaudit.data.dataset import load_data
    from fitaudit.data.tables import is_frame, is_table_file

    labels = labels if labels is not None else label_set(adapter)
    if is_table_file(data) or is_frame(data):
        if image:
            raise InputError(f"`{name}` is a table; images come as .npz arrays or image folders.")
        table = load_data(data, name, labels=labels, label=label, features=features, label_option=label_option,
                          features_option=features_option)
        return table.x, table.y, 0
    for option, value in ((label_option, label), (features_option, features)):
        if value is not None:
            raise InputError(f"`{option}` goes with a table (a .csv or .parquet file) as `{name}`.")
    x, y = read_npz(data, name=name)
    margin = read_margin(data, name=name)
    if margin:
        if x.ndim != 4 or min(x.shape[2:]) <= 2 * margin:
            raise InputError(
                f"`{name}`: array 'margin' = {margin} says x holds canvases (m, C, H + 2 margin, W + 2 margin); "
                f"got x of shape {x.shape}."
            )
        x, image = np.ascontiguousarray(centre_crop(x, margin)), True
    y = labels.encode(y, name=f"{name}['y']")
    x, y = validate_dataset(x, y, n_classes=adapter.n_classes, image=image, name_x=f"{name}['x']", name_y=f"{name}['y']")
    return x, y, margin
