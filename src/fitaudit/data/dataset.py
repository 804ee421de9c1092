"""One data set as every command and the audit read it: inputs, labels as the model's output indices, source.

:func:`load_data` reads a ``.npz`` (with an optional canvas ``margin``), a
CSV or parquet table with its label column, a DataFrame or ``(x, y)``, and
encodes the labels by the model's convention (:mod:`fitaudit.models.labels`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError


@dataclasses.dataclass
class Dataset:
    """Inputs of one data set (an array, or a table as a pandas DataFrame), its labels as the model's output
    indices, where they came from, and the canvas margin if it has one."""

    x: Any
    y: np.ndarray
    source: str
    margin: int | None = None

    def describe(self) -> dict[str, Any]:
        described = {"source": self.source, "n": int(len(self.y)), "shape": list(self.x.shape[1:]),
                     "margin": self.margin}
        if self.is_table:
            described["columns"] = [str(c) for c in self.x.columns]
        return described

    @property
    def is_table(self) -> bool:
        """Whether the inputs are a table (columns that may hold text and missing values)."""
        from fitaudit.data.tables import is_frame

        return is_frame(self.x)

    def key(self) -> tuple[Any, ...]:
        """What identifies the data in checkpoint keys (a table's columns, types and row hashes)."""
        from fitaudit.data.tables import frame_key

        return (frame_key(self.x) if self.is_table else self.x, self.y)


def load_data(data: Any, name: str, *, labels: Any = None, label: str | None = None,
              features: Sequence[str] | None = None, label_option: str = "label",
              features_option: str = "features") -> Dataset:
    """``data`` as a :class:`Dataset`, its labels encoded as the model's output indices.

    Parameters
    ----------
    data : path, table or tuple
        A ``.npz`` path (arrays ``x``, ``y``, optional ``margin``); a CSV or
        parquet path or a table (pandas DataFrame, anything with
        ``__dataframe__``) with its ``label`` column; or ``(x, y)`` with ``x``
        an array or a table.
    name : str
        How messages name ``data``.
    labels : LabelSet, optional
        The model's label convention (:func:`fitaudit.models.labels.label_set`);
        without it the labels must be indices ``0 .. k-1``.
    label, features : optional
        A table's label column and feature columns (:func:`fitaudit.data.tables.split_label`).
    label_option, features_option : str
        How messages name ``label`` and ``features`` (``--label`` on the command line).
    """
    from fitaudit._validation import check_labels
    from fitaudit.data.io import read_margin, read_npz, validate_dataset
    from fitaudit.data.tables import (
        as_frame,
        is_frame,
        is_table_file,
        read_table,
        select_features,
        split_label,
    )

    if isinstance(data, Dataset):
        return data
    table_options = {"name": name, "label_option": label_option, "features_option": features_option}
    if is_table_file(data) or is_frame(data):
        frame = read_table(data, name=name) if is_table_file(data) else as_frame(data, name)
        x, y = split_label(frame, label, features, **table_options)
        source = os.fspath(data) if is_table_file(data) else type(data).__name__
    elif (label is not None or features is not None) and not (isinstance(data, tuple) and is_frame(data[0])):
        option = label_option if label is not None else features_option
        raise InputError(f"`{option}` goes with a table (a .csv or .parquet file, or a DataFrame) as `{name}`.")
    elif isinstance(data, (str, os.PathLike)):
        x, y = read_npz(data, name=name)
        margin = read_margin(data, name=name)  # one integer >= 0: 6.7, "6" or an object array are refused
        y = labels.encode(y, f"{name}['y']") if labels is not None else y
        x, y = validate_dataset(x, y, name_x=f"{name}['x']", name_y=f"{name}['y']")
        return Dataset(x, y, os.fspath(data), margin or None)
    elif isinstance(data, tuple) and len(data) == 2:
        if is_frame(data[0]):
            x = select_features(as_frame(data[0], f"{name}[0]"), features, name=f"{name}[0]",
                                option=features_option)
            y, source = np.asarray(data[1]), "table"
            if len(y) != len(x):
                raise InputError(f"`{name}[0]` has {len(x)} rows but `{name}[1]` has {len(y)} labels.")
        else:
            y = labels.encode(data[1], f"{name}[1]") if labels is not None else data[1]
            x, y = validate_dataset(data[0], y, name_x=f"{name}[0]", name_y=f"{name}[1]")
            return Dataset(x, y, "arrays")
    else:
        raise InputError(f"`{name}` must be a .npz, .csv or .parquet path, a table (DataFrame) or a tuple (x, y); "
                         f"got {type(data).__name__}.")
    which = f"{name}[1]" if isinstance(data, tuple) else f"{name}[{label!r}]"
    y = labels.encode(y, which) if labels is not None else check_labels(y, which)
    return Dataset(x, y, source)
