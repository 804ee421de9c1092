"""Choosing how a torch module runs: backend, batch size and threads, checked and measured.

:func:`select_engine` is called by :class:`~fitaudit.models.torch_adapter.TorchClassifier`
on the first batch of each input shape. It builds the candidate runners of
the requested backend (see :mod:`fitaudit.models.inference.runners`), keeps
those that **agree with eager torch** on a check batch (:func:`disagreement`;
reduced-precision candidates on a GPU: :func:`agreement_problem`), times the survivors on the check batch resized to 128 and 512 rows, takes
the fastest (:func:`fastest_mode`: onnxruntime unless a torch mode is 10%
faster), then picks the batch size (:func:`choose_batch_size`). The choice is written to the cache
folder (:func:`cache_dir`), keyed by the weights' fingerprint, the input
shape and dtype, the device, the thread count, the library versions, the
precision allowed and the rule (its version and tuning constants, :func:`_rule`), so a later run
on the same machine makes the same choice without measuring.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import FitauditError, InputError
from fitaudit.models.inference import runners as R
from fitaudit.models.inference.settings import (
    CHECK_ROWS,
    EAGER_BATCH_SIZE,
    EAGER_FAST_ENOUGH,
    LOGIT_ATOL,
    LOGIT_RTOL,
    MIN_AGREEMENT,
    cache_dir,
    memory_budget,
)

#: batch sizes the probe tries (those within the memory budget)
BATCH_CANDIDATES = (32, 128, 256, 512, 2048)

#: rows per call on which the candidate runners are timed against each other, each candidate's faster reading
#: counting (sizes whose call would take over 0.25 s are left out; with none left, the check batch): torch's modes
#: often run fastest near 128 rows per call (the Shapes ResNet's traced copy: 1.5x faster at 128 than at 512),
#: onnxruntime as fast or faster at 256-2048; one size alone favours one kind
TIMING_ROWS = (128, 512)

#: under "auto", a torch mode replaces onnxruntime only when it reads at least this much faster: onnxruntime's speed
#: is the steadier (in repeated runs of benchmarks/bench_inference.py the torch modes of one model varied up to 1.9x
#: from one process to the next, onnxruntime by about 20%), and the choice is cached for later processes
ONNX_PREFERENCE = 1.1

#: a larger batch is kept if it is at least this fraction as fast as the fastest (readings on a shared
#: machine are noisy, mostly downwards); 0.85 kept batch 512 for onnxruntime at 86% of batch 256's rate
#: on a quiet machine
BATCH_SLACK = 0.95

#: seconds after which the batch-size probe starts no further round
PROBE_SECONDS = 4.0

#: rounds of the probe over the batch sizes (each size's best reading is kept: the machine may be shared)
PROBE_ROUNDS = 3

#: the check batch holds at most this many bytes of input
CHECK_BYTES = 8 * 2**20

#: bump when the selection rule changes, so that old cached choices are not reused
_RULE_VERSION = 11


def _rule() -> tuple[Any, ...]:
    """The cache key's rule part: :data:`_RULE_VERSION` and every tuning constant the choice depends on
    (so that a changed constant makes a new choice without a bump)."""
    return (_RULE_VERSION, BATCH_CANDIDATES, TIMING_ROWS, ONNX_PREFERENCE, BATCH_SLACK, PROBE_SECONDS, PROBE_ROUNDS,
            CHECK_BYTES, CHECK_ROWS, EAGER_FAST_ENOUGH, LOGIT_ATOL, LOGIT_RTOL, MIN_AGREEMENT)

#: the clock every timing reads (tests replace it by a simulated one)
_clock: Callable[[], float] = time.perf_counter


@dataclass
class Engine:
    """The runner chosen for one input shape and what was recorded about the choice."""

    runner: R.Runner
    batch_size: int
    info: dict[str, Any] = field(default_factory=dict)


def disagreement(reference: np.ndarray, candidate: np.ndarray) -> str | None:
    """Why ``candidate`` logits do not agree with the ``reference`` (eager torch) logits; ``None`` if they do.

    They agree when every entry is within ``LOGIT_ATOL + LOGIT_RTOL * max|reference|``
    (:data:`~fitaudit.models.inference.settings.LOGIT_ATOL`,
    :data:`~fitaudit.models.inference.settings.LOGIT_RTOL`) and every row has
    the same predicted class (the argmax), near ties included.
    """
    candidate = np.asarray(candidate, dtype=np.float64)
    if candidate.shape != reference.shape:
        return f"it returned logits of shape {candidate.shape}, eager torch {reference.shape}"
    if not np.array_equal(np.isfinite(candidate), np.isfinite(reference)):
        return "it returned non-finite logits where eager torch did not (or the reverse)"
    finite = np.isfinite(reference)
    tolerance = LOGIT_ATOL + LOGIT_RTOL * float(np.max(np.abs(reference[finite]), initial=0.0))
    gap = float(np.max(np.abs(candidate[finite] - reference[finite]), initial=0.0))
    if gap > tolerance:
        return f"its logits differ from eager torch by up to {gap:.3g} (tolerance {tolerance:.3g})"
    differ = int(np.sum(np.argmax(candidate, axis=1) != np.argmax(reference, axis=1)))
    if differ:
        return f"it predicts another class than eager torch for {differ} of {len(reference)} check inputs"
    return None


def agreement_problem(reference: np.ndarray, candidate: np.ndarray) -> tuple[str | None, float]:
    """The rule for a reduced-precision candidate (TF32, bf16, fp16): its predictions against fp32's.

    The candidate is kept when its predicted class (argmax) equals the fp32
    reference's on at least :data:`~fitaudit.models.inference.settings.MIN_AGREEMENT`
    of the calibration rows (its logits may differ by more than the fp32
    tolerance of :func:`disagreement`: reduced precision changes them).

    Returns
    -------
    (reason or None, float)
        Why it is rejected (``None``: kept) and the fraction of rows whose
        predicted class differs from fp32's (the measured disagreement).
    """
    candidate = np.asarray(candidate, dtype=np.float64)
    if candidate.shape != reference.shape:
        return f"it returned logits of shape {candidate.shape}, fp32 {reference.shape}", 1.0
    if not np.all(np.isfinite(candidate)):
        return "it returned non-finite logits", 1.0
    differ = float(np.mean(np.argmax(candidate, axis=1) != np.argmax(reference, axis=1)))
    if 1.0 - differ < MIN_AGREEMENT:
        return (f"it predicts another class than fp32 for {differ:.1%} of the {len(reference)} calibration inputs "
                f"(at most {1 - MIN_AGREEMENT:.1%} allowed)"), differ
    return None, differ


def precision_of(mode: str, dtype: Any) -> str:
    """The arithmetic a runner of ``mode`` does on a module of parameter dtype ``dtype`` (``"fp32"``, ``"tf32"``, ...)."""
    name = R.PRECISION_OF.get(mode, "fp32")
    return "fp64" if name == "fp32" and "float64" in str(dtype) else name


def check_batch(x: np.ndarray) -> np.ndarray:
    """The check batch: the first :data:`CHECK_ROWS` rows of ``x`` (at most :data:`CHECK_BYTES`), repeated to at least 5 rows."""
    rows = x[: max(1, min(CHECK_ROWS, CHECK_BYTES // max(1, x[:1].nbytes)))]
    if len(rows) < 5:
        rows = np.resize(rows, (5, *rows.shape[1:]))
    return np.ascontiguousarray(rows)


def throughput(runner: Callable[[np.ndarray], Any], batch: np.ndarray, *, seconds: float = 0.15, warm: bool = True) -> float:
    """Rows per second of ``runner`` on ``batch``: the fastest of repeated calls over ``seconds`` (at least one, at most 20).

    With ``warm`` one untimed call comes first (a first call may allocate or compile).
    """
    if warm:
        runner(batch)
    best = np.inf
    spent, calls = 0.0, 0
    while calls < 1 or (spent < seconds and calls < 20):
        start = _clock()
        runner(batch)
        took = _clock() - start
        best = min(best, took)
        spent += took
        calls += 1
    return float(len(batch) / max(best, 1e-9))


def bytes_per_row(module: Any, sample: np.ndarray, device: Any, dtype: Any) -> int:
    """Memory one input row needs in a forward pass: its size plus every leaf module's output (a forward with hooks)."""
    import torch

    total = [0]

    def hook(_module: Any, _inputs: Any, output: Any) -> None:
        if isinstance(output, torch.Tensor):
            total[0] += output.numel() * output.element_size()

    leaves = [m for m in module.modules() if not list(m.children())]
    handles = [m.register_forward_hook(hook) for m in leaves]
    try:
        with torch.inference_mode():
            module(torch.from_numpy(sample[:1]).to(device, dtype))
    finally:
        for handle in handles:
            handle.remove()
    return int(sample[:1].nbytes + total[0])


