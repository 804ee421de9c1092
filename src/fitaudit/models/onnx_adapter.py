"""Adapter for an ONNX model run by onnxruntime.

Two kinds of graph are read as classifiers:

* one whose first output is the class scores (logits), shape ``(n, k)``:
  what :func:`fitaudit.models.formats.onnx.export_onnx` and torch write;
* a converted classical model (skl2onnx, onnxmltools: scikit-learn, XGBoost,
  LightGBM): a label output (``tensor(int64)`` or ``tensor(string)``, shape
  ``(n,)``) and a probability output, a tensor ``(n, k)`` or a ZipMap
  (``seq(map(label, float))``). The scores are the log-probabilities, and
  the class labels the converter recorded (``classlabels_*`` attributes of the
  ZipMap or the classifier node) are the model's classes, the labels it was
  trained on (:mod:`fitaudit.models.labels`).

A graph with several inputs takes a table one column per input, the inputs
named as the columns (skl2onnx's ``initial_types`` for a ``ColumnTransformer``):
the columns are matched by name and each fed in its input's type
(:mod:`fitaudit.models.onnx_columns`).

When neither the graph nor the caller gives the class count, a graph whose
input has a fixed size is run once on zeros to read the width of its scores.

An adapter travels to another process (a joblib worker, a Dask worker) as
its model's file and settings, never as a live session: it pickles as the
file's path and digest (or the model's bytes, for a session opened from
bytes), and the receiving process opens its own session, once per process
and model (:data:`_SESSIONS`, keyed by the digest and the device). A worker
that does not see the same file at the same path says so in one line.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.models.base import SCORES_HINT, Classifier, describe_exception
from fitaudit.models.inference.settings import check_backend, default_backend
from fitaudit.models.layout import CHANNELS_LAST, FLAT, NO_CHANNEL_AXIS, input_spec
from fitaudit.models.onnx_columns import ColumnInputs

#: smallest positive float64: a zero probability gives a finite log (-708), as the scikit-learn adapter
_TINY = float(np.finfo(np.float64).tiny)

#: ONNX types of the label output of a converted classical model
_LABEL_TYPES = ("tensor(int64)", "tensor(string)")

#: sessions this process opened for adapters that arrived pickled, by (model digest, device): one per model
_SESSIONS: dict[tuple[str, str], Any] = {}

#: numpy dtype of each ONNX tensor element type the adapter can feed
_INPUT_DTYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16}


def providers(ort: Any, device: str) -> list[Any]:
    """onnxruntime's execution providers for ``device``: the one rule of every session fitaudit opens.

    ``"cpu"``: the CPU's; ``"cuda"``, ``"gpu"`` or ``"cuda:N"``: CUDA's, then
    the CPU's for operators CUDA lacks (one line where this onnxruntime has no
    CUDAExecutionProvider: onnxruntime-gpu is not installed); ``"cuda:N"``
    names GPU N (the provider's ``device_id`` option), ``"cuda"`` the first.
    """
    if device == "cpu":
        return ["CPUExecutionProvider"]
    if device in ("cuda", "gpu") or device.startswith("cuda:"):
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            raise InputError(
                f"`device` is {device!r} but this onnxruntime has no CUDAExecutionProvider "
                "(install onnxruntime-gpu, or use device='cpu')."
            )
        index = device.partition(":")[2]
        if index and not index.isdigit():
            raise InputError(f"`device` must be 'cpu', 'cuda' or 'cuda:N' for an ONNX model; got {device!r}.")
        cuda: Any = ("CUDAExecutionProvider", {"device_id": int(index)}) if index else "CUDAExecutionProvider"
        return [cuda, "CPUExecutionProvider"]
    raise InputError(f"`device` must be 'cpu' or 'cuda' for an ONNX model; got {device!r}.")


def open_session(source: Any, *, device: str = "cpu", name: str = "model", options: Any = None) -> Any:
    """Open an :class:`onnxruntime.InferenceSession` from a path or bytes.

    Parameters
    ----------
    source : path, bytes or InferenceSession
        An existing session is returned unchanged.
    device : str
        ``"cpu"`` (default) or ``"cuda"`` (needs onnxruntime-gpu).
    name : str
        Argument name used in error messages.
    options : onnxruntime.SessionOptions, optional
        E.g. thread counts (onnxruntime's defaults when None).
    """
    ort = import_optional("onnxruntime", "running an ONNX model")
    if isinstance(source, ort.InferenceSession):
        return source
    if not isinstance(source, (bytes, str, os.PathLike)):
        raise InputError(f"`{name}` must be an ONNX file path, bytes or an InferenceSession; got {type(source).__name__}.")
    target = source if isinstance(source, bytes) else os.fspath(source)
    chosen = providers(ort, str(device))
    try:
        return ort.InferenceSession(target, options, providers=chosen)
    except Exception as exc:  # onnxruntime raises its own exception types
        where = "the given bytes" if isinstance(source, bytes) else f"file {os.fspath(source)!r}"
        raise InputError(f"`{name}`: {where} could not be opened as an ONNX model ({describe_exception(exc)}).") from exc


def onnx_class_labels(source: Any) -> list[Any] | None:
    """The class labels a converted classifier records (skl2onnx, onnxmltools), in output order, or None.

    Read from the ZipMap node's ``classlabels_strings``/``classlabels_int64s``,
    else from the last node (a ``TreeEnsembleClassifier``, ``LinearClassifier``,
    ``SVMClassifier``...) that has them. ``source`` is a path or bytes; a
    session (whose graph is not readable) gives None.
    """
    if not isinstance(source, (bytes, str, os.PathLike)):
        return None
    onnx = import_optional("onnx", "reading an ONNX model's class labels")
    try:
        proto = onnx.load_model_from_string(source) if isinstance(source, bytes) else onnx.load_model(
            os.fspath(source), load_external_data=False)
    except Exception:  # unreadable here: onnxruntime's own error comes when the session is opened
        return None
    found: list[Any] | None = None
    for node in proto.graph.node:
        for attribute in node.attribute:
            if attribute.name == "classlabels_strings" and attribute.strings:
                labels: list[Any] = [v.decode() for v in attribute.strings]
            elif attribute.name in ("classlabels_int64s", "classlabels_ints") and attribute.ints:
                labels = [int(v) for v in attribute.ints]
            else:
                continue
            if node.op_type == "ZipMap":
                return labels
            found = labels
    return found


class OnnxClassifier(Classifier):
    """An ONNX model with one input (or one input per table column, named as the column) and the logits as
    its first output, or a converted classifier's label and probability outputs (module docstring).

    Parameters
    ----------
    source : path, bytes or onnxruntime.InferenceSession
    n_classes : int, optional
        Defaults to the static width of the first output, or the width of
        the first output computed.
    batch_size : int
    device : str
        ``"cpu"`` (default) or ``"cuda"`` (CUDAExecutionProvider).
    backend : {"auto", "onnx"}, optional
        An ONNX model always runs in onnxruntime; ``"torch"`` (named here or
        the process default, ``--backend torch``) is an :class:`InputError`.
    """

    kind = "onnx"

    def __init__(
        self,
        source: Any,
        *,
        n_classes: int | None = None,
        batch_size: int = 256,
        device: str = "cpu",
        backend: str | None = None,
    ) -> None:
        if (default_backend() if backend is None else check_backend(backend)) == "torch":
            raise InputError(
                "`backend` is 'torch' but the model is an ONNX model, which runs in onnxruntime; "
                "use backend 'onnx' or 'auto'."
            )
        session = open_session(source, device=device)
        inputs = session.get_inputs()
        self.input_name = inputs[0].name
        #: a graph with one input per table column, named as the column (None: one input, the examples)
        self.columns = ColumnInputs(inputs) if len(inputs) > 1 else None
        if self.columns is not None:
            self.feature_names = self.columns.names
        elif inputs[0].type not in _INPUT_DTYPES:
            raise InputError(
                f"`model`: the ONNX input {self.input_name!r} has type {inputs[0].type}; "
                "expected a float tensor."
            )
        else:
            self.input_dtype = np.dtype(_INPUT_DTYPES[inputs[0].type])
        dims = inputs[0].shape
        if dims and self.columns is None:  # static sizes are checked, symbolic ones (strings, None) are free
            self.input_shape = tuple(d if isinstance(d, int) else None for d in dims[1:])
            layout = input_spec(self.input_shape).layout
            self.image_layout = layout if layout in (CHANNELS_LAST, NO_CHANNEL_AXIS, FLAT) else None
        outputs = session.get_outputs()
        #: the output read as scores: the first, or a converted classifier's probabilities
        self.scores_output, self.zipmap = 0, False
        labels = None
        if len(outputs) >= 2 and outputs[0].type in _LABEL_TYPES:  # label + probabilities (skl2onnx, onnxmltools)
            self.scores_output = 1
            self.zipmap = outputs[1].type.startswith("seq(map(")
            origin = getattr(session, "_model_bytes", None) or getattr(session, "_model_path", None)
            labels = onnx_class_labels(source if isinstance(source, (bytes, str, os.PathLike)) else origin)
        #: the labels a converted classifier was trained on (None: its outputs are indices)
        self.classes = None if labels is None else np.asarray(labels)
        scores = outputs[self.scores_output]
        if not self.zipmap and (scores.type == "tensor(bool)" or (scores.shape is not None and len(scores.shape) == 1)
                                or (scores.shape and scores.shape[-1] == 1)):
            raise InputError(
                f"`model`: the ONNX output {scores.name!r} is {scores.type} of shape {scores.shape}; fitaudit needs "
                f"class scores of shape (n, k), k >= 2 (logits or probabilities): {SCORES_HINT}"
            )
        width = scores.shape[-1] if scores.shape else None
        if n_classes is None and labels is not None:
            n_classes = len(labels)
        if n_classes is None and isinstance(width, int) and width >= 2:
            n_classes = width
        super().__init__(session, n_classes=n_classes, batch_size=batch_size)
        self.device = device
        if self._n_classes is None and self.input_shape and all(isinstance(d, int) for d in self.input_shape):
            try:  # reads the width of the scores; a graph that refuses zeros tells its width at its first call
                self.logits(np.zeros((1, *self.input_shape), dtype=self.input_dtype))
            except InputError:
                self._n_classes = None

    def _as_input(self, x: Any) -> Any:
        """A table for a graph with one input per column (its columns matched by name, each in its input's type,
        :class:`~fitaudit.models.onnx_columns.ColumnInputs`); otherwise the examples as one array."""
        if self.columns is not None:
            return self.columns.table(x, self.kind)
        return super()._as_input(x)

    def _logits_batch(self, x: Any) -> np.ndarray:
        fed = self.columns.feed(x) if self.columns is not None else {self.input_name: x}
        if self.scores_output == 0:
            return self.model.run(None, fed)[0]
        name = self.model.get_outputs()[self.scores_output].name
        proba = self.model.run([name], fed)[0]
        if self.zipmap:  # one {label: probability} per row, in the recorded label order
            order = list(self.classes) if self.classes is not None else sorted(proba[0]) if len(proba) else []
            proba = [[row[label] for label in order] for row in proba]
        return np.log(np.maximum(np.asarray(proba, dtype=np.float64), _TINY))

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as the model's file (path and digest) or bytes and the settings; the session stays here."""
        state = self.__dict__.copy()
        data = getattr(self.model, "_model_bytes", None)
        state["model"] = None
        state["_origin"] = ("bytes", bytes(data)) if data is not None else ("file", self._model_file(), self._digest())
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        origin = state.pop("_origin")
        self.__dict__.update(state)
        self.model = _reopen(origin, str(self.device))

    def _model_file(self) -> str:
        path = getattr(self.model, "_model_path", None)
        if path is None:
            raise InputError("`model`: this ONNX session cannot go to another process (neither its bytes nor its "
                             "file are known); open it from a file or bytes.")
        return os.path.abspath(path)

    def _digest(self) -> str:
        """The model file's digest, computed once per adapter (every pickle carries it)."""
        digest = self.__dict__.get("_file_digest")
        if digest is None:
            from fitaudit.models.onnx_files import onnx_digest

            digest = self._file_digest = onnx_digest(self._model_file(), with_name=False)
        return digest

    def _fingerprint_source(self) -> Any:
        """The model's bytes, or for a session opened from a path its file's digest (external data files included)."""
        data = getattr(self.model, "_model_bytes", None)
        path = getattr(self.model, "_model_path", None)
        if data is None and path is not None and os.path.isfile(path):
            from fitaudit.models.onnx_files import onnx_digest

            return "onnx-file:" + onnx_digest(path, with_name=False)
        if data is None:
            raise InputError("`model`: cannot fingerprint this ONNX session (neither its bytes nor its file are known).")
        return bytes(data)


def _reopen(origin: tuple[Any, ...], device: str) -> Any:
    """The session of a pickled adapter's model in this process: opened once per model and device (:data:`_SESSIONS`).

    ``origin`` is ``("bytes", data)`` or ``("file", path, digest)``; a file
    that is missing here, or differs from the one the adapter was made
    from, is an :class:`InputError` naming the path.
    """
    import hashlib

    from fitaudit.models.onnx_files import onnx_digest

    kind, source = origin[0], origin[1]
    digest = hashlib.sha256(source).hexdigest() if kind == "bytes" else origin[2]
    session = _SESSIONS.get((digest, device))
    if session is not None:
        return session
    if kind == "file":
        if not os.path.isfile(source):
            raise InputError(f"`model`: the ONNX file {source!r} does not exist on this worker "
                             f"({_host()}); every worker must see the model file at the same path.")
        if onnx_digest(source, with_name=False) != digest:
            raise InputError(f"`model`: the ONNX file {source!r} on this worker ({_host()}) is not the file the run "
                             "started with (its content differs).")
    session = _SESSIONS[(digest, device)] = open_session(source, device=device)
    return session


def _host() -> str:
    import socket

    return f"host {socket.gethostname()}, process {os.getpid()}"
