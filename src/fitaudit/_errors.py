"""Exceptions raised by fitaudit.

Every error a user can cause by handing in bad arguments or files is an
:class:`InputError` (a :class:`ValueError`), whose message names the argument
in backticks and says what was expected and what came. The command-line tool
turns these into a one-line message and exit code 2.
"""

from __future__ import annotations


class FitauditError(Exception):
    """Base class of fitaudit's own exceptions."""


class InputError(FitauditError, ValueError):
    """An argument or input file is not what the function expects."""


class MissingDependencyError(FitauditError, ImportError):
    """An optional dependency is needed for the feature that was used."""


class WorkerError(FitauditError):
    """A unit of parallel work failed in another process or on a cluster (the message names the unit and the cause)."""