def _reading(runner: R.Runner, rows: np.ndarray, size: int) -> float:
    """Rows per second of one pass over ``rows`` in batches of ``size``."""
    start = _clock()
    for i in range(0, len(rows), size):
        runner(rows[i : i + size])
    return len(rows) / max(_clock() - start, 1e-9)


def choose_batch_size(runner: R.Runner, check: np.ndarray, per_row: int, *, budget: int | None = None) -> tuple[int, dict[str, float]]:
    """The largest batch within ``budget`` bytes whose throughput is within :data:`BATCH_SLACK` of the fastest.

    Every size of :data:`BATCH_CANDIDATES` that fits the budget is timed on
    the same work, one pass over as many rows as the largest size (the check
    batch repeated), so that each reading takes about as long whatever the
    size (timing small batches more often would favour them on a noisy
    machine, where the best of many readings is the luckiest). Up to
    :data:`PROBE_ROUNDS` rounds within :data:`PROBE_SECONDS`; each size's
    best reading is kept. When only one size fits, nothing is timed.

    Returns
    -------
    batch_size : int
    measured : dict
        Rows per second by batch size.
    """
    budget = memory_budget() if budget is None else budget
    fits = [b for b in BATCH_CANDIDATES if b * per_row <= budget] or [BATCH_CANDIDATES[0]]
    if len(fits) == 1:
        return fits[0], {}
    rows = np.resize(check, (fits[-1], *check.shape[1:]))
    runner(rows[: fits[0]])  # warm-up
    measured: dict[str, float] = {}
    start = _clock()
    for _ in range(PROBE_ROUNDS):
        for size in fits:
            rate = _reading(runner, rows, size)
            measured[str(size)] = round(max(rate, measured.get(str(size), 0.0)), 1)
        if _clock() - start > PROBE_SECONDS:
            break
    best = max(measured.values())
    chosen = max(int(b) for b, rate in measured.items() if rate >= BATCH_SLACK * best)
    return chosen, measured


