"""The classifier protocol every instrument uses.

:class:`ClassifierProtocol` is what an instrument needs of a model: its
number of classes ``n_classes`` and three methods on numpy arrays,
``logits`` (scores, shape ``(n, k)``), ``predict_proba`` (their softmax) and
``predict`` (class indices). Any object that has them is a classifier
(:func:`fitaudit.models.as_classifier` passes it through unchanged), e.g.
the overfitting test's :class:`fitaudit.overfit.LinearModel`.

:class:`Classifier` is the base of the adapters that give a native model
(torch module, ONNX session, scikit-learn estimator, plain callable) that
protocol, batched: :meth:`Classifier.logits` (float64), :meth:`Classifier.predict_proba`
and :meth:`Classifier.predict` (int64). Subclasses implement only
:meth:`Classifier._logits_batch`.
"""

from __future__ import annotations

import re
import sys
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from fitaudit._errors import FitauditError, InputError
from fitaudit._validation import check_int
from fitaudit.models.layout import to_layout

#: how to export a model whose outputs are not one score per class
SCORES_HINT = ("export the scores before any argmax or threshold; a binary model with one logit z can "
               "output [-z, z] (or [1 - p, p] for a probability p).")


def softmax(scores: np.ndarray) -> np.ndarray:
    """Row-wise softmax, stable for large scores and for ``-inf`` entries."""
    shifted = scores - np.max(scores, axis=1, keepdims=True)
    weights = np.exp(shifted)
    return weights / np.sum(weights, axis=1, keepdims=True)


#: the float64 input of one call of a table model whose batch size is not named (``batch_size=None``): a table
#: model needs no image-sized batches, and scoring 256 rows a call cost a 100,000-row table 6 s a pass
TABLE_CALL_BYTES = 256 * 2**20


#: a terminal's colour and cursor sequences (libraries colour their messages: torch's ONNX exporter does)
_TERMINAL_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


#: the characters of a library's message quoted in an error (one quoting a 20 MB cell is cut)
_QUOTED = 300


def describe_exception(exc: BaseException) -> str:
    """``"TypeName: first line of the message"``, for one-line error reports (terminal sequences removed; a line
    longer than :data:`_QUOTED` characters cut, its length said)."""
    lines = _TERMINAL_SEQUENCE.sub("", str(exc)).strip().splitlines()
    if not lines:
        return type(exc).__name__
    line = lines[0] if len(lines[0]) <= _QUOTED else f"{lines[0][:_QUOTED]}... ({len(lines[0]):,} characters)"
    return f"{type(exc).__name__}: {line}"


def shape_fits(shape: tuple[int, ...], expected: tuple[int | None, ...]) -> bool:
    return len(shape) == len(expected) and all(e is None or e == d for d, e in zip(shape, expected))


def _rows(x: Any, start: int, stop: int) -> Any:
    """Rows ``start:stop`` of an array or a table."""
    return x.iloc[start:stop] if hasattr(x, "iloc") else x[start:stop]


def _model_error(exc: Exception, kind: str, batch: Any, *, takes_missing: bool = False, source: Any = None,
                 first_row: int = 0) -> FitauditError:
    """The error to raise when a native model failed on (or scored NaN) ``batch``: one line, with the
    "impute first" hint when the batch holds missing values and the model does not take them
    (``takes_missing``), naming text columns of numbers with thousands separators ("1,234"), and the
    cell of a table it could not read as a number: a cell of ``batch``, or of ``source``, the table the
    batch was made from (its rows from ``first_row``; an estimator fitted on arrays gets them as an array)."""
    from fitaudit.data.table_cells import failed_cell_error
    from fitaudit.data.tables import IMPUTE_HINT, as_frame, has_missing, is_frame, thousands_error

    separated = thousands_error(batch, "x", f"the {kind} model")
    if separated:
        return separated
    table = batch if is_frame(batch) else None
    if table is None and source is not None and is_frame(source):
        table = as_frame(source, "x").iloc[first_row:first_row + len(batch)]
    if table is not None and not isinstance(exc, FitauditError):
        cell = failed_cell_error(exc, table, "x", f"the {kind} model", row_offset=first_row,
                                 cause=describe_exception(exc))
        if cell is not None:
            return cell
    missing = has_missing(batch) and not takes_missing
    if isinstance(exc, FitauditError) and not (missing and isinstance(exc, InputError)):
        return exc
    what = str(exc) if isinstance(exc, FitauditError) else (
        f"`x`: the {kind} model failed on a batch of shape {batch.shape} ({describe_exception(exc)})."
    )
    return InputError(f"{what.rstrip('.')}; {IMPUTE_HINT}.") if missing else InputError(what)


#: the methods of the classifier protocol
PROTOCOL_CALLABLES = ("logits", "predict_proba", "predict")


