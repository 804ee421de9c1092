"""Tables as practitioners hold them: CSV and parquet files, pandas DataFrames, other libraries' tables.

A table is read as a pandas DataFrame of features and an array of labels
(one column, ``label``; the features are every other column, or the
``features`` named). Columns keep their types: strings and categories go to
a model that takes them (a scikit-learn pipeline with a ``ColumnTransformer``)
as they are, and missing values (NaN, empty CSV cells) go to a model that
accepts them (``HistGradientBoostingClassifier``, XGBoost, LightGBM); a model
that takes only numbers gets a numeric matrix (:func:`numeric_matrix`), and
one that refuses missing values says "impute first"
(:data:`IMPUTE_HINT`). Infinite values are refused.

pandas reads the files (the ``tables`` extra: pandas, and pyarrow for
parquet and Arrow streams); another library's table (polars, pyarrow,
DuckDB...) is read through its Arrow stream (``__arrow_c_stream__``) or the
dataframe interchange protocol (``__dataframe__``). Nothing in a file is
evaluated or unpickled.
"""

from __future__ import annotations

import csv
import os
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import FitauditError, InputError
from fitaudit._optional import import_optional
from fitaudit.data.limits import check_bound, limits
from fitaudit.data.table_cells import (
    cell_error,
    infinite_cell,
    row_name,
    shown_text,
    text_columns,
    unreadable_cell,
)

#: file suffixes read as tables, and the pandas reader of each
TABLE_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet"}

#: what a model that refuses missing values is told
IMPUTE_HINT = ("the data hold missing values (NaN) and this model does not accept them: impute first "
               "(e.g. a scikit-learn Pipeline starting with SimpleImputer), or use a model that handles them "
               "(HistGradientBoostingClassifier, XGBoost, LightGBM)")

#: columns listed in a message
_LISTED = 8


def _listed(names: Sequence[Any]) -> str:
    shown = ", ".join(repr(str(n)) for n in list(names)[:_LISTED])
    return shown + (", ..." if len(names) > _LISTED else "")


def is_table_file(path: Any) -> bool:
    """Whether ``path`` names a CSV or parquet file (by its suffix)."""
    return isinstance(path, (str, os.PathLike)) and Path(path).suffix.lower() in TABLE_SUFFIXES


#: the protocols another library's table may offer, in the order they are tried
_TABLE_PROTOCOLS = ("__arrow_c_stream__", "__dataframe__")


def is_frame(obj: Any) -> bool:
    """Whether ``obj`` is a pandas DataFrame or another library's table (the Arrow PyCapsule stream, or the
    dataframe interchange protocol: polars, pyarrow, DuckDB results and others)."""
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(obj, pandas.DataFrame):
        return True
    if isinstance(obj, (type, np.ndarray)):
        return False
    return any(callable(getattr(obj, protocol, None)) for protocol in _TABLE_PROTOCOLS)


def as_frame(obj: Any, name: str = "data") -> Any:
    """``obj`` as a pandas DataFrame: a DataFrame unchanged; another table through its Arrow stream
    (``__arrow_c_stream__``, read by pyarrow) or, failing that, ``__dataframe__``."""
    pandas = import_optional("pandas", "reading a table")
    if isinstance(obj, pandas.DataFrame):
        return obj
    try:
        if callable(getattr(obj, "__arrow_c_stream__", None)):
            return import_optional("pyarrow", "reading an Arrow table").table(obj).to_pandas()
        with warnings.catch_warnings():  # pandas 3 deprecates the protocol; it still reads it
            warnings.filterwarnings("ignore", message=".*Interchange Protocol is deprecated")
            return pandas.api.interchange.from_dataframe(obj)
    except FitauditError:
        raise
    except Exception as exc:  # the producer's own error types
        raise InputError(f"`{name}`: could not read {type(obj).__name__} as a table ({exc}).") from exc