def timing_batches(check: np.ndarray, per_row_seconds: float) -> list[np.ndarray]:
    """The batches candidates are timed on: the check batch resized to each size of :data:`TIMING_ROWS` that runs in 0.25 s."""
    sizes = [n for n in TIMING_ROWS if per_row_seconds * n <= 0.25]
    return [np.resize(check, (n, *check.shape[1:])) for n in sizes] or [check]


def fastest_mode(rates: dict[str, float]) -> str:
    """The mode with the highest rate, except that ``"onnx"`` is kept unless another is :data:`ONNX_PREFERENCE` times faster."""
    best = max(rates, key=lambda m: rates[m])
    if "onnx" in rates and rates[best] < ONNX_PREFERENCE * rates["onnx"]:
        return "onnx"
    return best


#: the reduced-precision modes "auto" precision may choose on a GPU (fp32 is always a candidate: eager torch)
REDUCED_MODES = ("tf32", "bf16", "bf16_channels_last", "half")


def _candidates(backend: str, device: Any, precision: str = "auto") -> list[str]:
    """The modes tried besides eager torch: reduced precision only on a GPU and under ``precision="auto"``."""
    if backend == "onnx":
        return ["onnx"]
    reduced = list(REDUCED_MODES) if device.type == "cuda" and precision == "auto" else []
    torch_modes = ["channels_last", "jit", *reduced]
    if backend == "torch":
        return torch_modes
    return (["onnx"] if device.type == "cpu" else []) + torch_modes


def _build(mode: str, module: Any, device: Any, dtype: Any, example: np.ndarray, cache_file: Path | None, threads: int) -> R.Runner:
    if mode == "onnx":
        return R.onnx(module, device, dtype, example, cache_file=cache_file, threads=threads)
    if mode == "channels_last":
        return R.channels_last(module, device, dtype, example)
    if mode == "jit":
        return R.jit(module, device, dtype, example)
    if mode == "tf32":
        return R.tf32(module, device, dtype)
    if mode in ("bf16", "bf16_channels_last"):
        return R.bf16(module, device, dtype, example, channels_last=mode == "bf16_channels_last")
    return R.half(module, device, dtype)


