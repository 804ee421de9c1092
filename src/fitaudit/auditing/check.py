"""One question an audit can answer: the :class:`Check` protocol.

A check is one object (as cleanlab's Datalab keeps one issue manager per
issue type, and Optuna one sampler class per strategy behind a small base)
answering with one part of the report:

``id``, ``instrument``, ``title``
    the part's stable name (``--fail-on`` takes it), its instrument, the
    question in words;
``arises(inputs) -> bool``
    whether the question arises at all on the validated
    :class:`~fitaudit.auditing.inputs.AuditInputs` (the test on the
    training data when none was given does not): if not, no part;
``applies(inputs) -> str | None``
    ``None`` when the question can be answered, else the reason it cannot
    (the part is then *skipped* with that reason, and the other checks run:
    a check that cannot run never stops the others);
``key(inputs)``
    everything the answer depends on (model fingerprint, data, settings):
    with the check's name and source it is the part's checkpoint key, so a
    rerun reuses the part only when nothing changed;
``run(inputs) -> AuditPart``
    computes the instrument's result and returns the part
    (:func:`fitaudit.auditing.parts.part_from_result`: its verdict is the
    result's own; the report layer words it).

A new result type needs nothing here: it registers itself where it is
defined (:func:`fitaudit.results.registered_types`). :meth:`Check.plan`
turns a check into what the runner runs: a
:class:`~fitaudit.auditing.runner.PartSpec`, a skipped part, or nothing.
The audit's questions are the one list :data:`fitaudit.auditing.checks.CHECKS`,
every built-in one written this way; a new question is one new check there
(``docs/developer.md`` shows how).
"""

from __future__ import annotations

import functools
import importlib.util
from typing import Any, ClassVar

from fitaudit.auditing.inputs import AuditInputs
from fitaudit.auditing.result import AuditPart
from fitaudit.auditing.runner import PartSpec, skipped


class Check:
    """Base class of the audit's questions (see the module docstring).

    Subclasses set ``id``, ``instrument`` and ``title`` and implement
    :meth:`key` and :meth:`run`; :meth:`arises` and :meth:`applies` default
    to "always", :meth:`part_title` to ``title``.
    """

    id: ClassVar[str]
    instrument: ClassVar[str]
    title: ClassVar[str]
    #: the skipped verdict's machine-readable reason when :meth:`applies` gives one
    skip_code: ClassVar[str] = "inputs_missing"
    #: an optional library the check needs, and the extra that installs it (``("cleanlab", "labels")``):
    #: when it is missing the part is skipped with ``missing_dependency`` and the install line
    requires: ClassVar[tuple[str, str] | None] = None

    def arises(self, inputs: AuditInputs) -> bool:
        """Whether the question arises on ``inputs`` at all (if not, the check plans no part)."""
        return True

    def applies(self, inputs: AuditInputs) -> str | None:
        """``None`` when the question can be answered from ``inputs``, else why not (in words)."""
        return None

    def part_title(self, inputs: AuditInputs) -> str:
        """The part's title on these inputs (default :attr:`title`)."""
        return self.title

    def key(self, inputs: AuditInputs) -> Any:
        """Everything the answer depends on (the part's checkpoint key, with the check's name and source)."""
        raise NotImplementedError

    def run(self, inputs: AuditInputs) -> AuditPart:
        """Compute the instrument's result and return the answered part."""
        raise NotImplementedError

    def plan(self, inputs: AuditInputs) -> list[PartSpec | AuditPart]:
        """What the runner runs: nothing (the question does not arise), the part skipped with the reason
        :meth:`applies` gives, or one part computed by :meth:`run` and stored under :meth:`key`.

        ``compute`` is :meth:`run` itself (bound to ``inputs``), so the part's
        key holds the source of the module that defines it
        (:func:`fitaudit.checkpoint.code_fingerprint`): a check edited since
        its part was stored is run again, not reused.
        """
        if not self.arises(inputs):
            return []
        title = self.part_title(inputs)
        reason = self.applies(inputs)
        if reason is not None:
            return [skipped(self.id, self.instrument, title, reason, self.skip_code)]
        if self.requires is not None and importlib.util.find_spec(self.requires[0]) is None:
            module, extra = self.requires
            return [skipped(self.id, self.instrument, title, f"this check needs {module}; install it with "
                            f"`pip install 'fitaudit[{extra}]'`.", "missing_dependency")]
        compute = functools.partial(self.run, inputs)
        return [PartSpec(self.id, self.instrument, title, (type(self).__qualname__, self.key(inputs)), compute)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r}, instrument={self.instrument!r})"