@runtime_checkable
class ClassifierProtocol(Protocol):
    """What every instrument needs of a classifier with k classes.

    Attributes
    ----------
    n_classes : int
        k, the width of :meth:`logits`.
    """

    @property
    def n_classes(self) -> int: ...

    def logits(self, x: Any) -> np.ndarray:
        """Class scores of every row of ``x``, shape ``(n, k)``."""
        ...

    def predict_proba(self, x: Any) -> np.ndarray:
        """Class probabilities, shape ``(n, k)``, rows summing to 1."""
        ...

    def predict(self, x: Any) -> np.ndarray:
        """Class indices in ``0 .. k-1``, shape ``(n,)``."""
        ...


def implements_protocol(obj: Any) -> bool:
    """Whether ``obj`` has ``n_classes`` and the methods of :class:`ClassifierProtocol`.

    Unlike ``isinstance(obj, ClassifierProtocol)`` this never evaluates
    ``n_classes`` (an adapter may not know it before its first call).
    """
    if isinstance(obj, type):
        return False
    has_classes = hasattr(type(obj), "n_classes") or "n_classes" in getattr(obj, "__dict__", {})
    return has_classes and all(callable(getattr(obj, name, None)) for name in PROTOCOL_CALLABLES)


def is_classifier_adapter(obj: Any) -> bool:
    """Whether ``obj`` already is a classifier: an adapter or any :class:`ClassifierProtocol` object."""
    return isinstance(obj, Classifier) or implements_protocol(obj)


