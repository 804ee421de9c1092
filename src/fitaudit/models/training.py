"""fitaudit's one trainer: classifiers of any registered architecture, with checkpoints and resume.

:func:`train_epochs` is the training loop every network in fitaudit goes
through (:func:`train_classifier` here, the model zoos of
:mod:`fitaudit.pgdl.zoo`): epoch ``e`` shuffles, flips and draws dropout
from seeds derived from ``(seed, e)``, so a run's weights depend on its
seed and inputs only, and a run resumed at epoch ``e`` continues exactly.
torch's generator is global to a process, so runs in threads of one
process take turns (:data:`TORCH_RNG_LOCK`).

:func:`train_classifier` trains a registered architecture with Adam on
images ``(n, 3, H, W)`` in [0, 1] (augmentation: random horizontal flips,
which keep every class of the Shapes world since all its solids are mirror
symmetric) and shows one progress bar over the epochs. With
``checkpoint_dir`` it writes, after every epoch, one unit of a
:class:`fitaudit.checkpoint.CheckpointStore` keyed by the fingerprint of
everything the weights depend on (architecture and keyword arguments,
schedule and settings, training and validation data, seed, and torch's
CPU thread count, since CPU training gives other weights with another
count):

* ``KEY/epoch-E.safetensors``: the weights and Adam's moment tensors after
  epoch E, written atomically;
* ``KEY.json``: the commit point (epochs done, history, Adam's
  hyper-parameters, the tensor file), written atomically after the tensors.

Called again with the same folder and the same inputs it resumes after the
last finished epoch; a changed setting or data set has another key and
starts afresh, so an old run is never continued with new settings. Nothing
is unpickled. At the end the batch-norm statistics are recomputed over the
training images (:func:`recalibrate_batch_norm`) and the final model is saved
to ``checkpoint_dir/model`` (loadable with :func:`fitaudit.models.io.load_model`).
Every epoch's shuffling and dropout draw from seeds derived from
``(seed, epoch)``, so an interrupted run resumed from its checkpoint ends with
the same weights as an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit._validation import check_array, check_float, check_int, check_labels
from fitaudit.checkpoint import CheckpointStore, atomic_write_bytes, code_fingerprint
from fitaudit.models.architectures import build_architecture
from fitaudit.models.torch_ops import accuracy, as_tensor, device_of
from fitaudit.random import RandomState, as_seed
from fitaudit.results import Result

#: the final model's folder inside ``checkpoint_dir``
MODEL_DIR = "model"

#: torch's random generator (initial weights, dropout) is global to a process, so training
#: runs in threads of one process (a threaded Dask worker) take turns holding this lock
TORCH_RNG_LOCK = threading.RLock()


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """torch's CPU thread count set to ``n`` inside the block, and given back as it was after.

    CPU training and inference give other numbers with another thread count,
    and the count is global to a process: code that sets it without giving
    it back changes the numbers of everything that runs after it.
    """
    torch = import_optional("torch", "setting torch's thread count")
    before = torch.get_num_threads()
    torch.set_num_threads(check_int(n, "n", minimum=1))
    try:
        yield
    finally:
        torch.set_num_threads(before)


@dataclasses.dataclass(repr=False)
class TrainingResult(Result):
    """Outcome of :func:`train_classifier`.

    Attributes
    ----------
    architecture : str
    kwargs : dict
        Architecture keyword arguments.
    n_parameters : int
    epochs : int
        Epochs trained in total (including those of a resumed run).
    history : list of dict
        Per epoch: ``epoch``, ``loss``, ``train_accuracy``,
        ``validation_accuracy`` (None without validation data), ``seconds``.
    validation_accuracy : float or None
        Of the final model (after :func:`recalibrate_batch_norm`); the
        per-epoch figures in ``history`` use the running statistics of
        training time.
    train_seconds : float
        Wall time of all epochs (summed over resumed runs).
    model_dir : str or None
        Where the final model was saved.
    seed : int
        The run's seed (drawn when ``random_state`` was not an int): the
        same seed and inputs give the same weights.
    torch_threads : int
        torch's CPU thread count during training (``torch.get_num_threads()``):
        the same seed gives other weights with another count, so it is part
        of the checkpoint key and of the saved model's ``config.json``.
    """

    architecture: str
    kwargs: dict[str, Any]
    n_parameters: int
    epochs: int
    history: list[dict[str, Any]]
    validation_accuracy: float | None
    train_seconds: float
    model_dir: str | None
    seed: int
    torch_threads: int

    def _summary_fields(self) -> list[str]:
        return ["architecture", "n_parameters", "epochs", "validation_accuracy", "train_seconds", "torch_threads", "model_dir"]


def _check_images(x: Any, name: str) -> np.ndarray:
    images = check_array(x, name, ndim=4, dtype=np.float32, value_range=(0.0, 1.0))
    if images.shape[1] != 3:
        raise InputError(f"`{name}` must be RGB images (n, 3, H, W); got shape {images.shape}.")
    return images


def recalibrate_batch_norm(module: Any, x: np.ndarray, *, batch_size: int = 256) -> None:
    """Replace batch-norm running statistics by their average over ``x`` under the final weights.

    During training the running statistics are exponential averages over
    batches seen with older weights; with Adam's large steps they can lag
    the final weights badly (evaluation accuracy then swings from epoch to
    epoch although the training loss falls smoothly). One pass over the
    training images in train mode, with a cumulative average (momentum
    None), fixes that. Deterministic; leaves ``module`` in eval mode.
    """
    torch = import_optional("torch", "recalibrating batch norm")
    norms = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if norms:
        momenta = [m.momentum for m in norms]
        for norm in norms:
            norm.reset_running_stats()
            norm.momentum = None
        module.train()
        device = device_of(module)
        with torch.no_grad():
            for start in range(0, len(x), batch_size):
                module(as_tensor(x[start : start + batch_size], device))
        for norm, momentum in zip(norms, momenta):
            norm.momentum = momentum
    module.eval()


def _epoch_file(epoch: int) -> str:
    return f"epoch-{epoch}.safetensors"


def _save_epoch(store: CheckpointStore, key: str, module: Any, optimizer: Any, state: dict[str, Any]) -> None:
    """Weights and Adam's tensors, then the JSON commit point; older epoch files are removed."""
    safetensors_torch = import_optional("safetensors.torch", "checkpointing")
    optim = optimizer.state_dict()
    tensors = {f"model.{name}": value.detach().clone().contiguous() for name, value in module.state_dict().items()}
    tensors.update(
        {
            f"optimizer.{index}.{name}": value.detach().clone().contiguous()
            for index, entry in optim["state"].items()
            for name, value in entry.items()
        }
    )
    folder = store.subfolder(key)
    name = _epoch_file(state["epochs_done"])
    atomic_write_bytes(folder / name, safetensors_torch.save(tensors))
    store.save(key, {**state, "tensors": name, "param_groups": optim["param_groups"]})
    for old in folder.glob("epoch-*.safetensors"):
        if old.name != name:
            old.unlink(missing_ok=True)


