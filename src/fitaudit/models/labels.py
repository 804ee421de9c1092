"""One label convention for every command and the API, and the chance check on scored labels.

The convention
--------------
A model's outputs are columns ``0 .. k-1``. What a user's labels must be
depends on what the model knows of its classes (:func:`label_set`):

* **labels it was trained on** (scikit-learn's ``classes_``, the classes an
  XGBoost or LightGBM file or a scikit-learn ONNX export records): the
  labels are those values, numbers or strings (``1, 2, 3`` for a model
  trained on ``1, 2, 3``; ``"cat"``, ``"dog"`` for string classes). Indices
  in the user's own order are refused: they would silently score every
  example against the wrong class;
* **names of its outputs** (``classes`` in a torch ``config.json`` or in ONNX
  metadata): the labels are those names, or the output indices ``0 .. k-1``;
* **nothing**: the labels are the output indices ``0 .. k-1``.

Strings that spell an integer (as a CSV column may hold them) count as that
integer.

The chance check
----------------
Labels that are not in the model's order (or a wrong pipeline, or the wrong
channels) give an accuracy near or below what predictions unrelated to the
labels would score, and every later verdict would then be computed on
garbage. :func:`chance_check` compares the accuracy ``p_o`` with the
agreement expected by chance from the two marginal distributions,
``p_e = sum_c P(label = c) P(prediction = c)`` (Cohen 1960, "A coefficient
of agreement for nominal scales", eq. 1: ``kappa = (p_o - p_e) / (1 - p_e)``);
``p_o <= p_e`` (kappa <= 0) stops the standalone commands
(:func:`stop_at_chance`) and is reported, with the same hint
(:func:`chance_hint`), by the audit's baseline part. A constant predictor
sits exactly at chance and is stopped too. Scored labels of one class (one
example always is) give ``p_e = p_o`` for every model: they are refused as
too few to audit, not blamed on the label order (:func:`refuse_one_class`).

Above chance only where shown: a kappa above 0 may be luck on few examples
(an untrained 12-class network scores 0.067 against a chance of 0.06).
:attr:`ChanceCheck.kappa_low` is the one-sided lower confidence bound
``kappa - z sqrt(Var(kappa))`` at :data:`CHANCE_CONFIDENCE` with the
large-sample variance of Fleiss, Cohen and Everitt (1969, "Large sample
standard errors of kappa and weighted kappa", Psychological Bulletin 72,
eq. 13, unweighted); a verdict resting on the model's predictions is
``inconclusive`` where that bound is not above 0
(:attr:`ChanceCheck.shown_above`). The measured rates (untrained networks
flagged, weak real models at small n):
``benchmarks/validity/results/chance_kappa.txt``.
"""

from __future__ import annotations

import dataclasses
import numbers
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError

#: how many unknown labels or classes an error message lists
_LISTED = 6

#: confidence of the one-sided lower bound on Cohen's kappa that must exceed 0 for "shown above chance"
CHANCE_CONFIDENCE = 0.95


