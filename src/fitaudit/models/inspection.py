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
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.data.io import centre_crop, read_margin, read_npz, validate_dataset
from fitaudit.models.io import load_model, runs_code
from fitaudit.models.sklearn_adapter import SklearnClassifier
from fitaudit.results import Result
from fitaudit.stats.binomial import binomial_interval


@dataclasses.dataclass(repr=False)
class InspectResult(Result):
    """What :func:`inspect_model` found.

    Attributes
    ----------
    model : str
        The path given.
    kind : str
        Adapter kind: ``"torch"``, ``"onnx"`` or ``"sklearn"``.
    n_classes : int
    classes : list or None
        Original labels of a scikit-learn model (column ``j`` is ``classes[j]``).
    input_shape : list or None
        Shape of one example, when the model file says (``None`` = any size).
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
        (:func:`fitaudit.auditing.first.first_questions`, which ``fitaudit
        inspect`` adds): per part ``id``, ``title``, ``status``, ``verdict``
        (the one reading of :mod:`fitaudit.report.verdicts`) and ``numbers``.
    runs_code : bool
        Loading the model ran code the file brings (TorchScript, or an
        architecture file), as ``trust_torchscript``/``trust_code`` allowed
        (:func:`fitaudit.models.io.runs_code`).
    """

    model: str
    kind: str
    n_classes: int
    classes: list[Any] | None = None
    input_shape: list[int | None] | None = None
    n_examples: int | None = None
    accuracy: float | None = None
    margin: int = 0
    accuracy_interval: list[float] | None = None
    first_questions: list[dict[str, Any]] | None = None
    runs_code: bool = False


def inspect_model(
    model: str | os.PathLike[str],
    data: str | os.PathLike[str] | None = None,
    *,
    image: bool = False,
    trust_torchscript: bool = False,
    batch_size: int = 256,
    device: str = "cpu",
    model_name: str = "model",
    data_name: str = "data",
    adapter: Any = None,
) -> InspectResult:
    """Load ``model`` safely, describe it and, with ``data``, score it.

    Parameters
    ----------
    model : path
        A model file or folder (:func:`fitaudit.models.load_model`).
    data : path, optional
        An ``.npz`` dataset with arrays ``x`` and ``y`` (and ``margin`` for
        canvases, whose centre crops are scored).
    image : bool
        Require channels-first images in [0, 1].
    trust_torchscript, batch_size, device
        Passed to :func:`~fitaudit.models.load_model`.
    model_name, data_name : str
        How error messages name the two (``--model``, ``--data`` on the CLI).
    adapter : Classifier, optional
        ``model`` already loaded (it is not loaded again).
    """
    if adapter is None:
        adapter = load_model(
            model, trust_torchscript=trust_torchscript, batch_size=batch_size, device=device, name=model_name
        )
    result = InspectResult(
        model=str(model),
        kind=adapter.kind,
        n_classes=adapter.n_classes,
        classes=adapter.classes.tolist() if isinstance(adapter, SklearnClassifier) else None,
        input_shape=None if adapter.input_shape is None else list(adapter.input_shape),
        runs_code=runs_code(model),
    )
    if data is None:
        return result
    x, y, margin = scored_arrays(adapter, data, image=image, name=data_name)
    result.n_examples = int(len(y))
    correct = int(np.sum(adapter.predict(x) == y))
    result.accuracy = correct / len(y)
    interval = binomial_interval(correct, len(y))
    result.accuracy_interval = [interval.low, interval.high]
    result.margin = margin
    return result


def scored_arrays(
    adapter: Any, data: str | os.PathLike[str], *, image: bool = False, name: str = "data"
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(x, y, margin)`` of an ``.npz`` dataset as ``adapter`` scores it.

    Canvases saved with a spare ``margin`` are cut to their centre crops;
    a scikit-learn model's original labels are encoded as its class indices;
    ``x`` and ``y`` are validated against the model's classes (and as
    channels-first images in [0, 1] with ``image`` or canvases).
    """
    x, y = read_npz(data, name=name)
    margin = read_margin(data, name=name)
    if margin:
        if x.ndim != 4 or min(x.shape[2:]) <= 2 * margin:
            raise InputError(
                f"`{name}`: array 'margin' = {margin} says x holds canvases (m, C, H + 2 margin, W + 2 margin); "
                f"got x of shape {x.shape}."
            )
        x, image = np.ascontiguousarray(centre_crop(x, margin)), True
    if isinstance(adapter, SklearnClassifier) and not adapter.labels_are_indices:
        y = adapter.encode_labels(y, name=f"{name}['y']")
    x, y = validate_dataset(x, y, n_classes=adapter.n_classes, image=image, name_x=f"{name}['x']", name_y=f"{name}['y']")
    return x, y, margin
