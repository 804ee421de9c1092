"""Adapter for a torch ``nn.Module``: eval mode, one device, run by the fastest backend that agrees with eager torch."""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit._errors import FitauditError, InputError
from fitaudit._optional import import_optional
from fitaudit._validation import check_int
from fitaudit.models.base import Classifier, describe_exception, shape_fits
from fitaudit.models.inference.select import Engine, select_engine
from fitaudit.models.inference.settings import (
    CHECK_ROWS,
    check_backend,
    check_precision,
    default_backend,
    default_precision,
)
from fitaudit.models.layout import FLAT, NO_CHANNEL_AXIS


def resolve_device(device: Any, name: str = "device") -> Any:
    """Return ``torch.device(device)``, checking that the device exists.

    Parameters
    ----------
    device : str or torch.device
        ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``, ...
    name : str
        How the caller calls it in messages (``device``, ``--device``).
    """
    torch = import_optional("torch", "running a torch model")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise InputError(f"`{name}` must name a torch device such as 'cpu' or 'cuda:0'; got {device!r}.") from exc
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise InputError(
                f"`{name}` is {device!r} but torch sees no CUDA device on this machine; use {name} 'cpu'."
            )
        count = torch.cuda.device_count()
        if resolved.index is not None and resolved.index >= count:
            raise InputError(f"`{name}` is {device!r} but only {count} CUDA device(s) exist.")
    elif resolved.type == "mps" and not torch.backends.mps.is_available():
        raise InputError(f"`{name}` is {device!r} but the MPS backend is not available; use {name} 'cpu'.")
    return resolved


def move_model(model: Any, device: Any = "cpu", name: str = "device") -> Any:
    """``model`` moved to ``device`` (checked: one line naming ``name`` for a device this machine lacks).

    A torch module is moved in place and returned; anything else (an ONNX
    model wrapped for the complexity measures, or ``None``) is returned as it is.
    """
    resolved = resolve_device(device, name=name)
    torch = import_optional("torch", "running a torch model")
    if model is not None and isinstance(model, torch.nn.Module):
        model.to(resolved)
    return model


def _output_width(module: Any) -> int | None:
    """``out_features`` of the last linear layer, a guess of the class count."""
    width = None
    for layer in module.modules():
        if isinstance(getattr(layer, "out_features", None), int):
            width = layer.out_features
    return width


def weights_state(module: Any) -> tuple[tuple[int, int], ...]:
    """Identity and version counter of every parameter and buffer: changes when a weight is replaced or changed in place."""
    tensors = [*module.parameters(), *module.buffers()]
    return tuple((id(t), int(t._version)) for t in tensors)