def _resume(store: CheckpointStore, key: str, module: Any, optimizer: Any) -> tuple[int, list[dict[str, Any]]]:
    """Load the last finished epoch of unit ``key``; return (epochs done, history)."""
    safetensors_torch = import_optional("safetensors.torch", "resuming training")
    state = store.load(key)
    path = store.subfolder(key) / state["tensors"]
    try:
        tensors = safetensors_torch.load_file(str(path))
    except Exception as exc:  # a missing or damaged file: safetensors raises its own types
        raise InputError(
            f"`checkpoint_dir`: the checkpoint {str(path)!r} named by {str(store.path(key))!r} cannot be "
            f"read ({type(exc).__name__}); delete {str(store.path(key))!r} to train this run afresh."
        ) from exc
    weights = {name[len("model.") :]: value for name, value in tensors.items() if name.startswith("model.")}
    module.load_state_dict(weights)
    moments: dict[int, dict[str, Any]] = {}
    for name, value in tensors.items():
        if name.startswith("optimizer."):
            index, field = name[len("optimizer.") :].split(".", 1)
            moments.setdefault(int(index), {})[field] = value
    optimizer.load_state_dict({"state": moments, "param_groups": state["param_groups"]})
    return int(state["epochs_done"]), list(state["history"])


def train_classifier(
    x: Any,
    y: Any,
    *,
    architecture: str = "shapes_alexnet",
    kwargs: dict[str, Any] | None = None,
    x_val: Any = None,
    y_val: Any = None,
    epochs: int = 10,
    batch_size: int = 128,
    learning_rate: float = 2e-3,
    weight_decay: float = 1e-4,
    augment: bool = True,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    metadata: dict[str, Any] | None = None,
    random_state: RandomState = 0,
    progress: bool = True,
    device: str = "cpu",
) -> tuple[Any, TrainingResult]:
    """Train ``architecture`` on (x, y) with Adam; checkpoint and resume per epoch.

    Parameters
    ----------
    x : array (n, 3, H, W) in [0, 1]
    y : array (n,) of int labels
    architecture : str
        A registered architecture (``shapes_alexnet``, ``shapes_resnet``, ...).
    kwargs : dict, optional
        Its keyword arguments; ``n_classes`` defaults to ``max(y) + 1``.
    x_val, y_val : arrays, optional
        Validation data, scored after every epoch.
    epochs, batch_size, learning_rate, weight_decay : training schedule
        (the learning rate follows a cosine decay over ``epochs``, so a run
        of another length is another run: it does not resume this one).
    augment : bool
        Random horizontal flips.
    checkpoint_dir : path, optional
        A :class:`~fitaudit.checkpoint.CheckpointStore` folder: a checkpoint
        after every epoch, keyed by everything above and the data; a call
        with the same inputs resumes from it. The final model is saved to
        ``checkpoint_dir/model``.
    metadata : dict, optional
        JSON stored in the model's config (e.g. class names); not part of
        the checkpoint key.
    random_state : None, int, SeedSequence or Generator, default 0
        Seeds the initial weights, the shuffling and dropout. An int is the
        run's seed; None draws a fresh one (such a run cannot be resumed:
        pass an int with ``checkpoint_dir``).
    progress : bool
        One progress bar over the epochs (stderr), with loss and accuracy.
    device : str
        Torch device the network trains on (``"cuda"`` on a GPU): the
        initial weights are drawn on the CPU (the same for every device),
        then the network and every batch go there. Part of the checkpoint
        key (a GPU's results differ in the last digits). The network is
        returned on that device.

    Returns
    -------
    (torch.nn.Module, TrainingResult)
    """
    torch = import_optional("torch", "training a classifier")
    images = _check_images(x, "x")
    labels = check_labels(y, "y", length=len(images))
    epochs = check_int(epochs, "epochs", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    learning_rate = check_float(learning_rate, "learning_rate", low=0.0, low_inclusive=False)
    weight_decay = check_float(weight_decay, "weight_decay", low=0.0)
    seed = as_seed(random_state)
    from fitaudit.models.torch_adapter import resolve_device

    device = str(resolve_device(device, name="device"))
    threads = int(torch.get_num_threads())
    store = CheckpointStore(checkpoint_dir) if checkpoint_dir is not None else None
    if (x_val is None) != (y_val is None):
        raise InputError("`x_val` and `y_val` must be given together.")
    val = None
    if x_val is not None:
        val_images = _check_images(x_val, "x_val")
        val = (val_images, check_labels(y_val, "y_val", length=len(val_images)))
    arch_kwargs = {"n_classes": int(labels.max()) + 1, **(kwargs or {})}
    config = {
        "architecture": architecture,
        "kwargs": arch_kwargs,
        "n_classes": arch_kwargs["n_classes"],
        "input_shape": list(images.shape[1:]),
        "metadata": metadata or {},
        "torch_threads": threads,
    }
    with TORCH_RNG_LOCK:
        torch.manual_seed(seed)
        module = build_architecture(config).to(device)  # before the optimizer: it holds the parameters
        optimizer = torch.optim.Adam(module.parameters(), lr=learning_rate, weight_decay=weight_decay)
        key = ""
        history: list[dict[str, Any]] = []
        start_epoch = 0
        if store is not None:
            settings = {
                "architecture": architecture, "kwargs": arch_kwargs, "epochs": epochs, "batch_size": batch_size,
                "learning_rate": learning_rate, "weight_decay": weight_decay, "augment": bool(augment), "seed": seed,
                "torch_threads": threads, "device": device,
            }
            key = store.key(_training_code(), settings, images, labels, val)
            if store.has(key):
                start_epoch, history = _resume(store, key, module, optimizer)
        clock = {"started": 0.0}

        def cosine(epoch: int) -> None:
            for group in optimizer.param_groups:
                group["lr"] = learning_rate * 0.5 * (1.0 + np.cos(np.pi * epoch / epochs))
            clock["started"] = time.perf_counter()

        def record(epoch: int, loss: float, train_acc: float) -> bool:
            entry = {
                "epoch": epoch + 1,
                "loss": loss,
                "train_accuracy": train_acc,
                "validation_accuracy": accuracy(module, *val) if val is not None else None,
                "seconds": time.perf_counter() - clock["started"],
            }
            history.append(entry)
            if store is not None:
                _save_epoch(store, key, module, optimizer, {"epochs_done": epoch + 1, "history": history})
            bar.set_postfix(_postfix(entry), refresh=False)
            bar.update(1)
            return False

        bar = tqdm(total=epochs, initial=start_epoch, desc=f"training {architecture}", unit="epoch", disable=not progress)
        try:
            train_epochs(
                module, optimizer, images, labels, batch_size=batch_size, random_state=seed, epochs=epochs,
                start_epoch=start_epoch, augment=augment, before_epoch=cosine, after_epoch=record,
            )
        finally:
            bar.close()
    recalibrate_batch_norm(module, images, batch_size=batch_size)
    model_dir = None
    if store is not None:
        from fitaudit.models.formats.torch_folder import save_torch_model

        model_dir = save_torch_model(module, config, store.folder / MODEL_DIR)
    result = TrainingResult(
        architecture=architecture,
        kwargs=arch_kwargs,
        n_parameters=sum(p.numel() for p in module.parameters()),
        epochs=epochs,
        history=history,
        validation_accuracy=accuracy(module, *val) if val is not None else None,
        train_seconds=float(sum(h["seconds"] for h in history)),
        model_dir=str(model_dir) if model_dir is not None else None,
        seed=seed,
        torch_threads=threads,
    )
    return module, result


def _postfix(record: dict[str, Any]) -> dict[str, str]:
    shown = {"loss": f"{record['loss']:.4f}", "train acc": f"{record['train_accuracy']:.3f}"}
    if record["validation_accuracy"] is not None:
        shown["val acc"] = f"{record['validation_accuracy']:.3f}"
    return shown


def train_epochs(
    module: Any,
    optimizer: Any,
    images: np.ndarray,
    labels: np.ndarray,
    *,
    batch_size: int,
    random_state: int,
    epochs: int,
    start_epoch: int = 0,
    augment: bool = False,
    before_epoch: Callable[[int], None] | None = None,
    after_epoch: Callable[[int, float, float], bool] | None = None,
) -> int:
    """The training loop: epochs ``start_epoch .. epochs - 1`` of minibatch cross-entropy steps.

    Epoch ``e`` shuffles the examples, flips images horizontally (with
    ``augment``) and seeds torch's generator (dropout) from
    ``SeedSequence([random_state, e])``, so the weights depend on ``random_state`` and the
    inputs only, and a run resumed at any epoch ends like an uninterrupted
    one. Hold :data:`TORCH_RNG_LOCK` from seeding the initial weights to the
    end when other threads of the process may train too.

    Parameters
    ----------
    module, optimizer : torch.nn.Module, torch.optim.Optimizer
    images : ndarray (n, C, H, W) of float32
    labels : ndarray (n,) of int64
    batch_size, random_state, epochs, start_epoch : int
    augment : bool
        Random horizontal flips.
    before_epoch : callable, optional
        ``before_epoch(e)`` (e.g. set the learning rate of a schedule).
    after_epoch : callable, optional
        ``after_epoch(e, mean loss, training accuracy)`` (both in train mode,
        over the epoch's batches); training stops when it returns True.

    Returns
    -------
    int
        The epochs done in total (``start_epoch`` included).
    """
    torch = import_optional("torch", "training a network")
    done = start_epoch
    for epoch in range(start_epoch, epochs):
        if before_epoch is not None:
            before_epoch(epoch)
        loss, train_acc = _one_epoch(torch, module, optimizer, images, labels, batch_size, augment, random_state, epoch)
        done = epoch + 1
        if after_epoch is not None and after_epoch(epoch, loss, train_acc):
            break
    return done


def _one_epoch(
    torch: Any,
    module: Any,
    optimizer: Any,
    images: np.ndarray,
    labels: np.ndarray,
    batch_size: int,
    augment: bool,
    seed: int,
    epoch: int,
) -> tuple[float, float]:
    """One pass over shuffled data; returns (mean loss, training accuracy)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, epoch]))
    torch.manual_seed(int(rng.integers(0, 2**31 - 1)))
    order = rng.permutation(len(images))
    flips = rng.random(len(images)) < 0.5 if augment else np.zeros(len(images), dtype=bool)
    module.train()
    device = device_of(module)  # batches go where the module is; only the loss and the count come back
    total_loss, correct = 0.0, 0
    for start in range(0, len(images), batch_size):
        rows = order[start : start + batch_size]
        batch = images[rows]
        batch[flips[rows]] = batch[flips[rows]][..., ::-1]
        xb = torch.from_numpy(np.ascontiguousarray(batch)).to(device)
        yb = torch.from_numpy(labels[rows]).to(device)
        logits = module(xb)
        loss = torch.nn.functional.cross_entropy(logits, yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total_loss += float(loss.detach()) * len(rows)
        correct += int((logits.argmax(1) == yb).sum())
    return total_loss / len(images), correct / len(images)


@functools.cache
def _training_code() -> str:
    """Fingerprint of the training code, part of every run's key (taken once per process, at the first key).

    All of fitaudit's source (:func:`~fitaudit.checkpoint.package_fingerprint`).
    """
    return code_fingerprint(train_classifier)
