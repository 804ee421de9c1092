"""One question an audit can answer: the :class:`Check` protocol.

A check is one object (as cleanlab's Datalab keeps one issue manager per
issue type, and Optuna one sampler class per strategy behind a small base):

``id``, ``instrument``, ``title``
    the part's stable name (``--fail-on`` takes it), its instrument, the
    question in words;
``applies(inputs) -> str | None``
    ``None`` when the question can be answered from the validated
    :class:`~fitaudit.auditing.inputs.AuditInputs`, else the reason it
    cannot (the part is then *skipped* with that reason, and the other
    checks run: a check that cannot run never stops the others);
``key(inputs)``
    everything the answer depends on (model fingerprint, data, settings):
    with the check's source it is the part's checkpoint key, so a rerun
    reuses the part only when nothing changed;
``run(inputs) -> AuditPart``
    computes the instrument's result and returns the part
    (:func:`fitaudit.auditing.parts.part_from_result`: its verdict is the
    result's own, worded by the report);

:meth:`Check.plan` turns a check into what the runner runs: a
:class:`~fitaudit.auditing.runner.PartSpec` or a skipped part. A check that
answers with several parts (the overfitting test on scored and training
data, the leakage search in two spaces) overrides :meth:`Check.parts` (what
runs once :meth:`Check.applies` lets it) or :meth:`Check.plan`; one
whose question does not arise at all on the inputs (no training data for the
test on the training data) plans nothing. The audit's questions are the one
list :data:`fitaudit.auditing.checks.CHECKS`; a new question is one new
check there (``docs/developer.md`` shows how).
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

from fitaudit.auditing.inputs import AuditInputs
from fitaudit.auditing.result import AuditPart
from fitaudit.auditing.runner import PartSpec, skipped


class Check:
    """Base class of the audit's questions (see the module docstring).

    Subclasses set ``id``, ``instrument`` and ``title`` and implement
    :meth:`key` and :meth:`run`; :meth:`applies` defaults to "always".
    """

    id: ClassVar[str]
    instrument: ClassVar[str]
    title: ClassVar[str]
    #: the skipped verdict's machine-readable reason when :meth:`applies` gives one
    skip_code: ClassVar[str] = "inputs_missing"
    #: every part id this check can answer with (``--fail-on`` accepts them before any work); default ``(id,)``
    part_ids: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "id" in cls.__dict__ and not cls.__dict__.get("part_ids"):
            cls.part_ids = (cls.id,)

    def applies(self, inputs: AuditInputs) -> str | None:
        """``None`` when the question can be answered from ``inputs``, else why not (in words)."""
        return None

    def key(self, inputs: AuditInputs) -> Any:
        """Everything the answer depends on (the part's checkpoint key, with the check's source)."""
        raise NotImplementedError

    def run(self, inputs: AuditInputs) -> AuditPart:
        """Compute the instrument's result and return the answered part."""
        raise NotImplementedError

    def plan(self, inputs: AuditInputs) -> list[PartSpec | AuditPart]:
        """The parts to run (:meth:`parts`), or the part skipped with the reason :meth:`applies` gives."""
        reason = self.applies(inputs)
        if reason is not None:
            return [skipped(self.id, self.instrument, self.title, reason, self.skip_code)]
        return self.parts(inputs)

    def parts(self, inputs: AuditInputs) -> list[PartSpec | AuditPart]:
        """The parts of a check that applies: by default one, computed by :meth:`run` and stored under :meth:`key`.

        ``compute`` is :meth:`run` itself (bound to ``inputs``), so the part's
        key holds the source of the module that defines it
        (:func:`fitaudit.checkpoint.code_fingerprint`): a check edited since
        its part was stored is run again, not reused.
        """
        compute = functools.partial(self.run, inputs)
        return [PartSpec(self.id, self.instrument, self.title, (type(self).__qualname__, self.key(inputs)), compute)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r}, instrument={self.instrument!r})"
