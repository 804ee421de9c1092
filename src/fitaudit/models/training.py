"""Training of the Shapes reference classifiers, with checkpoints and resume.

:func:`train_classifier` trains a registered architecture with Adam on
images ``(n, 3, H, W)`` in [0, 1] (augmentation: random horizontal flips,
which keep every class of the world since all its solids are mirror
symmetric), shows a tqdm bar per epoch and, with ``checkpoint_dir``, writes
after every epoch

* ``model/weights.safetensors`` + ``model/config.json`` (the model, loadable
  with :func:`fitaudit.models.io.load_model`),
* ``optimizer.safetensors`` + ``state.json`` (Adam's moment tensors, its
  hyper-parameters, the finished epochs and the history),

and resumes from them when called again with the same folder: nothing is
unpickled. At the end the batch-norm statistics are recomputed over the
training images (:func:`recalibrate_batch_norm`) and the final model is
saved again. Every epoch's shuffling and dropout draw from seeds derived from
``(random_state, epoch)``, so an interrupted run resumed from its
checkpoint ends with the same weights as an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit._validation import check_array, check_float, check_int, check_labels
from fitaudit.models.architectures import build_architecture
from fitaudit.results import Result

STATE_FILE = "state.json"
OPTIMIZER_FILE = "optimizer.safetensors"
MODEL_DIR = "model"


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
    """

    architecture: str
    kwargs: dict[str, Any]
    n_parameters: int
    epochs: int
    history: list[dict[str, Any]]
    validation_accuracy: float | None
    train_seconds: float
    model_dir: str | None

    def _summary_fields(self) -> list[str]:
        return ["architecture", "n_parameters", "epochs", "validation_accuracy", "train_seconds", "model_dir"]


def _check_images(x: Any, name: str) -> np.ndarray:
    images = check_array(x, name, ndim=4, dtype=np.float32, value_range=(0.0, 1.0))
    if images.shape[1] != 3:
        raise InputError(f"`{name}` must be RGB images (n, 3, H, W); got shape {images.shape}.")
    return images


def accuracy(module: Any, x: np.ndarray, y: np.ndarray, *, batch_size: int = 512) -> float:
    """Fraction of ``x`` that ``module`` (in eval mode) classifies as ``y``."""
    torch = import_optional("torch", "evaluating a torch model")
    module.eval()
    correct = 0
    with torch.no_grad():
        for start in range(0, len(x), batch_size):
            logits = module(torch.from_numpy(np.ascontiguousarray(x[start : start + batch_size])))
            correct += int((logits.argmax(1).numpy() == y[start : start + batch_size]).sum())
    return correct / len(x)


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
        with torch.no_grad():
            for start in range(0, len(x), batch_size):
                module(torch.from_numpy(np.ascontiguousarray(x[start : start + batch_size])))
        for norm, momentum in zip(norms, momenta):
            norm.momentum = momentum
    module.eval()


def _save_optimizer(optimizer: Any, folder: Path) -> dict[str, Any]:
    """Adam's tensors to safetensors; its hyper-parameters returned as JSON."""
    safetensors_torch = import_optional("safetensors.torch", "checkpointing")
    state = optimizer.state_dict()
    tensors = {
        f"{index}.{key}": value.detach().clone().contiguous()
        for index, entry in state["state"].items()
        for key, value in entry.items()
    }
    safetensors_torch.save_file(tensors, str(folder / OPTIMIZER_FILE))
    return {"param_groups": state["param_groups"]}


def _load_optimizer(optimizer: Any, folder: Path, groups: dict[str, Any]) -> None:
    safetensors_torch = import_optional("safetensors.torch", "resuming training")
    tensors = safetensors_torch.load_file(str(folder / OPTIMIZER_FILE))
    state: dict[int, dict[str, Any]] = {}
    for name, value in tensors.items():
        index, key = name.split(".", 1)
        state.setdefault(int(index), {})[key] = value
    optimizer.load_state_dict({"state": state, "param_groups": groups["param_groups"]})


