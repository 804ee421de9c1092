"""The ways a torch module can be run for inference, each a callable on numpy batches.

A runner maps a batch ``x`` (numpy, the module's input dtype) to its logits
(numpy), and a batch already on the module's device (a torch tensor) to its
logits there (:attr:`Runner.forward`: the device path of
:meth:`fitaudit.models.torch_adapter.TorchClassifier.logits_tensor`, where
only per-example numbers come back to the host). Builders return a :class:`Runner` or raise :class:`RunnerUnavailable`
with the reason in one line; :mod:`fitaudit.models.inference.select` checks
every runner against eager torch before using it.

Runners (the ``mode`` names recorded in ``inference_info``):

* ``eager``: the module itself under :func:`torch.inference_mode`, the reference.
* ``channels_last``: a copy of the module in the channels-last memory format
  (4-D inputs only), which lets oneDNN pick faster convolution kernels.
* ``jit``: a copy traced, frozen and passed through
  :func:`torch.jit.optimize_for_inference` (folds batch norm into convolutions).
* ``half``: on a GPU, the module under float16 autocast.
* ``bf16``, ``bf16_channels_last``: on a GPU, the module under bfloat16
  autocast (the second in channels-last memory format).
* ``tf32``: on a GPU, fp32 with TensorFloat-32 matrix products and
  convolutions (every other runner on a GPU runs exact IEEE fp32 there:
  TF32 is switched off for its calls).
* ``compile``: :func:`torch.compile` (benchmarks only: compiling takes long).
* ``onnx``: the module exported to ONNX once (cached on disk by the weights'
  fingerprint and the input shape) and run by onnxruntime.
"""

from __future__ import annotations

import contextlib
import copy
import io
import logging
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._optional import import_optional
from fitaudit.models.base import describe_exception

#: oldest onnxruntime the ONNX runner accepts (opset 17, dynamic batch)
MIN_ONNXRUNTIME = (1, 17)

#: ONNX opset of the export
OPSET = 17

#: the arithmetic each mode runs (what a result records as the model's precision)
PRECISION_OF = {"eager": "fp32", "channels_last": "fp32", "jit": "fp32", "compile": "fp32", "onnx": "fp32",
                "tf32": "tf32", "half": "fp16", "bf16": "bf16", "bf16_channels_last": "bf16"}


class RunnerUnavailable(Exception):
    """A runner cannot be built for this module; the message says why, in one line."""


@dataclass
class Runner:
    """One way to run a module: ``run(x) -> logits`` on numpy batches.

    Attributes
    ----------
    mode : str
        ``"eager"``, ``"channels_last"``, ``"jit"``, ``"half"``, ``"compile"`` or ``"onnx"``.
    backend : str
        ``"torch"`` or ``"onnxruntime"``.
    run : callable
        Numpy batch in, float64 numpy logits out.
    threads : int
        Intra-op threads the runner uses.
    forward : callable, optional
        Torch tensor on the module's device in, logits on that device out;
        ``None`` for a runner of numpy only (:meth:`tensor` then goes
        through the host).
    """

    mode: str
    backend: str
    run: Callable[[np.ndarray], np.ndarray]
    threads: int
    forward: Callable[[Any], Any] | None = None

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.run(x)

    def tensor(self, x: Any) -> Any:
        """Logits of a batch already on the device, on that device (:attr:`forward`, else through :attr:`run`)."""
        if self.forward is not None:
            return self.forward(x)
        return _torch().from_numpy(np.asarray(self.run(x.cpu().numpy()))).to(x.device)


def _torch() -> Any:
    return import_optional("torch", "running a torch model")


def _first_tensor(output: Any, torch: Any) -> Any:
    if not isinstance(output, torch.Tensor):
        from fitaudit._errors import InputError

        raise InputError(f"the torch model must return one tensor of logits; it returned {type(output).__name__}.")
    return output


@contextlib.contextmanager
def tensor_float32(torch: Any, device: Any, allowed: bool) -> Any:
    """On a CUDA device, TF32 matrix products and convolutions on (``allowed``) or off (exact IEEE fp32) meanwhile.

    Uses ``fp32_precision`` where torch has it (2.9 and later), else the
    older ``allow_tf32`` flags; restores the previous setting. Nothing to do
    on other devices.
    """
    if device.type != "cuda":
        yield
        return
    conv = getattr(torch.backends.cudnn, "conv", None)
    if conv is not None and hasattr(conv, "fp32_precision"):
        places = [(torch.backends.cuda.matmul, "fp32_precision"), (conv, "fp32_precision")]
        value: Any = "tf32" if allowed else "ieee"
    else:
        places = [(torch.backends.cuda.matmul, "allow_tf32"), (torch.backends.cudnn, "allow_tf32")]
        value = allowed
    saved = [getattr(obj, name) for obj, name in places]
    for obj, name in places:
        setattr(obj, name, value)
    try:
        yield
    finally:
        for (obj, name), old in zip(places, saved):
            setattr(obj, name, old)


