"""The inputs of an ONNX graph that takes a table one column per input, each input named as its column.

skl2onnx and onnxmltools export a pipeline on a table (a ``ColumnTransformer``)
with one input per column, ``initial_types=[("age", FloatTensorType([None, 1])),
("sex", StringTensorType([None, 1])), ...]``. Such a graph records its
columns' names: a table's columns are matched to its inputs by name, whatever
their order in the file (missing and extra columns are refused, each named),
and each input is fed with the element type it declares (float, int or text),
the column checked against it first. An array reaches the inputs by position
(said once): there are no names to match.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional

#: numpy dtype of each ONNX element type a column input can take (object: text)
_COLUMN_DTYPES: dict[str, Any] = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(string)": object,
}


class ColumnInputs:
    """The graph's inputs, one table column each (module docstring).

    Parameters
    ----------
    inputs : list of onnxruntime.NodeArg
        The session's inputs: each of shape ``(n,)`` or ``(n, 1)`` and an
        element type of :data:`_COLUMN_DTYPES`; another is an :class:`InputError`.
    """

    def __init__(self, inputs: list[Any]) -> None:
        for given in inputs:
            width = given.shape[1] if given.shape and len(given.shape) == 2 else None
            if given.type not in _COLUMN_DTYPES or not given.shape or len(given.shape) > 2 or (
                    isinstance(width, int) and width != 1):
                raise InputError(
                    f"`model`: the ONNX graph has {len(inputs)} inputs, and fitaudit feeds each one table column "
                    f"named as the input, but input {given.name!r} is {given.type} of shape {given.shape}; expected "
                    "one float, int or string value per row (shape [None, 1]).")
        #: the input (and column) names, in the graph's order
        self.names = [given.name for given in inputs]
        self._types = {given.name: given.type for given in inputs}
        self._ranks = {given.name: len(given.shape) for given in inputs}

    def table(self, x: Any, kind: str) -> Any:
        """``x`` as a table with the inputs' columns, in their order and types: a table's columns matched by
        name, an array's taken by position (said once on stderr)."""
        from fitaudit.data.tables import as_frame, by_name, is_frame

        if is_frame(x):
            frame = by_name(as_frame(x, "x"), self.names, what=f"this {kind} model (one input per column)")
        else:
            array = np.asarray(x)
            if array.ndim != 2 or array.shape[1] != len(self.names):
                raise InputError(f"`x` must be a table with the columns {', '.join(map(repr, self.names))} for this "
                                 f"{kind} model (one input per column); got an array of shape {array.shape}.")
            if not getattr(self, "_said_by_position", False):
                self._said_by_position = True
                print(f"fitaudit: note: the data are an array without column names: its {len(self.names)} columns "
                      f"go to the {kind} model's inputs by position ({', '.join(self.names)}).", file=sys.stderr)
            pandas = import_optional("pandas", "feeding a model one column per input")
            frame = pandas.DataFrame({name: array[:, j] for j, name in enumerate(self.names)}).infer_objects()
        return frame.assign(**{name: self._column(frame[name], name, kind) for name in self.names})

    def _column(self, column: Any, name: str, kind: str) -> np.ndarray:
        """One column as its input's dtype, or an :class:`InputError` naming the column."""
        from fitaudit.data.table_cells import cell_error, text_columns, unreadable_cell
        from fitaudit.data.tables import thousands_error

        declared, dtype = self._types[name], _COLUMN_DTYPES[self._types[name]]
        said = f"`x`: column {name!r}"
        frame = column.to_frame()
        missing = bool(column.isna().any())
        is_text = bool(text_columns(frame))
        if dtype is object:
            if missing:
                raise InputError(f"{said} has missing values, and the {kind} model's input {name!r} takes text "
                                 f"({declared}), which has no missing value: fill them first.")
            if not is_text and column.dtype.kind == "f":
                raise InputError(f"{said} holds decimal numbers, and the {kind} model's input {name!r} takes text "
                                 f"({declared}): give the column as the text (or whole numbers) it was trained on.")
            return column.astype(str).to_numpy(dtype=object)
        if is_text:
            separated = thousands_error(frame, "x", f"the {kind} model's input {name!r} ({declared})")
            if separated:
                raise separated
            stray = unreadable_cell(frame)
            if stray is not None:
                raise cell_error(stray, "x", f"the {kind} model's input {name!r} ({declared})")
            raise InputError(f"{said} holds text, and the {kind} model's input {name!r} takes numbers ({declared}).")
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
        if np.dtype(dtype).kind == "i":
            if missing or not np.array_equal(values, np.round(values)):
                what = "missing values" if missing else "numbers with a decimal part"
                raise InputError(f"{said} holds {what}, and the {kind} model's input {name!r} takes whole numbers "
                                 f"({declared}).")
        return values.astype(dtype)

    def feed(self, batch: Any) -> dict[str, np.ndarray]:
        """The inputs of one batch of :meth:`table`'s rows, each shaped as its input declares."""
        fed = {}
        for name in self.names:
            values = np.asarray(batch[name].to_numpy(), dtype=_COLUMN_DTYPES[self._types[name]])
            fed[name] = values if self._ranks[name] == 1 else values.reshape(-1, 1)
        return fed