def _cached_choice(path: Path | None) -> dict[str, Any] | None:
    if path is None or not path.is_file():
        return None
    try:
        choice = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    return choice if isinstance(choice, dict) and choice.get("rule") == _RULE_VERSION else None


def _save_choice(path: Path | None, choice: dict[str, Any]) -> None:
    if path is None:
        return
    from fitaudit.checkpoint import atomic_write_text

    try:
        atomic_write_text(path, json.dumps(choice, indent=1, sort_keys=True))
    except OSError:  # an unwritable cache only costs the probe next time
        pass


def _try(
    mode: str, expected: np.ndarray, check: np.ndarray, module: Any, device: Any, dtype: Any,
    onnx_file: Path | None, threads: int, measured: dict[str, float] | None = None,
) -> tuple[str | None, R.Runner | None]:
    """Build runner ``mode`` and check it: ``(None, runner)`` when it agrees with eager torch, else ``(reason, None)``.

    An fp32 mode must agree within the logit tolerance (:func:`disagreement`);
    a reduced-precision mode by its predictions (:func:`agreement_problem`),
    whose measured disagreement goes into ``measured[mode]``.
    """
    try:
        runner = _build(mode, module, device, dtype, check[:2], onnx_file, threads)
        if R.PRECISION_OF.get(mode, "fp32") == "fp32":
            why = disagreement(expected, runner(check))
        else:
            why, differ = agreement_problem(expected, runner(check))
            if measured is not None:
                measured[mode] = round(differ, 6)
    except R.RunnerUnavailable as exc:
        return str(exc), None
    except FitauditError:
        raise
    except Exception as exc:  # a runner that builds but fails on the check batch
        return f"it failed on the check batch ({R.describe_exception(exc)})", None
    return (why, None) if why is not None else (None, runner)


def _reuse(
    cached: dict[str, Any] | None, reference: R.Runner, expected: np.ndarray, check: np.ndarray, module: Any,
    device: Any, dtype: Any, onnx_file: Path | None, threads: int,
) -> Engine | None:
    """The engine of a cached choice, if its runner still builds and agrees with eager torch (checked again).

    A chosen batch size is kept only while it fits today's :func:`memory_budget`
    (it depends on the free memory, which the cache key cannot hold).
    """
    if cached is None:
        return None
    per_row = cached["info"].get("bytes_per_row")
    size = int(cached["batch_size"])
    if per_row is not None and size > BATCH_CANDIDATES[0] and size * int(per_row) > memory_budget():
        return None
    if cached["mode"] == "eager":
        return Engine(reference, size, dict(cached["info"]))
    _, runner = _try(cached["mode"], expected, check, module, device, dtype, onnx_file, threads)
    return None if runner is None else Engine(runner, size, dict(cached["info"]))


