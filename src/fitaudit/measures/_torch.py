"""Torch helpers shared by the complexity measures (private).

Everything here works on any ``torch.nn.Module`` built from standard layers
(Conv2d, BatchNorm2d, ReLU, MaxPool2d, Flatten, Linear, Dropout,
AdaptiveAvgPool2d, ...): modules are walked in registration order
(``model.modules()``), which is the forward order of ``nn.Sequential`` nets
and of the PGDL task loader's models; representations are read with forward
hooks. torch is imported lazily.

Device: the measures run where the model is. The scoring harness moves
each model to its device once
(:func:`fitaudit.models.torch_adapter.move_model`); every batch is sent to
the model's device (:func:`fitaudit.models.torch_ops.device_of`) and only numbers (floats, per-example
arrays) come back. Random draws are made by a CPU generator and then moved,
so a seed gives the same noise on every device.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.models.torch_ops import as_tensor, device_of

#: activation modules (Keras fuses these into the layer before them)
_ACTIVATIONS = ("ReLU", "LeakyReLU", "ELU", "GELU", "Tanh", "Sigmoid", "Softplus", "SiLU", "ReLU6")


def torch_() -> Any:
    """The torch module (a clear error naming the extra when it is missing)."""
    return import_optional("torch", "complexity measures")


def on_model_device(model: Any, x: Any) -> Any:
    """``x`` (array or tensor) as a float32 tensor on ``model``'s device: send a batch once, reuse it."""
    return as_tensor(x, device_of(model))


def labels_on(model: Any, y: np.ndarray) -> Any:
    """Integer labels ``y`` as an int64 tensor on ``model``'s device."""
    return torch_().as_tensor(np.asarray(y, dtype=np.int64)).to(device_of(model))


def host(tensor: Any) -> np.ndarray:
    """A tensor's values as a float64 numpy array on the host (the numbers that come back from the device)."""
    return np.asarray(tensor.detach().to("cpu", torch_().float64).numpy())


def generator(rng: np.random.Generator) -> Any:
    """A torch generator seeded from ``rng`` (so numpy and torch draws follow one seed)."""
    g = torch_().Generator()
    g.manual_seed(int(rng.integers(0, 2**62)))
    return g