def read_table(path: str | os.PathLike[str], *, name: str = "data") -> Any:
    """A CSV (``.csv``, ``.tsv``) or parquet (``.parquet``, ``.pq``) file as a pandas DataFrame.

    Empty CSV cells are missing values (NaN); the first row is the header. A
    ``.csv`` whose header line holds semicolons and no commas is read with
    ``;`` as the separator, and its columns of decimal-comma numbers
    (``"3,5"``) as numbers. Sizes are bounded before the file is decoded
    (:mod:`fitaudit.data.limits`): a CSV's header line and file size, a
    parquet file's columns, rows and decoded bytes (its uncompressed size, and
    at least 8 bytes a value) as its metadata records them.
    """
    target = Path(path)
    if target.is_dir():
        raise InputError(f"`{name}`: {str(target)!r} is a folder; expected a .csv or .parquet file.")
    if not target.is_file():
        raise InputError(f"`{name}`: file {str(target)!r} does not exist.")
    kind = TABLE_SUFFIXES.get(target.suffix.lower())
    if kind is None:
        raise InputError(f"`{name}`: {str(target)!r} is not a table; expected {', '.join(TABLE_SUFFIXES)}.")
    pandas = import_optional("pandas", "reading a CSV or parquet file")
    what = f"`{name}`: {str(target)!r}"
    try:
        if kind == "parquet":
            import_optional("pyarrow", "reading a parquet file")
            _check_parquet_size(target, what)
            frame = pandas.read_parquet(target)
        else:
            separator = _csv_separator(target, "\t" if kind == "tsv" else ",", what)
            frame = pandas.read_csv(target, sep=separator, nrows=limits().table_rows + 1)
            if len(frame) > limits().table_rows:  # the bound named with the rows there are, enough in one go
                check_bound(_csv_rows(target, separator), "table_rows", f"{what} has more rows than allowed")
            if separator == ";":
                frame = _decimal_commas(frame)
    except (ValueError, OSError, UnicodeDecodeError, pandas.errors.ParserError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{what} could not be read as a {kind} table ({exc}).") from exc
    return frame


def _csv_separator(path: Path, separator: str, what: str) -> str:
    """The separator of a CSV, from its header line, read with a byte bound: ``;`` for a semicolon CSV.

    The header's column count and the file's size are bounded here (:mod:`fitaudit.data.limits`), and its
    names refused where one repeats (:func:`refuse_repeated_names`).
    """
    bounds = limits()
    check_bound(path.stat().st_size, "table_bytes", f"{what} is larger than allowed (bytes)")
    most = _HEADER_BYTES_PER_COLUMN * bounds.table_columns
    with open(path, "rb") as handle:
        head = handle.read(most + 1)
    line = head.split(b"\n", 1)[0]
    if len(line) > most:
        raise InputError(f"{what}: its header line is longer than {most:,} bytes (more than the "
                         f"{bounds.table_columns:,} columns fitaudit reads; raise them with "
                         f"`--limit table-columns=N`).")
    header = line.decode("utf-8", errors="replace")
    if separator == "," and ";" in header and "," not in header:
        separator = ";"
    columns = next(csv.reader([header.removeprefix("\ufeff")], delimiter=separator), [])
    check_bound(len(columns), "table_columns", f"{what} has more columns than allowed")
    refuse_repeated_names(columns, f"{what}: its header")
    return separator


def refuse_repeated_names(columns: Sequence[Any], what: str) -> None:
    """Refuse a table whose column names repeat (``what`` names the header or table), naming the first repeated.

    pandas would rename the second ``x`` to ``x.1``, a name the user never
    wrote, and a model's feature check would then report that name; empty
    names (pandas' ``Unnamed: i``, e.g. an index column) are not compared.
    """
    seen: dict[str, int] = {}
    for position, column in enumerate(columns, start=1):
        named = str(column)
        if named in seen and named.strip():
            raise InputError(f"{what} repeats the column name {named!r} (columns {seen[named]} and {position}); "
                             "each column needs its own name.")
        seen.setdefault(named, position)


def _csv_rows(path: Path, separator: str) -> int:
    """The data rows of a CSV, counted as pandas reads them (its first column, a million rows at a time)."""
    pandas = import_optional("pandas", "reading a CSV file")
    chunks = pandas.read_csv(path, sep=separator, usecols=[0], dtype=str, chunksize=1_000_000)
    return sum(len(chunk) for chunk in chunks)


#: the longest header line read, per column allowed (a column name of up to this many bytes on average)
_HEADER_BYTES_PER_COLUMN = 256

#: a number written with a decimal comma (a semicolon CSV's usual style)
_DECIMAL_COMMA = re.compile(r"-?[0-9]+,[0-9]+|-?[0-9]+")


def _decimal_commas(frame: Any) -> Any:
    """A semicolon CSV's text columns of decimal-comma numbers (``3,5``) as numbers."""
    converted = {}
    for column in text_columns(frame):
        values = frame[column]
        text = values.dropna().astype(str).str.strip()
        if len(text) and text.str.fullmatch(_DECIMAL_COMMA).all():
            numbers = values.astype(str).str.strip().str.replace(",", ".", regex=False)
            converted[column] = numbers.where(values.notna()).astype(float)
    return frame.assign(**converted) if converted else frame


def _check_parquet_size(path: Path, what: str) -> None:
    """A parquet file's columns, rows and uncompressed bytes, from its metadata, within the bounds."""
    parquet = import_optional("pyarrow.parquet", "reading a parquet file")
    metadata = parquet.ParquetFile(path).metadata
    check_bound(metadata.num_columns, "table_columns", f"{what} has more columns than allowed")
    refuse_repeated_names(parquet.ParquetFile(path).schema_arrow.names, what)
    check_bound(metadata.num_rows, "table_rows", f"{what} has more rows than allowed")
    unpacked = sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
    decoded = max(unpacked, 8 * metadata.num_rows * metadata.num_columns)  # at least 8 bytes a value in pandas
    check_bound(decoded, "table_bytes", f"{what} is larger than allowed once decoded (bytes)")


def split_label(
    frame: Any,
    label: str | None,
    features: Sequence[str] | None = None,
    *,
    name: str = "data",
    label_option: str = "label",
    features_option: str = "features",
) -> tuple[Any, np.ndarray]:
    """The feature columns and the label column of a table.

    Parameters
    ----------
    frame : DataFrame
    label : str
        The column holding the labels.
    features : list of str, optional
        The feature columns, in the order the model takes them (default:
        every column but ``label``, in the table's order).
    name, label_option, features_option : str
        How messages name the table and the two options (``--data``,
        ``--label``, ``--features`` on the command line).

    Returns
    -------
    x : DataFrame
    y : ndarray
        The labels as the table holds them (numbers or strings).
    """
    columns = [str(c) for c in frame.columns]
    refuse_repeated_names(columns, f"`{name}`")
    if label is None:
        raise InputError(f"`{label_option}` is needed with a table (`{name}`): the name of the column holding the "
                         f"labels; its columns are {_listed(columns)}.")
    if str(label) not in columns:
        raise InputError(f"`{label_option}`: `{name}` has no column {label!r}; its columns are {_listed(columns)}.")
    frame = frame.set_axis(columns, axis=1)
    if features is not None and str(label) in ([features] if isinstance(features, str) else list(features)):
        raise InputError(f"`{features_option}` names the label column {label!r}: a model must not see its label.")
    x = select_features(frame.drop(columns=[str(label)]), features, name=name, option=features_option)
    return x, frame[str(label)].to_numpy()


def select_features(frame: Any, features: Sequence[str] | None, *, name: str = "data",
                    option: str = "features") -> Any:
    """The ``features`` columns of a table, in that order (all of them when None), checked (:func:`check_frame`)."""
    columns = [str(c) for c in frame.columns]
    refuse_repeated_names(columns, f"`{name}`")
    frame = frame.set_axis(columns, axis=1)
    if features is not None:
        chosen = [str(f) for f in ([features] if isinstance(features, str) else features)]
        missing = [f for f in chosen if f not in columns]
        if missing:
            raise InputError(f"`{option}`: `{name}` has no column(s) {_listed(missing)}; its columns are "
                             f"{_listed(columns)}.")
        frame = frame[chosen]
    if frame.shape[1] == 0:
        raise InputError(f"`{name}` has no feature column.")
    return check_frame(frame.reset_index(drop=True), name)


def check_frame(frame: Any, name: str = "data") -> Any:
    """A feature table as it is, refused when empty or holding infinite numbers (missing values are kept)."""
    if frame.shape[0] == 0 or frame.shape[1] == 0:
        raise InputError(f"`{name}` is empty: it has shape {frame.shape}.")
    found = infinite_cell(frame)
    if found is not None:
        column, row, count = found
        raise cell_error((column, row, "inf", "inf"), name, "", cause=f"{count:,} such cells in all" if count > 1 else "")
    return frame


def numeric_matrix(frame: Any, name: str = "x", what: str = "this model") -> np.ndarray:
    """A table of numbers as a float matrix (missing values as NaN); text columns are an :class:`InputError`."""
    separated = thousands_error(frame, name, what)
    if separated:
        raise separated
    stray = unreadable_cell(frame)
    if stray:
        raise cell_error(stray, name, what)
    text = text_columns(frame)
    if text:
        raise InputError(f"`{name}`: column(s) {_listed(text)} hold text or categories, and {what} takes numbers: "
                         "encode them first, or give a scikit-learn pipeline that encodes them (ColumnTransformer).")
    return frame.to_numpy(dtype=np.float64, na_value=np.nan)


#: a number written with thousands separators: "1,234", "-12,345,678.5"
_THOUSANDS = re.compile(r"-?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?")


def by_name(frame: Any, names: Sequence[str], *, name: str = "x", what: str = "the model") -> Any:
    """A table's columns put in the order of the feature ``names`` a model records, matched by name.

    Raises
    ------
    InputError
        Columns missing from the table, or columns the model does not take (each named).
    """
    columns = [str(c) for c in frame.columns]
    wanted = [str(n) for n in names]
    if columns == wanted:
        return frame
    missing = [n for n in wanted if n not in columns]
    extra = [c for c in columns if c not in set(wanted)]
    if missing or extra:
        said = "; ".join(part for part in (f"missing {_listed(missing)}" if missing else "",
                                           f"not taken by it {_listed(extra)}" if extra else "") if part)
        raise InputError(f"`{name}`: its columns are not the {len(wanted)} features {what} records by name: {said} "
                         "(choose the columns with --features).")
    return frame.set_axis(columns, axis=1)[wanted]


def thousands_columns(x: Any) -> list[str]:
    """The text columns of a table whose values are numbers with thousands separators (some "1,234", the rest
    plain numbers or missing); ``[]`` for an array."""
    if not is_frame(x):
        return []
    frame = as_frame(x)
    found = []
    for column in text_columns(frame):
        values = frame[column].dropna().astype(str).str.strip()
        if len(values) and values.str.fullmatch(_THOUSANDS).any() and \
                values.str.fullmatch(f"{_THOUSANDS.pattern}|-?[0-9]+(?:\\.[0-9]+)?").all():
            found.append(str(column))
    return found


def thousands_error(x: Any, name: str = "x", what: str = "this model") -> InputError | None:
    """The error for a table whose text columns are numbers with thousands separators (None when it has none)."""
    separated = thousands_columns(x)
    if not separated:
        return None
    return InputError(f"`{name}`: column(s) {_listed(separated)} hold text: numbers written with thousands "
                      f"separators (e.g. '1,234'), and {what} takes numbers; write them without separators.")


def has_missing(x: Any) -> bool:
    """Whether a table or array holds missing values (NaN, None, pandas NA)."""
    if is_frame(x):
        return bool(as_frame(x).isna().to_numpy().any())
    array = np.asarray(x)
    if array.dtype.kind in "fc":
        return bool(np.isnan(array).any())
    if array.dtype.kind == "O":
        return any(v is None or (isinstance(v, float) and v != v) for v in array.ravel())
    return False


#: a text column with distinct values in at least this share of the training rows is identifier-like
ID_DISTINCT_SHARE = 0.5
#: fewest training rows for a column to be judged identifier-like (a tiny table's values are all distinct)
ID_MIN_ROWS = 20
#: a date written as text: 2012-01-31, 31/01/2012, 2012.1.31, with an optional time after it
_DATE = r"^\s*\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}(?:[ T].*)?$"


def _kind(column: Any) -> str:
    pandas = import_optional("pandas", "comparing tables")
    numeric = pandas.api.types.is_numeric_dtype(column) or pandas.api.types.is_bool_dtype(column)
    return "numbers" if numeric else "text"


def check_same_types(scored: Any, train: Any, *, scored_name: str = "data", train_name: str = "train_data") -> None:
    """Refuse a column that holds numbers in one table and text in the other (e.g. ``"5,850"``, thousands
    separators in one file only), naming the column and both types."""
    for column in scored.columns:
        a, b = scored[column], train[column]
        if a.notna().any() and b.notna().any() and _kind(a) != _kind(b):
            text, named = (a, scored_name) if _kind(a) == "text" else (b, train_name)
            found = unreadable_cell(text.to_frame(), problems=("text",))
            sample = (f"its {row_name(found[1])} in `{named}` holds {shown_text(found[2])}" if found
                      else f"e.g. {shown_text(text.dropna().iloc[0])}")
            raise InputError(
                f"column {str(column)!r} holds {_kind(a)} ({a.dtype}) in `{scored_name}` but {_kind(b)} ({b.dtype}) "
                f"in `{train_name}` ({sample}); write it alike in both files (e.g. without thousands "
                "separators), or leave it out."
            )


def identifier_columns(scored: Any, train: Any) -> dict[str, str]:
    """Columns that name rows rather than describe them, and why: left out of the leakage search's distances.

    * text with a distinct value in at least :data:`ID_DISTINCT_SHARE` of
      the training rows (names, ids): as 0/1 columns every row would sit
      apart from every other;
    * dates written as text (every value like ``2012-01-31``);
    * row numbers: whole numbers, distinct within each table, that fill at
      least half the range between the smallest and the largest.

    Only tables of at least :data:`ID_MIN_ROWS` training rows are judged.
    """
    found: dict[str, str] = {}
    if len(train) < ID_MIN_ROWS:
        return found
    for column in train.columns:
        a, b = scored[column].dropna(), train[column].dropna()
        if len(b) < ID_MIN_ROWS:
            continue
        if _kind(scored[column]) == "text" or _kind(train[column]) == "text":
            text = b.astype(str)
            if text.str.match(_DATE).all() and a.astype(str).str.match(_DATE).all():
                found[str(column)] = "dates kept as text"
            elif text.nunique() >= ID_DISTINCT_SHARE * len(text):
                found[str(column)] = ("unique text" if text.is_unique and a.astype(str).is_unique
                                      else "text with a value of its own in most rows")
            continue
        values = np.concatenate([a.to_numpy(dtype=np.float64), b.to_numpy(dtype=np.float64)])
        if (np.all(values == np.round(values)) and a.is_unique and b.is_unique
                and len(np.unique(values)) >= 0.5 * (values.max() - values.min() + 1)):
            found[str(column)] = "row numbers"
    return found


def align_columns(left: Any, right: Any) -> Any:
    """``right`` with its columns in ``left``'s order when the two tables have the same column names (matched
    by name); unchanged otherwise."""
    names = [str(c) for c in left.columns]
    if [str(c) for c in right.columns] == names or sorted(map(str, right.columns)) != sorted(names):
        return right
    return right.set_axis([str(c) for c in right.columns], axis=1)[names]


def comparable_features(scored: Any, train: Any, *, scored_name: str = "data", train_name: str = "train_data",
                        leave_out: Sequence[str] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Two tables as numeric matrices in one space, for the leakage search's distances.

    Numeric and boolean columns stay numbers; a missing value becomes the
    training column's median plus a 0/1 "missing" column (so two rows missing
    the same values can still be twins); a text or category column becomes
    one 0/1 column per value seen in either table (a missing value is a value
    of its own). Both tables must have the same columns, each holding
    numbers in both or text in both (:func:`check_same_types`); the columns
    in ``leave_out`` are left out.
    """
    pandas = import_optional("pandas", "comparing tables")
    left, right = as_frame(scored, scored_name), as_frame(train, train_name)
    right = align_columns(left, right)
    if list(map(str, left.columns)) != list(map(str, right.columns)):
        raise InputError(f"`{train_name}` has columns {_listed(list(right.columns))} but `{scored_name}` "
                         f"{_listed(list(left.columns))}; training and scored data must have the same features.")
    check_same_types(left, right, scored_name=scored_name, train_name=train_name)
    kept = [c for c in left.columns if str(c) not in set(map(str, leave_out))]
    if not kept:
        raise InputError(f"`{scored_name}`: every column was left out ({_listed(list(leave_out))}); the search "
                         "needs at least one column that describes the rows.")
    text = set(text_columns(left)) | set(text_columns(right))
    blocks: list[tuple[np.ndarray, np.ndarray]] = []
    for column in kept:
        a, b = left[column], right[column]
        if str(column) in text:
            a_text = a.astype("object").where(a.notna(), "\0missing").astype(str)
            b_text = b.astype("object").where(b.notna(), "\0missing").astype(str)
            values = pandas.Index(sorted(set(a_text) | set(b_text)))
            blocks.append(((a_text.to_numpy()[:, None] == values.to_numpy()[None, :]).astype(np.float64),
                           (b_text.to_numpy()[:, None] == values.to_numpy()[None, :]).astype(np.float64)))
            continue
        a_num = a.to_numpy(dtype=np.float64, na_value=np.nan)
        b_num = b.to_numpy(dtype=np.float64, na_value=np.nan)
        missing_a, missing_b = np.isnan(a_num), np.isnan(b_num)
        finite_train = b_num[~missing_b]
        fill = float(np.median(finite_train)) if finite_train.size else 0.0
        blocks.append((np.where(missing_a, fill, a_num)[:, None], np.where(missing_b, fill, b_num)[:, None]))
        if missing_a.any() or missing_b.any():
            blocks.append((missing_a[:, None].astype(np.float64), missing_b[:, None].astype(np.float64)))
    return np.hstack([s for s, _ in blocks]), np.hstack([t for _, t in blocks])


def frame_key(frame: Any) -> tuple[Any, ...]:
    """What identifies a table's content for checkpoint keys: column names, dtypes and a hash of every row."""
    pandas = import_optional("pandas", "reading a table")
    rows = pandas.util.hash_pandas_object(frame, index=False).to_numpy()
    return (tuple(map(str, frame.columns)), tuple(map(str, frame.dtypes)), rows)