def _torch_runner(
    mode: str, module: Any, device: Any, dtype: Any, *, layout: Any = None, autocast: Any = None, tf32: bool = False,
) -> Runner:
    """A runner of ``module``; ``autocast`` is the torch dtype of autocast (``None``: the module's own precision),
    ``tf32`` allows TF32 on a GPU (else its calls run exact fp32)."""
    torch = _torch()

    def forward(tensor: Any) -> Any:
        tensor = tensor.to(device, dtype)
        if layout is not None:
            tensor = tensor.contiguous(memory_format=layout)
        precision = torch.autocast(device.type, dtype=autocast) if autocast is not None else contextlib.nullcontext()
        with torch.inference_mode(), precision, tensor_float32(torch, device, tf32):
            return _first_tensor(module(tensor), torch).detach()

    def run(x: np.ndarray) -> np.ndarray:
        return forward(torch.from_numpy(x)).to("cpu", torch.float64).numpy()

    return Runner(mode, "torch", run, torch.get_num_threads(), forward)


def eager(module: Any, device: Any, dtype: Any) -> Runner:
    """The module as it is, under :func:`torch.inference_mode` (the reference every other runner is checked against)."""
    return _torch_runner("eager", module, device, dtype)


def channels_last(module: Any, device: Any, dtype: Any, example: np.ndarray) -> Runner:
    """A copy of the module in channels-last memory format; only for image batches ``(n, C, H, W)``."""
    if example.ndim != 4:
        raise RunnerUnavailable(f"channels_last needs 4-D image batches; the inputs have {example.ndim} dimensions")
    torch = _torch()
    twin = copy.deepcopy(module).to(memory_format=torch.channels_last)
    return _torch_runner("channels_last", twin, device, dtype, layout=torch.channels_last)


def half(module: Any, device: Any, dtype: Any) -> Runner:
    """The module under float16 autocast (GPU only)."""
    if device.type != "cuda":
        raise RunnerUnavailable("float16 autocast is used on a GPU only")
    return _torch_runner("half", module, device, dtype, autocast=_torch().float16)


def bf16(module: Any, device: Any, dtype: Any, example: np.ndarray, *, channels_last: bool = False) -> Runner:
    """The module under bfloat16 autocast, in channels-last memory format with ``channels_last``.

    Built on any device (the tests run it on the CPU); :mod:`~fitaudit.models.inference.select`
    offers it on a GPU only.
    """
    torch = _torch()
    if not channels_last:
        return _torch_runner("bf16", module, device, dtype, autocast=torch.bfloat16)
    if example.ndim != 4:
        raise RunnerUnavailable(f"channels_last needs 4-D image batches; the inputs have {example.ndim} dimensions")
    twin = copy.deepcopy(module).to(memory_format=torch.channels_last)
    return _torch_runner("bf16_channels_last", twin, device, dtype, layout=torch.channels_last, autocast=torch.bfloat16)


def tf32(module: Any, device: Any, dtype: Any) -> Runner:
    """The module in fp32 with TensorFloat-32 matrix products and convolutions (a GPU's; elsewhere plain fp32)."""
    return _torch_runner("tf32", module, device, dtype, tf32=True)


def _trace_warnings(caught: list[warnings.WarningMessage], torch: Any) -> None:
    """Reject a trace whose graph may hold only for the example (a TracerWarning: data-dependent Python)."""
    for item in caught:
        if issubclass(item.category, torch.jit.TracerWarning):
            first = str(item.message).strip().splitlines()[0]
            raise RunnerUnavailable(f"tracing the module is not exact for other inputs ({first})")


def jit(module: Any, device: Any, dtype: Any, example: np.ndarray) -> Runner:
    """A traced, frozen copy passed through :func:`torch.jit.optimize_for_inference`."""
    torch = _torch()
    sample = torch.from_numpy(example).to(device, dtype)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with torch.inference_mode(False), torch.no_grad():
                traced = torch.jit.trace(copy.deepcopy(module).eval(), sample)
                frozen = torch.jit.optimize_for_inference(torch.jit.freeze(traced))
        except Exception as exc:
            raise RunnerUnavailable(f"torch.jit could not trace the module ({describe_exception(exc)})") from exc
    _trace_warnings(caught, torch)
    return _torch_runner("jit", frozen, device, dtype)


def compiled(module: Any, device: Any, dtype: Any) -> Runner:
    """:func:`torch.compile` of the module (the first batches of each shape compile; slow to start)."""
    torch = _torch()
    try:
        twin = torch.compile(copy.deepcopy(module), dynamic=False)
    except Exception as exc:
        raise RunnerUnavailable(f"torch.compile failed ({describe_exception(exc)})") from exc
    return _torch_runner("compile", twin, device, dtype)


def onnxruntime_version() -> tuple[int, ...] | None:
    """Version of the installed onnxruntime as a tuple, ``None`` when it is missing."""
    try:
        ort = import_optional("onnxruntime", "the onnx backend")
    except ImportError:
        return None
    parts = []
    for piece in str(ort.__version__).split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


