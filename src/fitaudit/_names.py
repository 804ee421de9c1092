"""How a message names an argument: the Python keyword, or the command-line option that sets it.

One table, :data:`CLI_OPTIONS`, says which option of the ``fitaudit``
command stands for which keyword of the library. A sentence the library
writes for its caller (why an audit part was skipped) names an argument
through :func:`named`: in Python words by default (``train_data=``), in the
command line's when the caller hands the table down (``--train-data``:
``fitaudit audit`` and ``fitaudit inspect`` do). The command line's
rewriting of library errors (``fitaudit.cli._as_options``) reads the same
table, so an argument is called one thing wherever it is called.

Examples
--------
>>> from fitaudit._names import CLI_OPTIONS, named
>>> named("train_data")
'`train_data=`'
>>> named("train_data", CLI_OPTIONS)
'`--train-data`'
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: each library keyword a message may name -> the ``fitaudit`` option that sets it (where the two differ other than
#: by ``_`` -> ``-``, the entry says so: the examiner's ``generator`` is ``--shapes-classes`` on the command line)
CLI_OPTIONS: Mapping[str, str] = MappingProxyType({
    "data": "--data",
    "train_data": "--train-data",
    "images": "--images",
    "train_images": "--train-images",
    "models": "--models",
    "learner": "--learner",
    "task": "--task",
    "directory": "--task",
    "generator": "--shapes-classes",
    "random_state": "--seed",
})


def named(keyword: str, names: Mapping[str, str] | None = None) -> str:
    """The argument ``keyword`` as a message names it, in backticks: its entry in ``names`` (the command line's
    option, :data:`CLI_OPTIONS`), else the keyword itself as it is passed (``keyword=``)."""
    if names is not None and keyword in names:
        return f"`{names[keyword]}`"
    return f"`{keyword}=`"
