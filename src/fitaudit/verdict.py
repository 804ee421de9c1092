"""The verdict contract: what an instrument decides from its result.

Every instrument owns its statistic *and* its decision: the package that
computes a result also decides its :class:`Verdict` (the overfitting test in
:mod:`fitaudit.overfit`, leakage in :mod:`fitaudit.leakage`, the examiner in
:mod:`fitaudit.examine`, PMV in :mod:`fitaudit.pmv`, ...). A verdict is pure
data: a ``status``, a machine-readable ``reason`` and the ``numbers`` it rests
on. It holds no prose: :mod:`fitaudit.report` puts it into words (the one
sentence used by the command line, the HTML report and the demo alike).

Statuses (:data:`STATUSES`):

``pass``
    the check ran, its assumptions hold, and it found no problem;
``fail``
    the check ran, its assumptions hold, and it found a problem;
``inconclusive``
    the check ran but its assumptions fail on this data (or it has too
    little data or power), so it can say neither ``pass`` nor ``fail``;
    ``reason`` says why;
``info``
    a measurement, not a judgement;
``skipped``
    the check did not run (its inputs were not given); ``reason`` says why.

Examples
--------
>>> from fitaudit.verdict import Verdict
>>> v = Verdict("fail", "pvalue_below_level", {"pvalue": 0.003, "level": 0.05})
>>> v.failed, v.to_dict()["reason"]
(True, 'pvalue_below_level')
>>> Verdict.from_dict(v.to_dict()) == v
True
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fitaudit._errors import InputError

#: every status a verdict can have, from the most to the least decisive
STATUSES = ("fail", "pass", "inconclusive", "info", "skipped")

_REASON = re.compile(r"^[a-z][a-z0-9_]*$")


def _number(key: str, value: Any) -> Any:
    """A JSON-safe copy of one of a verdict's numbers (finite numbers, strings, bools, None, lists)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_number(key, v) for v in value]
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"verdict number `{key}` must be a number, a string, a bool or None; "
                         f"got {type(value).__name__}.") from None
    if not math.isfinite(number):
        return None
    if isinstance(value, int) or (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iu"):
        return int(value)
    return number


@dataclass(frozen=True)
class Verdict:
    """An instrument's decision on its result (see the module docstring).

    Parameters
    ----------
    status : str
        One of :data:`STATUSES`.
    reason : str
        A machine-readable code (``snake_case``), stable across releases,
        e.g. ``"pvalue_below_level"``, ``"g3_violated"``, ``"no_model"``.
    numbers : mapping
        The numbers the decision rests on (finite floats, ints, strings,
        bools, ``None`` or lists of them), e.g. ``{"pvalue": ..., "level": ...}``.
    """

    status: str
    reason: str
    numbers: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise InputError(f"verdict `status` must be one of {', '.join(STATUSES)}; got {self.status!r}.")
        if not isinstance(self.reason, str) or not _REASON.match(self.reason):
            raise InputError(f"verdict `reason` must be a snake_case code; got {self.reason!r}.")
        if not isinstance(self.numbers, Mapping):
            raise InputError(f"verdict `numbers` must be a mapping; got {type(self.numbers).__name__}.")
        object.__setattr__(self, "numbers", {str(k): _number(str(k), v) for k, v in self.numbers.items()})

    @property
    def failed(self) -> bool:
        """Whether the check found a problem."""
        return self.status == "fail"

    @property
    def conclusive(self) -> bool:
        """Whether the check could pass or fail (it ran and its assumptions held)."""
        return self.status in ("pass", "fail")

    def to_dict(self) -> dict[str, Any]:
        """``{"status", "reason", "numbers"}``, JSON-safe."""
        return {"status": self.status, "reason": self.reason, "numbers": dict(self.numbers)}

    @classmethod
    def from_dict(cls, data: Any) -> Verdict:
        """A verdict back from :meth:`to_dict` (validated: a bad file gives a clear error)."""
        if not isinstance(data, Mapping):
            raise InputError(f"a verdict must be a JSON object; got {type(data).__name__}.")
        missing = [key for key in ("status", "reason") if key not in data]
        if missing:
            raise InputError(f"a verdict needs {' and '.join(repr(k) for k in missing)}.")
        return cls(data["status"], data["reason"], data.get("numbers") or {})

    def __repr__(self) -> str:
        numbers = ", ".join(f"{k}={v!r}" for k, v in self.numbers.items())
        return f"Verdict({self.status}: {self.reason}{'; ' + numbers if numbers else ''})"


def skipped(reason: str, **numbers: Any) -> Verdict:
    """A ``skipped`` verdict: the check did not run (``reason`` says why)."""
    return Verdict("skipped", reason, numbers)


def inconclusive(reason: str, **numbers: Any) -> Verdict:
    """An ``inconclusive`` verdict: the check's assumptions fail on this data (``reason`` says which)."""
    return Verdict("inconclusive", reason, numbers)