@contextlib.contextmanager
def _silenced_stdout() -> Any:
    """Send file descriptor 1 to the null device meanwhile: the TorchScript exporter prints the graph it
    failed on ("Torch IR graph at exception") from C++ to stdout, where a command's ``--json`` goes (the
    failure itself is reported: :class:`RunnerUnavailable`)."""
    try:
        stdout = sys.__stdout__.fileno() if sys.__stdout__ is not None else 1
        saved = os.dup(stdout)
    except (OSError, ValueError):  # no file descriptor behind stdout (an embedding host): nothing to guard
        yield
        return
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, stdout)
        yield
    finally:
        os.dup2(saved, stdout)
        os.close(saved)
        os.close(null)


def _export_bytes(module: Any, sample: Any) -> bytes:
    """The module as ONNX bytes with a dynamic batch axis: the TorchScript exporter, else the dynamo one."""
    torch = _torch()
    reasons = []
    for dynamo in (False, True):
        buffer = io.BytesIO()
        logger = logging.getLogger("torch.onnx")
        level = logger.level
        logger.setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings(record=True) as caught, _silenced_stdout():
                warnings.simplefilter("always")
                if dynamo:
                    program = torch.onnx.export(
                        module, (sample,), dynamo=True, input_names=["x"], output_names=["logits"],
                        dynamic_shapes=({0: torch.export.Dim("batch")},), verbose=False, optimize=True,
                    )
                    data = program.model_proto.SerializeToString()
                else:
                    torch.onnx.export(
                        module, (sample,), buffer, dynamo=False, input_names=["x"], output_names=["logits"],
                        dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, opset_version=OPSET,
                    )
                    data = buffer.getvalue()
            _trace_warnings(caught, torch)
            return data
        except RunnerUnavailable as exc:
            reasons.append(str(exc))
        except Exception as exc:
            reasons.append(f"{'dynamo' if dynamo else 'TorchScript'} exporter: {describe_exception(exc)}")
        finally:
            logger.setLevel(level)
    raise RunnerUnavailable("the ONNX export failed (" + "; ".join(reasons) + ")")


def session_options(threads: int) -> Any:
    """onnxruntime session options: ``threads`` intra-op threads, one inter-op thread, no spinning between calls.

    onnxruntime's intra-op threads spin while idle by default, and keep
    spinning after a call returns: each keeps a core busy for about 36 ms
    after every call (measured on this project's 2-core machine, onnxruntime
    1.32), taking it from whatever runs next (the renderer of an examination,
    numpy work between batches, another session: a session timed right after
    another one's call ran 25-35% slower). ``session.force_spinning_stop``
    stops the spinning when a call returns; during a call the threads still
    spin between operators, which keeps small batches fast (sleeping threads
    instead were 6-34% slower at 32 rows per call, as fast at 128-512;
    benchmarks/results/inference.txt).
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "1")
    options.add_session_config_entry("session.force_spinning_stop", "1")
    return options


def onnx(module: Any, device: Any, dtype: Any, example: np.ndarray, *, cache_file: Path | None, threads: int) -> Runner:
    """The module exported to ONNX (read from ``cache_file`` when an earlier run wrote it) run by onnxruntime.

    Parameters
    ----------
    cache_file : Path or None
        Where the export is kept (written atomically); ``None`` keeps it in memory.
    threads : int
        onnxruntime's intra-op threads.
    """
    version = onnxruntime_version()
    if version is None:
        raise RunnerUnavailable("onnxruntime is not installed (pip install 'fitaudit[onnx]')")
    if version[:2] < MIN_ONNXRUNTIME:
        have = ".".join(map(str, version))
        need = ".".join(map(str, MIN_ONNXRUNTIME))
        raise RunnerUnavailable(f"onnxruntime {have} is too old (need >= {need})")
    if device.type != "cpu":
        raise RunnerUnavailable(f"the onnx backend runs on the CPU here; the model is on {device}")
    import onnxruntime as ort

    from fitaudit.checkpoint import atomic_write_bytes
    from fitaudit.models.onnx_adapter import providers

    data = cache_file.read_bytes() if cache_file is not None and cache_file.is_file() else None
    if data is None:
        torch = _torch()
        sample = torch.from_numpy(example).to(device, dtype)
        data = _export_bytes(copy.deepcopy(module).eval(), sample)
        if cache_file is not None:
            try:
                atomic_write_bytes(cache_file, data)
            except OSError:  # a cache that cannot be written only costs the export next time
                pass
    try:
        session = ort.InferenceSession(data, session_options(threads), providers=providers(ort, str(device)))
    except Exception as exc:
        raise RunnerUnavailable(f"onnxruntime could not open the export ({describe_exception(exc)})") from exc
    name = session.get_inputs()[0].name

    def run(x: np.ndarray) -> np.ndarray:
        return np.asarray(session.run(None, {name: x})[0], dtype=np.float64)

    def forward(tensor: Any) -> Any:  # a CPU tensor: its numpy view, no copy
        return _torch().from_numpy(np.asarray(session.run(None, {name: tensor.contiguous().numpy()})[0]))

    return Runner("onnx", "onnxruntime", run, threads, forward)