def check_record_data(record: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The record's training data as arrays, checked (non-empty, same length, int labels)."""
    x = np.asarray(record.train_x)
    y = np.asarray(record.train_y)
    if x.ndim < 2 or x.shape[0] == 0:
        raise InputError(
            f"measure {name!r} needs `record.train_x` of shape (m, ...) with m >= 1; got shape {x.shape}."
        )
    if y.shape != (x.shape[0],):
        raise InputError(
            f"measure {name!r} needs `record.train_y` of shape ({x.shape[0]},); got shape {y.shape}."
        )
    if not np.issubdtype(y.dtype, np.integer):
        if not np.all(np.equal(np.mod(y, 1), 0)):
            raise InputError(
                f"measure {name!r} needs integer `record.train_y`; got dtype {y.dtype}."
            )
        y = y.astype(np.int64)
    return x.astype(np.float32, copy=False), y.astype(np.int64, copy=False)


def eval_copy(model: Any) -> Any:
    """A deep copy of ``model`` in eval mode (measures never touch the caller's model)."""
    clone = copy.deepcopy(model)
    clone.eval()
    return clone


def predict(model: Any, x: np.ndarray, batch_size: int = 512) -> Any:
    """Logits of ``model`` on ``x`` run by eager torch (no gradients), a float tensor (n, k).

    For loops that change the weights in place (sharpness, PAC-Bayes
    perturbations) and for training: there the inference path would choose
    a backend again after every change. A model whose weights stay as they
    are is run by :func:`device_output_function`.
    """
    torch = torch_()
    device = device_of(model)
    outs = []
    with torch.no_grad():
        for start in range(0, len(x), batch_size):
            outs.append(model(as_tensor(x[start : start + batch_size], device)).float())
    return torch.cat(outs)


def device_output_function(model: Any) -> Callable[[Any], Any]:
    """``f(x) -> logits`` (float32 tensor, on the model's device) of a batch ``x`` already there.

    The one inference path: :func:`fitaudit.models.as_classifier` runs
    ``model`` (put in eval mode) on the fastest backend whose logits agree
    with eager torch on a check batch (:mod:`fitaudit.models.inference`); the
    choice is cached by the weights' fingerprint, so the measures that need
    the same network's outputs choose once. An ONNX file wrapped for the
    measures (``model_format = "onnx"``) already runs in onnxruntime and is
    called as it is. The batch stays on the device
    (:meth:`fitaudit.models.torch_adapter.TorchClassifier.logits_tensor`),
    for measures that reduce the outputs there and bring back only
    per-example numbers.
    """
    if getattr(model, "model_format", "torch") != "torch":
        return lambda x: predict(model, x)
    from fitaudit.models import as_classifier

    # a TorchClassifier; as_classifier moves the module: keep it where it is
    classifier: Any = as_classifier(model, device=device_of(model))
    return lambda x: classifier.logits_tensor(x).float()


def n_outputs(model: Any, x: np.ndarray) -> int:
    """Number of logits of ``model`` (one forward pass)."""
    return int(predict(model, x[:1]).shape[1])


def margins(logits: Any, y: np.ndarray) -> Any:
    """Per-example output margins (float64, where ``logits`` are): true-class logit minus the largest other logit.

    ``logits``: a tensor (n, k); ``y``: integer labels (n,) on the host.
    """
    torch = torch_()
    labels = np.asarray(y, dtype=np.int64)
    if labels.size and int(labels.max()) >= logits.shape[1]:
        raise InputError(
            f"`record.train_y` holds label {int(labels.max())} but the model outputs {logits.shape[1]} logits."
        )
    idx = torch.as_tensor(labels, device=logits.device)[:, None]
    z = logits.double()
    others = z.scatter(1, idx, float("-inf"))
    return (z.gather(1, idx) - others.max(dim=1, keepdim=True).values)[:, 0]


def margin_gamma(model: Any, x: np.ndarray, y: np.ndarray, batch_size: int = 512) -> float:
    """The Fantastic margin gamma: |10th percentile of the output margins| on the training set.

    As the reference code (``torch.kthvalue(margins, m // 10)``, then the
    absolute value): the ``max(1, m // 10)``-th smallest margin. Each batch
    goes to the model's device once; the model (:func:`device_output_function`,
    the runner of :func:`output_function`) and the margins run there, and only the
    per-example margins come back. The model's train/eval mode is kept.
    """
    torch = torch_()
    was_training = model.training
    try:
        run = device_output_function(model)
        with torch.no_grad():
            per_batch = [host(margins(run(on_model_device(model, x[sl])), y[sl]))
                         for sl in iterate_batches(len(x), batch_size)]
    finally:
        model.train(was_training)
    values = np.sort(np.concatenate(per_batch))
    k = max(1, len(values) // 10)
    gamma = abs(float(values[k - 1]))
    if gamma == 0.0:
        raise InputError(
            "the 10th-percentile output margin is 0; margin-normalised measures are undefined."
        )
    return gamma


# ----------------------------------------------------------------------------- layers


def leaf_modules(model: Any) -> list[Any]:
    """Modules without children, in registration (forward) order."""
    return [m for m in model.modules() if not list(m.children())]


def is_weight_layer(module: Any) -> bool:
    """A convolution or a linear layer (the layers whose weights the measures read)."""
    nn = torch_().nn
    return isinstance(module, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear))


def weight_layers(model: Any) -> list[Any]:
    """Convolutions and linear layers of ``model`` in forward order."""
    layers = [m for m in leaf_modules(model) if is_weight_layer(m)]
    if not layers:
        raise InputError(
            "`record.model` has no convolution or linear layer; the measure needs weights."
        )
    return layers


def weights(model: Any) -> list[Any]:
    """The "weights" of Jiang et al.: kernels of convolutions and linear layers (no biases, no BN)."""
    return [m.weight.detach() for m in weight_layers(model)]


def parameters(model: Any) -> list[Any]:
    """Every trainable parameter (biases and batch-norm scales included), detached."""
    return [p.detach() for p in model.parameters()]


def matched_parameters(model: Any, initial: Any, what: str = "parameters") -> list[tuple[Any, Any]]:
    """Pairs (trained, initial) of ``parameters``; shapes must agree."""
    pairs = list(zip(parameters(model), parameters(initial)))
    if len(pairs) != len(list(model.parameters())) or len(pairs) != len(list(initial.parameters())):
        raise InputError("`record.initial_model` must have the same parameters as `record.model`.")
    for p, q in pairs:
        if p.shape != q.shape:
            raise InputError(
                f"`record.initial_model` must have the same {what} shapes as `record.model`; "
                f"got {tuple(q.shape)} where the model has {tuple(p.shape)}."
            )
    return pairs


def matched_weights(model: Any, initial: Any) -> list[tuple[Any, Any]]:
    """Pairs (W, W0) of ``weights`` of the trained and initial networks."""
    ws, w0s = weights(model), weights(initial)
    if len(ws) != len(w0s) or any(w.shape != v.shape for w, v in zip(ws, w0s)):
        raise InputError(
            "`record.initial_model` must have the same layers and weight shapes as `record.model`."
        )
    return list(zip(ws, w0s))


def fold_batchnorm(model: Any) -> Any:
    """A copy of ``model`` (eval mode) with every batch norm folded into the layer right before it.

    Jiang et al.'s reference (``_reparam``): for a BatchNorm directly after a
    convolution (or a linear layer, our extension for BatchNorm1d), with
    ``s = gamma / sqrt(var + eps)``, the layer's weight becomes ``s * W``
    (per output channel) and its bias ``beta + s * (b - mean)``; the batch
    norm becomes the identity. The reference sets ``running_var = 1``, which
    leaves a factor ``1 / sqrt(1 + eps)``; we set ``running_var = 1 - eps`` so
    the folded network computes exactly the same function. A batch norm that
    does not directly follow a convolution/linear layer (e.g. after a ReLU)
    is left as it is (the reference would fold it into the last convolution
    seen, changing the function).
    """
    torch = torch_()
    nn = torch.nn
    folded = eval_copy(model)
    previous = None
    with torch.no_grad():
        for module in leaf_modules(folded):
            if isinstance(module, nn.modules.batchnorm._BatchNorm) and previous is not None:
                if module.running_mean is None or module.running_var is None:
                    previous = module
                    continue
                scale = 1.0 / torch.sqrt(module.running_var + module.eps)
                shift = -module.running_mean * scale
                if module.affine:
                    shift = module.bias + module.weight * shift
                    scale = module.weight * scale
                if previous.bias is None:
                    previous.bias = nn.Parameter(torch.zeros_like(module.running_mean))
                shape = [-1] + [1] * (previous.weight.dim() - 1)
                previous.weight.mul_(scale.reshape(shape))
                previous.bias.copy_(scale * previous.bias + shift)
                if module.affine:
                    module.weight.fill_(1.0)
                    module.bias.fill_(0.0)
                module.running_mean.fill_(0.0)
                module.running_var.fill_(1.0 - module.eps)
                previous = None
                continue
            previous = module if is_weight_layer(module) else None
    return folded


def spectral_norm(matrix: Any) -> float:
    """Largest singular value of a weight reshaped to (out, -1)."""
    torch = torch_()
    w = matrix.reshape(matrix.shape[0], -1).double()
    return float(torch.linalg.matrix_norm(w, ord=2))


def conv_spectral_norm_fft(kernel: Any, input_hw: tuple[int, int]) -> float:
    """Exact spectral norm of a 2-D convolution with circular padding (Sedghi et al., ICLR 2019).

    The kernel (out, in, kh, kw) is Fourier-transformed to the input's
    spatial size; the operator's singular values are those of the (out, in)
    matrices at each frequency (the reference's ``_spectral_norm_fft``).
    """
    k = np.einsum("oihw->hwoi", host(kernel))
    size = (max(input_hw[0], k.shape[0]), max(input_hw[1], k.shape[1]))
    transforms = np.fft.fft2(k, size, axes=(0, 1))
    return float(np.linalg.svd(transforms, compute_uv=False).max())


def layer_input_shapes(model: Any, x: np.ndarray) -> dict[int, tuple[int, ...]]:
    """Shape (without batch) of the input of every weight layer, keyed by ``id(module)``."""
    shapes: dict[int, tuple[int, ...]] = {}
    hooks = [
        m.register_forward_hook(
            lambda mod, inp, out: shapes.__setitem__(id(mod), tuple(inp[0].shape[1:]))
        )
        for m in weight_layers(model)
    ]
    try:
        predict(model, x[:1])
    finally:
        for h in hooks:
            h.remove()
    return shapes


def layer_spectral_norms(
    model: Any, x: np.ndarray | None = None, exact_conv: bool = False
) -> list[float]:
    """Spectral norm of each weight layer (reshaped, or the exact FFT spectrum for 2-D convolutions)."""
    torch = torch_()
    norms = []
    shapes = layer_input_shapes(model, x) if exact_conv and x is not None else {}
    for module in weight_layers(model):
        if exact_conv and isinstance(module, torch.nn.Conv2d) and id(module) in shapes:
            hw = shapes[id(module)][-2:]
            norms.append(conv_spectral_norm_fft(module.weight, (int(hw[0]), int(hw[1]))))
        else:
            norms.append(spectral_norm(module.weight.detach()))
    return norms


# ----------------------------------------------------------------------------- representations


def _fused_output_module(model: Any, index: int) -> Any:
    """The leaf at ``index``, or the activation right after it (Keras fuses activations into layers)."""
    leaves = leaf_modules(model)
    module = leaves[index]
    if index + 1 < len(leaves) and type(leaves[index + 1]).__name__ in _ACTIVATIONS:
        return leaves[index + 1]
    return module


def early_module(model: Any) -> Any:
    """The first layer with weights (its output after its activation, as a Keras layer gives it).

    The first-place PGDL entry (Natekar & Sharma) takes the first Keras layer
    whose config has ``filters`` or ``units``, i.e. the first convolution (or
    dense layer), whose output includes its fused activation.
    """
    leaves = leaf_modules(model)
    for i, m in enumerate(leaves):
        if is_weight_layer(m):
            return _fused_output_module(model, i)
    raise InputError("`record.model` has no convolution or linear layer.")


#: leaves that do not end a Keras-style model's representation (skipped from the end)
_PASS_THROUGH = (
    *_ACTIVATIONS,
    "Flatten",
    "Dropout",
    "Dropout2d",
    "Identity",
    "Softmax",
    "LogSoftmax",
)


def last_layer(model: Any) -> Any:
    """The last leaf that computes something (activations, Flatten, Dropout skipped).

    Its *input* is the penultimate representation, as ``model.layers[-1]``'s
    input in the Keras models of the PGDL entries (the last dense layer's
    input; the feature maps before global average pooling in GAP nets).
    """
    for module in reversed(leaf_modules(model)):
        if type(module).__name__ not in _PASS_THROUGH:
            return module
    raise InputError("`record.model` has no layer that computes a representation.")


def capture(
    model: Any, module: Any, x: Any, *, output: bool = True, keep_graph: bool = False
) -> tuple[Any, Any]:
    """Run ``model`` on tensor ``x``; return (logits, the output or input of ``module``)."""
    torch = torch_()
    store: list[Any] = []

    def hook(mod: Any, inp: Any, out: Any) -> None:
        store.append(out if output else inp[0])

    handle = module.register_forward_hook(hook)
    try:
        if keep_graph:
            logits = model(x)
        else:
            with torch.no_grad():
                logits = model(x)
    finally:
        handle.remove()
    if not store:
        raise InputError("the representation layer was not reached in the forward pass.")
    return logits, store[0]


def iterate_batches(n: int, batch_size: int) -> Iterator[slice]:
    """Consecutive slices of ``range(n)``."""
    for start in range(0, n, batch_size):
        yield slice(start, min(n, start + batch_size))


# ----------------------------------------------------------------------------- searches


def bisect_sigma(
    drop_at: Callable[[float], float],
    *,
    lower: float = 0.0,
    upper: float = 2.0,
    steps: int = 15,
    target: float = 0.1,
    tolerance: float = 0.01,
) -> float:
    """Bisection for the perturbation scale whose accuracy drop is ``target``.

    Jiang et al.'s reference (``_pacbayes_sigma``) and the PGDL sharpness
    baseline: at each step try the midpoint; stop when ``|drop - target| <
    tolerance``; too large a drop moves the upper end down, too small the
    lower end up. Returns the last midpoint tried.
    """
    sigma = (lower + upper) / 2
    for _ in range(steps):
        sigma = (lower + upper) / 2
        drop = drop_at(sigma)
        if abs(drop - target) < tolerance:
            break
        if drop > target:
            upper = sigma
        else:
            lower = sigma
    return sigma


def subsample(
    x: np.ndarray, y: np.ndarray, n: int | None, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """At most ``n`` examples drawn without replacement (all of them when ``n`` is None or larger)."""
    if n is None or n >= len(x):
        return x, y
    idx = np.sort(rng.choice(len(x), size=n, replace=False))
    return x[idx], y[idx]


def fantastic_scale(value: float, m: int, log: bool) -> float:
    """Jiang et al.'s final scaling: ``0.5 (v - log m)`` for log measures, ``sqrt(v / m)`` otherwise."""
    if log:
        return 0.5 * (value - float(np.log(m)))
    if value < 0:
        raise InputError(f"a non-log Fantastic measure must be >= 0 before scaling; got {value}.")
    return float(np.sqrt(value / m))