def _write_checkpoint(folder: Path, module: Any, optimizer: Any, config: dict[str, Any], state: dict[str, Any]) -> None:
    from fitaudit.models.io import save_torch_model

    folder.mkdir(parents=True, exist_ok=True)
    save_torch_model(module, config, folder / MODEL_DIR)
    state = {**state, "optimizer": _save_optimizer(optimizer, folder)}
    tmp = folder / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    os.replace(tmp, folder / STATE_FILE)  # the state file is the commit point


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
    random_state: int = 0,
    progress: bool = True,
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
        (the learning rate follows a cosine decay over ``epochs``).
    augment : bool
        Random horizontal flips.
    checkpoint_dir : path, optional
        Write a checkpoint after every epoch and resume from one found there.
    metadata : dict, optional
        JSON stored in the model's config (e.g. class names).
    random_state : int
        Seeds the initial weights, the shuffling and dropout.
    progress : bool
        Show progress bars.

    Returns
    -------
    (torch.nn.Module, TrainingResult)
    """
    torch = import_optional("torch", "training a Shapes classifier")
    images = _check_images(x, "x")
    labels = check_labels(y, "y", length=len(images))
    epochs = check_int(epochs, "epochs", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    learning_rate = check_float(learning_rate, "learning_rate", low=0.0, low_inclusive=False)
    weight_decay = check_float(weight_decay, "weight_decay", low=0.0)
    seed = check_int(random_state, "random_state", minimum=0)
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
    }
    torch.manual_seed(seed)
    module = build_architecture(config)
    optimizer = torch.optim.Adam(module.parameters(), lr=learning_rate, weight_decay=weight_decay)
    folder = Path(checkpoint_dir) if checkpoint_dir is not None else None
    history: list[dict[str, Any]] = []
    start_epoch = 0
    if folder is not None and (folder / STATE_FILE).is_file():
        start_epoch, history = _resume(folder, module, optimizer, config, epochs)
    for epoch in range(start_epoch, epochs):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate * 0.5 * (1.0 + np.cos(np.pi * epoch / epochs))
        started = time.perf_counter()
        loss, train_acc = _one_epoch(torch, module, optimizer, images, labels, batch_size, augment, seed, epoch, progress)
        record = {
            "epoch": epoch + 1,
            "loss": loss,
            "train_accuracy": train_acc,
            "validation_accuracy": accuracy(module, *val) if val is not None else None,
            "seconds": time.perf_counter() - started,
        }
        history.append(record)
        if progress:
            tqdm.write(
                f"epoch {epoch + 1}/{epochs}: loss {loss:.4f}, train acc {train_acc:.3f}"
                + (f", val acc {record['validation_accuracy']:.3f}" if val is not None else ""),
                file=sys.stderr,
            )
        if folder is not None:
            _write_checkpoint(folder, module, optimizer, config, {"epochs_done": epoch + 1, "history": history, "config": config})
    recalibrate_batch_norm(module, images, batch_size=batch_size)
    if folder is not None:
        from fitaudit.models.io import save_torch_model

        save_torch_model(module, config, folder / MODEL_DIR)
    result = TrainingResult(
        architecture=architecture,
        kwargs=arch_kwargs,
        n_parameters=sum(p.numel() for p in module.parameters()),
        epochs=epochs,
        history=history,
        validation_accuracy=accuracy(module, *val) if val is not None else None,
        train_seconds=float(sum(h["seconds"] for h in history)),
        model_dir=str(folder / MODEL_DIR) if folder is not None else None,
    )
    return module, result


def _resume(folder: Path, module: Any, optimizer: Any, config: dict[str, Any], epochs: int) -> tuple[int, list[dict[str, Any]]]:
    """Load a checkpoint written by :func:`_write_checkpoint`; return (epochs done, history)."""
    from fitaudit.models.io import load_torch_module

    try:
        state = json.loads((folder / STATE_FILE).read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"`checkpoint_dir`: {str(folder / STATE_FILE)!r} is not valid JSON ({exc}).") from exc
    if state.get("config", {}).get("architecture") != config["architecture"] or state["config"]["kwargs"] != config["kwargs"]:
        raise InputError(
            f"`checkpoint_dir` {str(folder)!r} holds a checkpoint of {state.get('config')!r}, not of "
            f"{config['architecture']!r} with {config['kwargs']}; use another folder."
        )
    done = int(state["epochs_done"])
    if done > epochs:
        raise InputError(f"`epochs` ({epochs}) is smaller than the {done} epochs already in `checkpoint_dir`.")
    module.load_state_dict(load_torch_module(folder / MODEL_DIR, name="checkpoint_dir").state_dict())
    _load_optimizer(optimizer, folder, state["optimizer"])
    return done, list(state["history"])


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
    progress: bool,
) -> tuple[float, float]:
    """One pass over shuffled data; returns (mean loss, training accuracy)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, epoch]))
    torch.manual_seed(int(rng.integers(0, 2**31 - 1)))
    order = rng.permutation(len(images))
    flips = rng.random(len(images)) < 0.5 if augment else np.zeros(len(images), dtype=bool)
    module.train()
    total_loss, correct = 0.0, 0
    batches = range(0, len(images), batch_size)
    for start in tqdm(batches, desc=f"epoch {epoch + 1}", disable=not progress, leave=False, unit="batch"):
        rows = order[start : start + batch_size]
        batch = images[rows]
        batch[flips[rows]] = batch[flips[rows]][..., ::-1]
        xb = torch.from_numpy(np.ascontiguousarray(batch))
        yb = torch.from_numpy(labels[rows])
        logits = module(xb)
        loss = torch.nn.functional.cross_entropy(logits, yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total_loss += float(loss.detach()) * len(rows)
        correct += int((logits.argmax(1) == yb).sum())
    return total_loss / len(images), correct / len(images)