class TorchClassifier(Classifier):
    """A torch ``nn.Module`` returning logits of shape ``(n, k)``.

    The module is put in eval mode and moved to ``device`` (both in place).
    On the first batch of each input shape the adapter chooses how to run
    it (:mod:`fitaudit.models.inference`): by default the fastest of
    onnxruntime and the torch modes whose logits agree with eager torch on
    that batch; :attr:`inference_info` records the choice. Inputs are cast
    to the dtype of the module's floating parameters (float32 for most
    models); logits come back as float64 numpy arrays. The module itself
    stays :attr:`model` (for gradients, training, weight perturbations);
    weights changed in place are noticed and the choice is made again.

    Parameters
    ----------
    module : torch.nn.Module
    n_classes : int, optional
        Defaults to ``out_features`` of the last linear layer, or the width
        of the first output.
    batch_size : int, optional
        Rows per call of the backend; ``None`` (default) chooses it: the
        largest within a memory budget that does not slow the run.
    device : str or torch.device
    backend : {"auto", "torch", "onnx", "eager"}, optional
        ``None`` takes the process default
        (:func:`fitaudit.models.inference.default_backend`, set by ``--backend``).
    precision : {"auto", "fp32"}, optional
        ``"auto"``: on a GPU, TF32, bf16 or fp16 autocast when faster and
        agreeing with fp32 (:func:`fitaudit.models.inference.select.agreement_problem`);
        ``"fp32"``: exact fp32. ``None`` takes the process default (``--precision``).

    Notes
    -----
    Besides numpy batches (:meth:`logits`), the adapter scores batches
    already on its device (:meth:`to_device`, :meth:`logits_tensor`): the
    device path of the translational AEG, which hands each image to the
    device once and cuts, normalises and scores its crops there.
    """

    kind = "torch"

    def __init__(
        self,
        module: Any,
        *,
        n_classes: int | None = None,
        batch_size: int | None = None,
        device: Any = "cpu",
        backend: str | None = None,
        precision: str | None = None,
    ) -> None:
        torch = import_optional("torch", "running a torch model")
        if not isinstance(module, torch.nn.Module):
            raise InputError(f"`model` must be a torch.nn.Module; got {type(module).__name__}.")
        if n_classes is None:
            n_classes = _output_width(module)
        super().__init__(module, n_classes=n_classes, batch_size=256 if batch_size is None else batch_size)
        self.device = resolve_device(device)
        module.eval()
        module.to(self.device)
        floating = [p.dtype for p in module.parameters() if p.is_floating_point()]
        self._torch_dtype = floating[0] if floating else torch.float32
        wide = self._torch_dtype == torch.float64
        self.input_dtype = np.dtype(np.float64 if wide else np.float32)
        self.precision = default_precision() if precision is None else check_precision(precision)
        self.configure(backend=backend, batch_size=batch_size)

    def configure(self, *, backend: str | None = None, batch_size: int | None = None) -> None:
        """Set the backend (``None``: the process default) and the batch size (``None``: chosen); forgets earlier choices."""
        self.requested_backend = default_backend() if backend is None else check_backend(backend)
        self._fixed_batch_size = None if batch_size is None else check_int(batch_size, "batch_size", minimum=1)
        self.batch_size = 256 if self._fixed_batch_size is None else self._fixed_batch_size
        self._reset_engines()

    def _reset_engines(self) -> None:
        self._engines: dict[tuple[Any, ...], Engine] = {}
        self._active: Engine | None = None
        self._weights: tuple[tuple[int, int], ...] | None = None
        self._weights_key: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the chosen runners (sessions and traced graphs); a worker chooses again, from the cache."""
        state = self.__dict__.copy()
        for name in ("_engines", "_active", "_weights", "_weights_key"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset_engines()

    def _fingerprint_source(self) -> Any:
        """The weights and how they are run: the logits depend (within tolerance) on the backend and device."""
        return (self.model, self.requested_backend, str(self.device)) + (
            () if self.precision == "auto" and self.device.type == "cpu" else (self.precision,)
        )

    @property
    def inference_info(self) -> dict[str, Any]:
        """How the last batch ran: ``backend`` (``"torch"``/``"onnxruntime"``), ``mode``, ``threads``, ``batch_size``, ...

        Also ``requested`` (the backend asked for), ``device``,
        ``input_shape``, ``rows_per_s`` (each candidate measured on the check
        batch), ``rejected`` (candidates that failed or disagreed, with the
        reason) and ``reused`` (the choice was read from the cache). Before
        the first batch only ``requested`` and ``device`` are known.
        """
        if self._active is None:
            return {"requested": self.requested_backend, "device": str(self.device), "backend": None}
        return dict(self._active.info)

    def _engine(self, x: Any) -> Engine:
        """The engine of inputs shaped like ``x`` (numpy, or a tensor on the device: its check rows come to the host once)."""
        from fitaudit.checkpoint import fingerprint

        state = weights_state(self.model)
        if state != self._weights:
            self._reset_engines()
            self._weights = state
            self._weights_key = fingerprint(self.model)
        shape = (tuple(x.shape[1:]), x.dtype.str if isinstance(x, np.ndarray) else np.dtype(self.input_dtype).str)
        if shape not in self._engines:
            assert self._weights_key is not None
            sample = x if isinstance(x, np.ndarray) else x[:CHECK_ROWS].to("cpu", self._torch_dtype).numpy()
            self._engines[shape] = select_engine(
                self.model, sample, backend=self.requested_backend, device=self.device, dtype=self._torch_dtype,
                batch_size=self._fixed_batch_size, weights_key=self._weights_key, precision=self.precision,
            )
        return self._engines[shape]

    def to_device(self, array: np.ndarray) -> Any:
        """A host array as a tensor on the model's device, same dtype: the device path's one copy of the images."""
        torch = import_optional("torch", "running a torch model")
        return torch.from_numpy(np.ascontiguousarray(array)).to(self.device)

    def logits_tensor(self, x: Any) -> Any:
        """Logits (float64, on the device) of a batch ``x`` already on the device, through the chosen runner.

        The device path's model call (:meth:`to_device` brought the data):
        nothing goes back to the host but what the caller takes. Rows are
        scored in the runner's batch size; the first batch of a shape
        chooses the runner as :meth:`logits` does.

        Raises
        ------
        InputError
            The model fails on the batch, returns another width than
            ``n_classes``, or non-finite scores.
        """
        torch = import_optional("torch", "running a torch model")
        if x.shape[0] == 0:
            return torch.empty((0, self.n_classes), dtype=torch.float64, device=self.device)
        x = self._tensor_in_layout(x)
        try:
            self._active = self._engine(x)
            step = self._active.batch_size
            out = torch.cat([self._active.runner.tensor(x[i : i + step]) for i in range(0, x.shape[0], step)])
        except FitauditError:
            raise
        except Exception as exc:  # the module fails on this input
            raise InputError(
                f"`x`: the {self.described} model failed on a batch of shape {tuple(x[:CHECK_ROWS].shape)} "
                f"({describe_exception(exc)})."
            ) from exc
        self.batch_size = self._active.batch_size
        if out.ndim != 2 or out.shape[0] != x.shape[0] or (self._n_classes is not None and out.shape[1] != self._n_classes):
            raise InputError(f"the {self.described} model returned scores of shape {tuple(out.shape)} for {x.shape[0]} images; "
                             f"expected ({x.shape[0]}, {self._n_classes}).")
        out = out.to(torch.float64)
        if not bool(torch.isfinite(out).all()):
            raise InputError(f"the {self.described} model returned NaN or infinite scores.")
        return out

    def _tensor_in_layout(self, x: Any) -> Any:
        """A channels-first image batch on the device in the model's :attr:`image_layout` (a channels-last Keras
        model), as :meth:`logits` puts host arrays (:func:`fitaudit.models.layout.to_layout`); a batch already in
        the declared shape stays."""
        if self.image_layout is None or x.ndim != 4 or (
            self.input_shape is not None and shape_fits(tuple(x.shape[1:]), self.input_shape)
        ):
            return x
        if self.image_layout == NO_CHANNEL_AXIS:
            return x[:, 0] if x.shape[1] == 1 else x
        moved = x.permute(0, 2, 3, 1)
        return moved.reshape(x.shape[0], -1) if self.image_layout == FLAT else moved.contiguous()

    def logits(self, x: Any) -> np.ndarray:
        """Class scores (logits) of every example, batched, through the chosen backend.

        Parameters
        ----------
        x : array-like, shape (n, ...)

        Returns
        -------
        ndarray of float64, shape (n, k)
        """
        array = self._as_input(x)
        if array.shape[0] == 0:
            return super().logits(array)
        try:
            self._active = self._engine(array)
        except FitauditError:
            raise
        except Exception as exc:  # the module itself fails on this input (the eager reference pass)
            raise InputError(
                f"`x`: the {self.described} model failed on a batch of shape {array[:CHECK_ROWS].shape} "
                f"({describe_exception(exc)})."
            ) from exc
        self.batch_size = self._active.batch_size
        return super().logits(array)

    def _logits_batch(self, x: np.ndarray) -> np.ndarray:
        assert self._active is not None
        return self._active.runner(x)