def select_engine(
    module: Any,
    x: np.ndarray,
    *,
    backend: str,
    device: Any,
    dtype: Any,
    batch_size: int | None,
    weights_key: str,
    precision: str = "auto",
) -> Engine:
    """Choose the runner and batch size for ``module`` on inputs shaped like ``x``.

    Parameters
    ----------
    module : torch.nn.Module
        In eval mode on ``device``.
    x : ndarray
        The first batch of this input shape (its first rows are the check batch).
    backend : {"auto", "torch", "onnx", "eager"}
        ``"eager"`` runs eager torch at a fixed batch size, nothing timed; ``"onnx"`` fails with an :class:`~fitaudit.InputError` when the
        export is impossible or disagrees; under ``"auto"`` a rejected
        candidate gives a warning naming the reason and the fallback.
    device, dtype
        torch device and parameter dtype of the module.
    batch_size : int or None
        Fixed by the caller, or ``None`` to choose it (:func:`choose_batch_size`).
    weights_key : str
        Fingerprint of the module's weights (the cache key's model part).
    precision : {"auto", "fp32"}
        ``"auto"`` lets a GPU choose TF32, bf16 or fp16 autocast when faster
        and agreeing with fp32 (:func:`agreement_problem`); ``"fp32"`` keeps
        exact fp32 (on a GPU, TF32 switched off). The choice is recorded in
        ``info["precision"]``, the measured disagreement of every
        reduced-precision candidate in ``info["agreement"]``.
    """
    import torch

    from fitaudit.checkpoint import fingerprint

    check = check_batch(x)  # the reference pass: a module that fails on the input fails here, in torch
    threads = torch.get_num_threads()
    if backend == "eager":  # nothing chosen by timing: the same runner and batch size on every machine
        reference = R.eager(module, device, dtype)
        reference(check)
        size = EAGER_BATCH_SIZE if batch_size is None else batch_size
        return Engine(reference, size, {"requested": backend, "device": str(device), "input_shape": list(x.shape[1:]),
                                        "backend": reference.backend, "mode": "eager", "threads": reference.threads,
                                        "batch_size": size, "reused": False, "precision": precision_of("eager", dtype)})
    folder = cache_dir()
    versions = {"torch": torch.__version__, "onnxruntime": ".".join(map(str, R.onnxruntime_version() or ()))}
    key = fingerprint(_rule(), weights_key, x.shape[1:], str(x.dtype), str(device), threads, versions, backend, batch_size,
                      precision)
    choice_file = folder / f"choice-{key[:32]}.json" if folder is not None else None
    onnx_file = (folder / f"onnx-{fingerprint(weights_key, x.shape[1:], str(x.dtype), versions['torch'], R.OPSET)[:32]}.onnx"
                 if folder is not None else None)
    reference = R.eager(module, device, dtype)
    started = _clock()
    expected = reference(check)
    per_row_seconds = (_clock() - started) / len(check)
    cached = _reuse(_cached_choice(choice_file), reference, expected, check, module, device, dtype, onnx_file, threads)
    info: dict[str, Any] = {"requested": backend, "device": str(device), "input_shape": list(x.shape[1:])}
    if cached is not None:
        info.update(cached.info, reused=True)
        return Engine(cached.runner, cached.batch_size, info)
    timing = timing_batches(check, per_row_seconds)
    eager_rate = max(throughput(reference, batch) for batch in timing)
    fast_enough = backend == "auto" and eager_rate >= EAGER_FAST_ENOUGH
    if fast_enough:
        info["note"] = f"eager torch runs {eager_rate:.0f} rows/s (>= {EAGER_FAST_ENOUGH}): nothing to gain from another backend"
    built: dict[str, R.Runner] = {} if backend == "onnx" else {"eager": reference}
    rates: dict[str, float] = {} if backend == "onnx" else {"eager": round(eager_rate, 1)}
    rejected: dict[str, str] = {}
    agreement: dict[str, float] = {}
    for mode in [] if fast_enough else _candidates(backend, device, precision):
        why, candidate = _try(mode, expected, check, module, device, dtype, onnx_file, threads, agreement)
        if candidate is None:
            rejected[mode] = str(why)
            continue
        built[mode] = candidate
        rates[mode] = round(max(throughput(candidate, batch) for batch in timing), 1)
    if backend == "onnx" and "onnx" in rejected:
        raise InputError(f"`backend` is 'onnx' but the model cannot run there: {rejected['onnx']}.")
    if backend == "auto" and "onnx" in rejected:
        warnings.warn(
            f"fitaudit: the onnx backend is not used for this model: {rejected['onnx']}; running it in torch.",
            RuntimeWarning, stacklevel=4,
        )
    mode = fastest_mode(rates)
    runner: R.Runner = built[mode]
    if batch_size is None:
        per_row = bytes_per_row(module, check, device, dtype)
        if fast_enough:  # the run's time is not in this model's forward passes: the largest batch within the budget
            batch_size = max([b for b in BATCH_CANDIDATES if b * per_row <= memory_budget()] or [BATCH_CANDIDATES[0]])
        else:
            batch_size, info["batch_probe"] = choose_batch_size(runner, check, per_row)
        info["bytes_per_row"] = per_row
    info.update(backend=runner.backend, mode=mode, threads=runner.threads, batch_size=batch_size,
                rows_per_s=rates, rejected=rejected, precision=precision_of(mode, dtype))
    if agreement:
        info["agreement"] = agreement
    _save_choice(choice_file, {"rule": _RULE_VERSION, "mode": mode, "batch_size": batch_size,
                               "info": {k: v for k, v in info.items() if k not in ("reused",)}})
    info["reused"] = False
    return Engine(runner, batch_size, info)
