"""The audit's runner: parts as resumable units, the environment.

Each part is a :class:`PartSpec` (identity, the inputs its answer depends on,
a ``compute`` function) or an already-made :class:`~fitaudit.auditing.result.AuditPart`
(a skipped one). :func:`run_parts` runs them in order with a progress bar;
a finished part is stored in a :class:`~fitaudit.checkpoint.CheckpointStore`
as soon as it is done, so a run killed mid-way loses at most the part in
flight and a rerun with the same store reuses every finished part.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from tqdm.auto import tqdm

from fitaudit._errors import InputError
from fitaudit.auditing.result import AuditPart, PartVerdict
from fitaudit.checkpoint import CheckpointStore, code_fingerprint

#: bump when the stored form of a part changes, so old parts are never reused
PART_FORMAT = "audit-part-3"


@dataclasses.dataclass
class PartSpec:
    """A part to run: its identity, what its key fingerprints, and how to compute it.

    ``compute()`` returns an :class:`AuditPart` (without timing or key).
    ``inputs`` must hold everything the answer depends on (model
    fingerprint, data, settings): it is the part's checkpoint key, with the
    source code behind ``compute``.
    """

    id: str
    instrument: str
    title: str
    inputs: Any
    compute: Callable[[], AuditPart]


def skipped(part_id: str, instrument: str, title: str, reason: str, code: str = "inputs_missing") -> AuditPart:
    """A part that could not run: ``reason`` in words, ``code`` for programs (the verdict's ``reason``)."""
    return AuditPart(id=part_id, instrument=instrument, title=title, verdict=PartVerdict("skipped", code, {}, reason))


def plan(checks: Sequence[Any], inputs: Any, chosen: Sequence[str] | None = None) -> list[PartSpec | AuditPart]:
    """Every check's parts (:meth:`fitaudit.auditing.check.Check.plan`), in order, for the ``chosen`` instruments.

    The first questions (instrument ``"first"``) are planned in every audit;
    the others when their instrument is chosen (all when ``chosen`` is
    None). A check that cannot run on ``inputs`` is planned as a skipped
    part with its reason and the others go on; only an instrument the
    caller chose by name none of whose checks can run is an error (asking
    for it explicitly and getting nothing is not an audit).
    """
    specs: list[PartSpec | AuditPart] = []
    for check in checks:
        if chosen is None or check.instrument == "first" or check.instrument in chosen:
            specs += check.plan(inputs)
    for instrument in chosen or ():
        mine = [s for s in specs if s.instrument == instrument]
        if mine and all(isinstance(s, AuditPart) and s.status == "skipped" for s in mine):
            first = mine[0]
            assert isinstance(first, AuditPart)
            raise InputError(f"`instruments` asks for {instrument}, but {first.sentence}")
    return specs


def revive_part(data: dict[str, Any]) -> AuditPart:
    """A stored part back as an :class:`AuditPart`, validated, its verdict decided again from its result."""
    from fitaudit.auditing.result import load_part

    return load_part(data)


def run_parts(
    specs: Sequence[PartSpec | AuditPart], store: CheckpointStore, *, progress: bool = True, kept: bool = True
) -> list[AuditPart]:
    """Run (or reuse from ``store``) every part, in order, with a progress bar.

    ``kept``: whether ``store`` outlives the run (a caller's checkpoint
    folder, not a temporary one); an interruption says what it kept only then.

    A finished part is stored under ``store.key(format, id, inputs, code)``
    (``code``: :func:`~fitaudit.checkpoint.code_fingerprint` of ``compute``: all of
    fitaudit's source, and the module of a ``compute`` defined outside it) as
    soon as it is done; one found there is reused (``resumed=True``) and
    not recomputed. Every part goes through its JSON form, so a fresh part
    and a reused one look the same.
    """
    parts: list[AuditPart] = []
    bar = tqdm(specs, desc="audit", unit="part", disable=not progress, leave=True)
    try:
        for spec in bar:
            parts.append(_run_part(spec, store, bar))
    except KeyboardInterrupt:
        done = sum(part.key is not None for part in parts)
        if kept:
            tqdm.write(f"audit interrupted: {done} finished part{'s' if done != 1 else ''} kept in {store.folder}; "
                       "run again with the same folder to reuse them.", file=sys.stderr)
        else:
            tqdm.write("audit interrupted: nothing kept (no checkpoint folder was given: `checkpoint_dir`, "
                       "`--out` on the command line).", file=sys.stderr)
        raise
    return parts


def _run_part(spec: PartSpec | AuditPart, store: CheckpointStore, bar: Any) -> AuditPart:
    """One part: made already (a skipped one), reused from ``store``, or computed and stored at once."""
    if isinstance(spec, AuditPart):
        return spec
    bar.set_postfix_str(spec.id)
    key = store.key(PART_FORMAT, spec.id, spec.inputs, code_fingerprint(spec.compute))
    if store.has(key):
        part = revive_part(store.load(key))
        part.resumed = True
        return part
    start = time.perf_counter()
    fresh = spec.compute()
    fresh.seconds = time.perf_counter() - start
    fresh.key = key
    return revive_part(store.save(key, fresh, part=spec.id))


def reuse_note(parts: Sequence[AuditPart], folder: Any, image_keys: dict[str, str] | None = None) -> str | None:
    """``"Reused 3 of 5 parts from OUT/parts (computed before: 41 s)."``, or None when nothing was reused.

    ``image_keys``: image folder argument -> how it was matched to the stored
    parts (:meth:`fitaudit.data.images.ImageDataset.key_rule`), said after.
    """
    from fitaudit.data.images import KEY_RULES

    reused = [p for p in parts if p.resumed]
    if not reused:
        return None
    ran = [p for p in parts if p.key is not None]  # skipped parts are made up front, without a key
    seconds = sum(p.seconds for p in reused)
    matched = "".join(f" {name} matched {KEY_RULES[rule]}{'' if rule == 'content' else ' (--verify-content to read them)'}."
                      for name, rule in (image_keys or {}).items())
    return (f"Reused {len(reused)} of {len(ran)} parts from {os.fspath(folder)} "
            f"(their computation took {seconds:.0f} s when first run): {', '.join(p.id for p in reused)}.{matched}")


def environment() -> dict[str, Any]:
    """Versions and platform, for the report's evidence."""
    from fitaudit._version import __version__

    versions = {"fitaudit": __version__, "python": platform.python_version()}
    for name in ("numpy", "scipy", "sklearn", "torch", "onnxruntime", "dask"):
        module = sys.modules.get(name)
        if module is not None:
            versions[name] = str(getattr(module, "__version__", "?"))
    return {"versions": versions, "platform": platform.platform(), "cpus": os.cpu_count()}