def _key(value: Any) -> str:
    """A label's comparable form: integers (and integral floats, and strings spelling them) as their digits."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real) and float(value).is_integer():
        return str(int(float(value)))
    text = str(value).strip()
    try:
        return str(int(text))
    except ValueError:
        return text


def _listed(values: Sequence[Any]) -> str:
    shown = ", ".join(map(str, list(values)[:_LISTED]))
    return shown + (", ..." if len(values) > _LISTED else "")


@dataclasses.dataclass(frozen=True)
class LabelSet:
    """What a model knows of its classes (the convention of this module's docstring).

    Attributes
    ----------
    n_classes : int or None
        Its number of outputs (None: not known before it runs; indices are
        then checked against it once it is).
    names : list or None
        Class names (or trained labels) in output order.
    trained : bool
        ``names`` are the labels it was trained on (labels must be these);
        otherwise they only name its outputs (indices are accepted too).
    any_labels : bool
        No model reads the labels (e.g. the leakage search without one):
        any values are accepted, encoded in their sorted order.
    """

    n_classes: int | None
    names: list[Any] | None = None
    trained: bool = False
    any_labels: bool = False

    def describe(self) -> str:
        """The convention for this model, for error messages."""
        top = "k-1" if self.n_classes is None else str(self.n_classes - 1)
        if self.names is None:
            return f"the model records no class names, so labels are its output indices 0..{top} in its output order"
        if self.trained:
            return f"labels are the classes the model was trained on: {_listed(self.names)}"
        return f"labels are the model's class names ({_listed(self.names)}) or its output indices 0..{top}"

    def encode(self, y: Any, name: str = "y") -> np.ndarray:
        """The model's output index of every label in ``y`` (int64).

        Raises
        ------
        InputError
            A label that is not one of the model's (naming ``name`` and the convention).
        """
        labels = np.asarray(y)
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.ndim != 1:
            raise InputError(f"`{name}` must be a 1-d array of labels; got shape {labels.shape}.")
        if labels.size == 0:
            raise InputError(f"`{name}` must not be empty.")
        if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
            raise InputError(f"`{name}` holds missing (NaN) labels; every scored example needs its label.")
        if labels.dtype.kind == "O" and any(v is None or (isinstance(v, float) and np.isnan(v)) for v in labels):
            raise InputError(f"`{name}` holds missing labels; every scored example needs its label.")
        uniques, inverse = np.unique(labels.astype(str) if labels.dtype.kind == "O" else labels, return_inverse=True)
        if self.any_labels:
            return inverse.reshape(-1).astype(np.int64)
        keys = [_key(v) for v in uniques]
        table: dict[str, int] = {}
        if self.names is not None:
            table = {_key(v): j for j, v in enumerate(self.names)}
        if not self.trained:  # output indices are labels too (a name that spells an index wins over it)
            indices = [k for k in keys if k.isdigit()] if self.n_classes is None else map(str, range(self.n_classes))
            for j in indices:
                table.setdefault(j, int(j))
        unknown = [str(u) for u, k in zip(uniques, keys) if k not in table]
        if unknown:
            raise InputError(
                f"`{name}` holds labels the model does not have: {_listed(unknown)}; {self.describe()} "
                "(the label convention: docs/bring-your-model.md#labels-one-convention-everywhere)."
            )
        codes = np.array([table[k] for k in keys], dtype=np.int64)
        return codes[inverse.reshape(-1)]


def label_set(adapter: Any, model: Any = None) -> LabelSet:
    """What ``adapter`` (and, for a model file, the file's metadata) says of its classes.

    Parameters
    ----------
    adapter : classifier
        Its ``classes`` attribute (a scikit-learn model's ``classes_``, an
        XGBoost/LightGBM file's or ONNX export's recorded classes) are the
        labels it was trained on.
    model : path, optional
        The model file: the ``classes`` its ``config.json`` or ONNX metadata
        records name its outputs (:func:`fitaudit.models.io.read_model_metadata`).
    """
    try:
        n_classes: int | None = int(adapter.n_classes)
    except InputError:  # not known before the model runs (an ONNX graph of free output width)
        n_classes = None
    trained = getattr(adapter, "classes", None)
    if trained is not None and len(trained) == (n_classes or len(trained)):
        return LabelSet(len(trained), [v.item() if isinstance(v, np.generic) else v for v in np.asarray(trained)], True)
    if isinstance(model, (str, os.PathLike)):
        from fitaudit.models.io import read_model_metadata

        recorded = read_model_metadata(model, name="model").classes
        if recorded is not None and len(recorded) == (n_classes or len(recorded)):
            return LabelSet(len(recorded), list(recorded), False)
    return LabelSet(n_classes)


@dataclasses.dataclass(frozen=True)
class ChanceCheck:
    """The measured accuracy beside the agreement expected by chance (Cohen 1960, eq. 1).

    Attributes
    ----------
    accuracy : float
        ``p_o``, the share of predictions equal to their label.
    chance : float
        ``p_e = sum_c P(label = c) P(prediction = c)``: the accuracy of
        predictions unrelated to the labels with the same class shares.
    n : int
        Scored examples.
    kappa_low : float or None
        Lower confidence bound of Cohen's kappa at :data:`CHANCE_CONFIDENCE`
        (:func:`kappa_lower_bound`); None in a result saved before it existed.
    """

    accuracy: float
    chance: float
    n: int
    kappa_low: float | None = None

    @property
    def at_or_below(self) -> bool:
        """The accuracy is at or below chance (Cohen's kappa <= 0)."""
        return self.accuracy <= self.chance + 1e-12

    @property
    def shown_above(self) -> bool:
        """The lower confidence bound of kappa is above 0 (for a saved check without it: kappa > 0)."""
        if self.kappa_low is None:
            return not self.at_or_below
        return not self.at_or_below and self.kappa_low > 0.0

    @property
    def kappa(self) -> float:
        """Cohen's kappa ``(p_o - p_e) / (1 - p_e)`` (0 when ``p_e`` is 1)."""
        return 0.0 if self.chance >= 1.0 else (self.accuracy - self.chance) / (1.0 - self.chance)


def kappa_lower_bound(table: np.ndarray, confidence: float = CHANCE_CONFIDENCE) -> float:
    """One-sided lower confidence bound of Cohen's kappa from a k x k table of counts (truth x prediction).

    ``kappa - z_confidence sqrt(Var)``, Var the large-sample variance of
    Fleiss, Cohen and Everitt (1969, eq. 13, unit weights):
    ``Var = (sum_i p_ii [1 - (p_i. + p_.i)(1 - kappa)]^2
    + (1 - kappa)^2 sum_{i != j} p_ij (p_.i + p_j.)^2
    - [kappa - p_e (1 - kappa)]^2) / (n (1 - p_e)^2)``.
    """
    from scipy.stats import norm

    counts = np.asarray(table, dtype=float)
    n = counts.sum()
    p = counts / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    p_o, p_e = float(np.trace(p)), float(rows @ cols)
    if p_e >= 1.0:
        return 0.0
    kappa = (p_o - p_e) / (1.0 - p_e)
    diagonal = np.diag(p) * (1.0 - (rows + cols) * (1.0 - kappa)) ** 2
    weights = (cols[:, None] + rows[None, :]) ** 2  # (p_.i + p_j.)^2 for cell (i, j)
    off = p * weights
    np.fill_diagonal(off, 0.0)
    variance = (diagonal.sum() + (1.0 - kappa) ** 2 * off.sum() - (kappa - p_e * (1.0 - kappa)) ** 2)
    variance = max(variance, 0.0) / (n * (1.0 - p_e) ** 2)
    return float(kappa - norm.ppf(confidence) * np.sqrt(variance))


def chance_check(y_true: Any, y_pred: Any, n_classes: int | None = None) -> ChanceCheck:
    """Accuracy, chance agreement and the lower bound of kappa of class indices ``y_pred`` against ``y_true``."""
    truth, predicted = np.asarray(y_true, dtype=np.int64), np.asarray(y_pred, dtype=np.int64)
    if truth.shape != predicted.shape or truth.ndim != 1 or truth.size == 0:
        raise InputError(f"`y_true` and `y_pred` must be 1-d and of one length; got {truth.shape} and {predicted.shape}.")
    k = int(max(truth.max(), predicted.max()) + 1) if n_classes is None else int(n_classes)
    share_true = np.bincount(truth, minlength=k) / truth.size
    share_pred = np.bincount(predicted, minlength=k) / truth.size
    table = np.zeros((k, k))
    np.add.at(table, (truth, predicted), 1.0)
    return ChanceCheck(float(np.mean(truth == predicted)), float(share_true @ share_pred), int(truth.size),
                       kappa_lower_bound(table))


def refuse_one_class(y_true: Any, y_pred: Any, n_classes: int | None = None, *, name: str = "data",
                     labels: LabelSet | None = None) -> ChanceCheck:
    """:func:`chance_check`, raising an :class:`InputError` when the scored labels hold one class.

    With one class ``c`` among the labels, ``p_e = P(prediction = c) = p_o``
    (Cohen 1960, eq. 1), so kappa is 0 for every model; with one example, this
    is always so. The message says what is missing (examples of two classes),
    not that the labels are in the wrong order.
    """
    check = chance_check(y_true, y_pred, n_classes)
    present = np.unique(np.asarray(y_true, dtype=np.int64))
    if present.size > 1:
        return check
    if check.n == 1:
        raise InputError(f"`{name}` holds 1 example: one example cannot be audited (its accuracy, "
                         f"{check.accuracy:.3f}, cannot be told from chance); at least two examples, of at least two "
                         "classes, are needed.")
    index = int(present[0])
    names = labels.names if labels is not None else None
    label = names[index] if names is not None and index < len(names) else index
    raise InputError(f"`{name}`: all {check.n} examples have the label {label!r}: with one class, any accuracy (here "
                     f"{check.accuracy:.3f}) is what predictions unrelated to the labels would score, so these examples "
                     "cannot be audited; examples of at least two classes are needed.")


#: the likely cause of an accuracy at chance when image arrays reached the model without a normalisation
_NO_NORMALISATION = ("No normalisation is known: neither --mean/--std (pipeline=) nor the model file gives a mean and "
                     "std, so the model saw pixel values in [0, 1]; if it was trained on normalised images, that is "
                     "the likely cause (give its --mean and --std). Otherwise the labels")


def chance_hint(labels: LabelSet | None = None, normalisation: str | None = None) -> str:
    """The likely causes of an accuracy at or below chance, in words (the hint :func:`stop_at_chance` gives, and
    the audit's baseline part when it measures such an accuracy).

    Labels not in the model's order (``labels``: the model's convention, named), the wrong pipeline, channels or
    feature order, or a model no better than one class; ``normalisation`` ``"none"`` (image arrays for which nothing
    gave a mean and std: :attr:`fitaudit.data.pipeline_rule.PipelineChoice.normalisation`) is named first.
    """
    convention = f" ({labels.describe()})" if labels is not None else ""
    first = _NO_NORMALISATION if normalisation == "none" else "The labels"
    return (f"{first} are likely not the model's classes in its order{convention}; or the inputs are not prepared "
            "as the model expects (pipeline, channels, feature order); or the model predicts nothing better than "
            "one class.")


def stop_at_chance(y_true: Any, y_pred: Any, n_classes: int | None = None, *, name: str = "data",
                   labels: LabelSet | None = None, normalisation: str | None = None) -> ChanceCheck:
    """:func:`refuse_one_class`, then an :class:`InputError` about labels when the accuracy is at or below chance.

    Every verdict computed from such predictions would rest on garbage; the
    message names the likely causes (:func:`chance_hint`: labels not in the
    model's order, the wrong pipeline or channels) and, with ``labels``, the
    model's convention. ``normalisation`` is where the images' mean and std
    came from (:attr:`fitaudit.data.pipeline_rule.PipelineChoice.normalisation`):
    ``"none"`` (nothing gave one) is named first, as the likely cause. The
    standalone commands stop here (``fitaudit leakage``, ``fitaudit
    inspect``); an audit does not: its baseline part reports the accuracy
    with this hint (:class:`fitaudit.auditing.table_checks.BaselineCheck`).
    """
    check = refuse_one_class(y_true, y_pred, n_classes, name=name, labels=labels)
    if check.at_or_below:
        raise InputError(
            f"`{name}`: the model's accuracy {check.accuracy:.3f} on {check.n} examples is at or below chance "
            f"({check.chance:.3f}, what predictions unrelated to the labels would score), so nothing else was "
            f"checked. {chance_hint(labels, normalisation)}"
        )
    return check