class Classifier(ABC):
    """Common base of the model adapters.

    Parameters
    ----------
    n_classes : int or None
        Number of classes k. ``None`` reads it from the width of the first
        output the model produces; accessing :attr:`n_classes` before that
        raises :class:`~fitaudit.InputError`.
    batch_size : int or None
        Examples per call of the native model. ``None`` (table models):
        as many rows as fit in :data:`TABLE_CALL_BYTES` of float64 input
        (:meth:`rows_per_call`); every row is scored on its own, so the
        scores do not depend on the split.

    Attributes
    ----------
    model : object
        The wrapped native model.
    kind : str
        ``"torch"``, ``"onnx"``, ``"sklearn"`` or ``"callable"``.
    """

    kind: ClassVar[str] = "classifier"

    #: whether the native model takes missing values (NaN) itself: no "impute first" hint when it fails
    takes_missing: ClassVar[bool] = False

    #: the feature names the model records: a table's columns are matched by them (None: taken by position)
    feature_names: list[str] | None = None

    #: dtype the native model expects (``None`` keeps the caller's dtype)
    input_dtype: np.dtype[Any] | None = None

    #: shape of one example (``None`` entries are free); ``None`` if unknown
    input_shape: tuple[int | None, ...] | None = None

    #: how the model takes images: ``"channels_last"`` or ``"flat"`` (channels-first
    #: image batches are put in that layout, :func:`fitaudit.models.layout.to_layout`);
    #: ``None``: as given
    image_layout: str | None = None

    #: the file format the model came from, as messages name it (``"Keras"``); ``None``: its :attr:`kind`
    format_name: str | None = None

    @property
    def described(self) -> str:
        """What messages call the model: its file format where it has one (a Keras model runs as torch)."""
        return self.format_name or self.kind

    def __init__(self, model: Any, *, n_classes: int | None = None, batch_size: int | None = 256) -> None:
        self.model = model
        self.batch_size: int | None = None if batch_size is None else check_int(batch_size, "batch_size", minimum=1)
        self._n_classes = None if n_classes is None else check_int(n_classes, "n_classes", minimum=2)

    @property
    def n_classes(self) -> int:
        """Number of classes k (width of :meth:`logits`)."""
        if self._n_classes is None:
            raise InputError(
                f"`n_classes` of this {self.kind} model is not known yet; pass `n_classes=` "
                "when wrapping it, or call `logits` once."
            )
        return self._n_classes

    def rows_per_call(self, x: Any) -> int:
        """Rows of ``x`` per call of the native model: :attr:`batch_size`, or where it is ``None`` as many as
        fit in :data:`TABLE_CALL_BYTES` at 8 bytes a value (one call for a 100,000 x 30 table)."""
        if self.batch_size is not None:
            return self.batch_size
        width = int(np.prod(np.shape(x)[1:], dtype=np.int64))
        return max(1, TABLE_CALL_BYTES // (8 * max(width, 1)))

    @abstractmethod
    def _logits_batch(self, x: np.ndarray) -> Any:
        """Scores of one batch, shape ``(len(x), k)`` (array-like)."""

    def _columns(self, frame: Any) -> Any:
        """A table's columns matched by the model's :attr:`feature_names`; without them, taken by position (said
        once, on stderr)."""
        from fitaudit.data.tables import by_name

        if self.feature_names:
            return by_name(frame, self.feature_names, what=f"this {self.kind} model")
        if not getattr(self, "_said_by_position", False):
            self._said_by_position = True
            print(f"fitaudit: note: the {self.kind} model records no feature names: the table's {frame.shape[1]} "
                  "columns are taken by position, in the table's order.", file=sys.stderr)
        return frame

    def _as_input(self, x: Any) -> Any:
        from fitaudit.data.tables import as_frame, is_frame, numeric_matrix

        if is_frame(x):  # a table: its numbers (text columns are refused, missing values kept as NaN)
            x = numeric_matrix(self._columns(as_frame(x, "x")), "x", f"this {self.kind} model")
        try:
            array = np.asarray(x)
        except Exception as exc:  # ragged lists and the like
            raise InputError(f"`x` must be array-like; could not convert it ({exc}).") from exc
        if not (np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.bool_)):
            raise InputError(f"`x` must hold numbers; got dtype {array.dtype}.")
        if array.ndim < 1:
            raise InputError(f"`x` must have one row per example; got a scalar of shape {array.shape}.")
        if self.image_layout is not None and not (
            self.input_shape is not None and shape_fits(array.shape[1:], self.input_shape)
        ):  # channels-first images for a channels-last or flat model (an input already in its layout stays)
            array = to_layout(array, self.image_layout)
        if self.input_shape is not None and not shape_fits(array.shape[1:], self.input_shape):
            want = ", ".join("?" if d is None else str(d) for d in self.input_shape)
            raise InputError(
                f"`x` must have shape (n, {want}) for this {self.kind} model; got shape {array.shape}."
            )
        if self.input_dtype is not None:
            array = np.ascontiguousarray(array, dtype=self.input_dtype)
        return array

    def _check_scores(self, scores: Any, batch: np.ndarray) -> np.ndarray:
        raw = np.asarray(scores)
        if raw.dtype == np.bool_:
            raise InputError(f"the {self.kind} model returns booleans (decisions); fitaudit needs class scores "
                             f"(logits or probabilities), one column per class: {SCORES_HINT}")
        scores = np.asarray(raw, dtype=np.float64)
        if scores.ndim != 2 or scores.shape[0] != batch.shape[0]:
            raise InputError(
                f"the {self.kind} model must return scores of shape (n, n_classes); for a batch "
                f"of shape {batch.shape} it returned shape {scores.shape}: {SCORES_HINT}"
            )
        if scores.shape[1] < 2:
            raise InputError(f"the {self.kind} model returns {scores.shape[1]} score per example; fitaudit needs one "
                             f"per class (at least 2): {SCORES_HINT}")
        if self._n_classes is None:
            self._n_classes = check_int(scores.shape[1], "n_classes", minimum=2)
        elif scores.shape[1] != self._n_classes:
            raise InputError(
                f"the {self.kind} model returned {scores.shape[1]} scores per example but "
                f"`n_classes` is {self._n_classes}."
            )
        if np.isnan(scores).any() or np.isposinf(scores).any():
            bad = int(np.count_nonzero(np.isnan(scores).any(axis=1) | np.isposinf(scores).any(axis=1)))
            raise InputError(f"the {self.kind} model returned NaN or +inf scores for {bad} example(s).")
        return scores

    def logits(self, x: Any) -> np.ndarray:
        """Class scores (logits) of every example, batched.

        Parameters
        ----------
        x : array-like, shape (n, ...)
            Inputs, one row per example.

        Returns
        -------
        ndarray of float64, shape (n, k)
        """
        array = self._as_input(x)
        if array.shape[0] == 0:
            return np.empty((0, self.n_classes), dtype=np.float64)
        chunks = []
        step = self.rows_per_call(array)
        for start in range(0, array.shape[0], step):
            batch = _rows(array, start, start + step)
            try:
                raw = self._logits_batch(batch)
                chunks.append(self._check_scores(raw, batch))
            except Exception as exc:  # the native model rejected the input, or scored it NaN
                raise _model_error(exc, self.described, batch, takes_missing=self.takes_missing, source=x,
                                   first_row=start) from exc
        return np.concatenate(chunks, axis=0)

    def predict_proba(self, x: Any) -> np.ndarray:
        """Class probabilities, the softmax of :meth:`logits`; shape ``(n, k)``."""
        return softmax(self.logits(x))

    def predict(self, x: Any) -> np.ndarray:
        """Predicted class indices (argmax of :meth:`logits`), int64, shape ``(n,)``."""
        return np.argmax(self.logits(x), axis=1).astype(np.int64)

    def fingerprint(self) -> str:
        """A hash of what the scores depend on (kind, classes, the native model's weights or code).

        Used by :func:`fitaudit.checkpoint.fingerprint`, so checkpoints made
        with another model are never reused.
        """
        from fitaudit.checkpoint import fingerprint

        return fingerprint(self.kind, self._n_classes, self._fingerprint_source())

    def _fingerprint_source(self) -> Any:
        """What identifies the native model (override when it cannot be hashed as it is)."""
        return self.model

    def __repr__(self) -> str:
        k = "?" if self._n_classes is None else self._n_classes
        return f"{type(self).__name__}(n_classes={k}, batch_size={self.batch_size})"
