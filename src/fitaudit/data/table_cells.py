"""Cells of a table named in messages: which row and column hold a value a model cannot take.

Every refusal of a table's content names the cell (``the 6th row of column
'age'``) and shows its text, cut when long (:func:`cell_error`); a failure
inside a model's own conversion is traced back to the cell that caused it
(:func:`failed_cell_error`).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional


def row_name(row: int) -> str:
    """``6th row`` for the 0-based position 5 (the header not counted)."""
    n = row + 1
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n:,}{suffix} row"


def cell_name(column: Any, row: int) -> str:
    """``the 6th row of column 'age'`` for the cell at 0-based position ``row`` (the header not counted)."""
    return f"the {row_name(row)} of column {str(column)!r}"


#: the characters of a cell's text a message shows (a longer one is cut, and its length said)
_SHOWN = 24


def shown_text(value: Any) -> str:
    """A cell's text for a message: ``'abc'``, or ``'99999999999999999999...' (20,000,000 characters)``."""
    text = str(value)
    return repr(text) if len(text) <= _SHOWN else f"{text[:_SHOWN] + '...'!r} ({len(text):,} characters)"


def infinite_cell(frame: Any) -> tuple[str, int, int] | None:
    """The first infinite number of a table's numeric columns: ``(column, row, how many in all)``, or None."""
    numeric = frame.select_dtypes(include="number")
    if not numeric.shape[1]:
        return None
    infinite = np.isinf(numeric.to_numpy(dtype=np.float64, na_value=np.nan))
    if not infinite.any():
        return None
    columns, rows = np.nonzero(infinite.T)  # column by column, then row by row
    return str(numeric.columns[columns[0]]), int(rows[0]), int(infinite.sum())


def unreadable_cell(frame: Any, *, among_numbers: bool = True,
                    problems: tuple[str, ...] = ("text", "infinite")) -> tuple[str, int, str, str] | None:
    """The first cell of a text column that a model reading it as numbers cannot take.

    Returns ``(column, row, its text, problem)``, ``problem`` being
    ``"text"`` (not a number: ``'abc'``) or ``"infinite"`` (a number
    beyond the float range, e.g. a 20 MB digit string, that reads as
    infinity); None where there is none. With ``among_numbers``, only
    columns that otherwise hold finite numbers are searched (a column of
    categories is no stray cell). Whitespace around a number is accepted, as
    ``float`` accepts it.
    """
    pandas = import_optional("pandas", "reading a table")
    for column in text_columns(frame):
        values = frame[column]
        present = values.notna().to_numpy()
        text = values.astype(str)
        numbers = pandas.to_numeric(text.where(present), errors="coerce").to_numpy(dtype=np.float64)
        if among_numbers and not np.isfinite(numbers).any():
            continue
        for row in np.flatnonzero(present & ~np.isfinite(numbers)):  # pandas' parser gives up on very long numbers
            cell = str(text.iloc[row])
            try:
                number = float(cell)
            except ValueError:
                problem = "text"
            else:
                problem = "infinite" if np.isinf(number) else ""
            if problem in problems:
                return str(column), int(row), cell, problem
    return None


def cell_holding(frame: Any, text: str) -> tuple[str, int, str, str] | None:
    """The first cell of a text column whose text is ``text`` (a column that otherwise holds numbers first), as
    :func:`unreadable_cell` returns it; None where no cell holds it."""
    hits = []
    for column in text_columns(frame):
        values = frame[column]
        rows = np.flatnonzero(values.notna().to_numpy() & (values.astype(str) == text).to_numpy())
        if rows.size:
            among_numbers = unreadable_cell(values.to_frame(), problems=("text",)) is not None
            hits.append((not among_numbers, str(column), int(rows[0])))
    if not hits:
        return None
    _, column, row = min(hits, key=lambda hit: hit[0])  # the first column of numbers holding it, else the first
    return column, row, text, "text"


def cell_error(found: tuple[str, int, str, str], name: str, what: str, *, row_offset: int = 0,
               cause: str = "") -> InputError:
    """The one-line error naming a cell :func:`unreadable_cell` (or :func:`cell_holding`) found, or an infinite
    number (problem ``"inf"``, from :func:`infinite_cell`).

    ``what`` names the reader (``this sklearn model``; unused for an infinite number), ``row_offset`` the
    position in the table of the first row of the batch searched, and
    ``cause``, when given, the reader's own error, quoted in brackets.
    """
    column, row, cell, problem = found
    quoted = f" ({cause.rstrip('.')})" if cause else ""
    where = cell_name(column, row + row_offset)
    if problem == "inf":
        return InputError(f"`{name}`: {where} holds an infinite value ('inf', or a number beyond the float range, "
                          f"about 1.8e308){quoted}; only finite numbers or missing values (NaN) are accepted.")
    if problem == "text":
        return InputError(f"`{name}`: {where} holds the text {shown_text(cell)}, and {what} reads it as a "
                          f"number{quoted}: write it as a number, or remove the row.")
    return InputError(f"`{name}`: {where} holds {shown_text(cell)}, a number too large for a float (it reads as "
                      f"infinity){quoted}; only finite numbers or missing values (NaN) are accepted.")


#: the text a number could not be read from, as Python's ``float`` (and so numpy and scikit-learn) quotes it
_NOT_A_NUMBER = re.compile(r"could not convert string to float: ('.*'|\".*\")")


def failed_cell_error(exc: BaseException, frame: Any, name: str, what: str, *, row_offset: int = 0,
                      cause: str = "") -> InputError | None:
    """The error naming the cell of ``frame`` a reader of numbers failed on, from its exception ``exc``.

    Two failures are traced to a cell: ``could not convert string to float:
    'abc'`` (the cell holding that text), and a value that "contains
    infinity" (an infinite number, or a text that reads as one). None for
    any other failure, or where no cell of ``frame`` explains it.
    """
    import ast

    message = str(exc)
    quoted = _NOT_A_NUMBER.search(message)
    found = None
    if quoted:
        try:
            text = ast.literal_eval(quoted.group(1))
        except (ValueError, SyntaxError):
            text = None
        found = cell_holding(frame, text) if isinstance(text, str) else None
    elif "infinity" in message.lower():
        infinite = infinite_cell(frame)
        found = unreadable_cell(frame, among_numbers=False, problems=("infinite",)) if infinite is None else (
            infinite[0], infinite[1], "inf", "inf")
    return None if found is None else cell_error(found, name, what, row_offset=row_offset, cause=cause)


def text_columns(frame: Any) -> list[str]:
    """The columns that do not hold numbers (strings, categories, mixed objects)."""
    pandas = import_optional("pandas", "reading a table")
    return [str(c) for c in frame.columns
            if not (pandas.api.types.is_numeric_dtype(frame[c]) or pandas.api.types.is_bool_dtype(frame[c]))]
