"""PGDL competition tasks on disk: :func:`load_task` reads one, :func:`write_task` writes one.

A task directory (the NeurIPS 2020 "Predicting Generalization in Deep
Learning" competition's layout, read by its ``DataManager``)::

    model_configs.json            {id: {"hparams": {name: {"current_value": v,
                                                           "possible_values": [...]}},
                                        "metrics": {"train_acc": a, "test_acc": b}}}
    model_<id>/config.json        {"model_config": [layer dicts], "input_shape": [H, W, C]}
    model_<id>/weights.hdf5       Keras 2 save_weights file (trained)
    model_<id>/weights_init.hdf5  the same network at initialisation (optional)
    dataset_1/train/shard_*.tfrecord
    dataset_1/test/shard_*.tfrecord   (our zoos write it; the public tasks may not)

Everything is read without TensorFlow: layer configs through
:mod:`fitaudit.models.conversion.keras_layers`, weights through
:mod:`fitaudit.pgdl.keras_hdf5` (h5py), data through
:mod:`fitaudit.pgdl.tfrecords`. Models come back as torch modules taking
channels-first inputs, data as channels-first numpy arrays in the value
range stored.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.checkpoint import atomic_write_text
from fitaudit.models.conversion import keras_layers, torch_to_keras
from fitaudit.pgdl import keras_hdf5, tfrecords
from fitaudit.pgdl.accuracies import check_accuracies

if TYPE_CHECKING:
    from fitaudit.pgdl.population import Population

MODEL_CONFIGS = "model_configs.json"
CONFIG_FILE = "config.json"
WEIGHTS = "weights.hdf5"
WEIGHTS_INIT = "weights_init.hdf5"
DATA_DIR = "dataset_1"


def _natural_key(text: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise InputError(f"`--task`: PGDL task file {str(path)!r} does not exist.")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(f"`--task`: {str(path)!r} is not valid JSON ({type(exc).__name__}: {str(exc)[:200]}).") from exc


def _to_channels_first(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if x.ndim == 4 else x


def _shards(folder: Path) -> list[Path]:
    return sorted(folder.glob("shard_*.tfrecord"), key=lambda p: _natural_key(p.name))


class PGDLTask:
    """One PGDL task directory (see the module docstring); use :func:`load_task`.

    Attributes
    ----------
    directory : Path
    configs : dict
        The parsed ``model_configs.json``.
    model_ids : list of str
        Its keys, in natural order (``"2"`` before ``"10"``).
    formats : dict
        Model id -> ``"torch"``: every Keras model opens as a torch module
        (:class:`~fitaudit.pgdl.population_like.PopulationLike`).
    """

    def __init__(self, directory: Path, configs: dict[str, Any]) -> None:
        self.directory = directory
        self.configs = configs
        self.model_ids = sorted(configs, key=_natural_key)
        self.formats = dict.fromkeys(self.model_ids, "torch")
        self._data: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def __repr__(self) -> str:
        return f"PGDLTask({str(self.directory)!r}, {len(self.model_ids)} models)"

    def __len__(self) -> int:
        return len(self.model_ids)

    # ------------------------------------------------------------------ ids
    def _id(self, model_id: Any) -> str:
        """Accept ``3``, ``"3"`` and ``"model_3"`` for the model stored as ``model_3``."""
        text = str(model_id)
        if text in self.configs:
            return text
        for candidate in (text.removeprefix("model_"), f"model_{text}"):
            if candidate in self.configs:
                return candidate
        raise InputError(f"`model_id` must be one of the task's models ({', '.join(self.model_ids[:8])}...); got {model_id!r}.")

    def model_dir(self, model_id: Any) -> Path:
        """The folder ``model_<id>`` of a model."""
        return model_folder(self.directory, self._id(model_id))

    # ------------------------------------------------------------------ models
    def model_config(self, model_id: Any) -> dict[str, Any]:
        """The model's ``config.json`` (``model_config`` and ``input_shape``)."""
        path = self.model_dir(model_id) / CONFIG_FILE
        config = _read_json(path)
        if not isinstance(config, dict) or "model_config" not in config or "input_shape" not in config:
            raise InputError(f"{str(path)!r} must be a JSON object with 'model_config' and 'input_shape'.")
        return config

    def keras_net(self, model_id: Any, *, initial: bool = False) -> keras_layers.KerasNet:
        """The model with its Keras-to-torch weight map (see :class:`keras_layers.KerasNet`)."""
        folder = self.model_dir(model_id)
        config = self.model_config(model_id)
        net = keras_layers.build_torch(config["model_config"], config["input_shape"], where=str(folder / CONFIG_FILE))
        path = folder / (WEIGHTS_INIT if initial else WEIGHTS)
        keras_layers.assign_keras_weights(net, keras_hdf5.read_weights(path), where=repr(str(path)))
        net.module.eval()
        return net

    def model(self, model_id: Any, initial: bool = False) -> Any:
        """The trained (or, with ``initial``, the initial) network as a torch module in eval mode.

        It takes channels-first images ``(n, C, H, W)`` (vectors ``(n, d)`` as
        they are) and returns what the Keras model returns (logits for the
        competition's models).
        """
        return self.keras_net(model_id, initial=initial).module

    def has_initial(self, model_id: Any) -> bool:
        """Whether ``weights_init.hdf5`` exists for the model."""
        return (self.model_dir(model_id) / WEIGHTS_INIT).is_file()

    # ------------------------------------------------------------------ data
    def _load(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        if split not in self._data:
            folder = self.directory / DATA_DIR / split
            shards = _shards(folder)
            if not shards:
                raise InputError(f"PGDL task {str(self.directory)!r} has no {split} data: no shard_*.tfrecord in {str(folder)!r}.")
            parts = [tfrecords.read_examples(path) for path in shards]
            parts = [p for p in parts if len(p[1])]
            if not parts:
                raise InputError(f"the {split} shards of {str(self.directory)!r} hold no examples.")
            shapes = {p[0].shape[1:] for p in parts}
            if len(shapes) > 1:
                raise InputError(f"the {split} shards of {str(self.directory)!r} hold inputs of different shapes {sorted(shapes)}.")
            x = np.concatenate([p[0] for p in parts])
            y = np.concatenate([p[1] for p in parts])
            self._data[split] = (_to_channels_first(x), y)
        x, y = self._data[split]
        return x.copy(), y.copy()

    def train_data(self) -> tuple[np.ndarray, np.ndarray]:
        """Training inputs (channels first, float32, as stored) and int64 labels."""
        return self._load("train")

    def test_data(self) -> tuple[np.ndarray, np.ndarray]:
        """Test inputs and labels (tasks written by fitaudit have them)."""
        return self._load("test")

    # ------------------------------------------------------------------ model_configs.json
    def hparams(self, model_id: Any) -> dict[str, Any]:
        """Hyperparameter name -> its ``current_value`` for the model."""
        key = self._id(model_id)
        return {name: spec["current_value"] for name, spec in self.configs[key]["hparams"].items()}

    def metrics(self, model_id: Any) -> dict[str, float]:
        """The model's ``metrics`` entry (``train_acc``, ``test_acc``)."""
        return dict(self.configs[self._id(model_id)].get("metrics", {}))

    def gap(self, model_id: Any) -> float:
        """Generalization gap as the official scorer computes it: train_acc - test_acc."""
        key = self._id(model_id)
        metrics = self.metrics(key)
        for name in ("train_acc", "test_acc"):
            if not isinstance(metrics.get(name), (int, float)):
                raise InputError(f"{MODEL_CONFIGS} of {str(self.directory)!r}: model {key!r} has no numeric metrics.{name}.")
        return float(metrics["train_acc"]) - float(metrics["test_acc"])


def model_folder(directory: Path, model_id: str) -> Path:
    """``directory / "model_<id>"`` (an id already starting with ``model_`` is kept)."""
    return directory / (model_id if model_id.startswith("model_") else f"model_{model_id}")


def _check_configs(directory: Path, configs: Any) -> dict[str, Any]:
    path = directory / MODEL_CONFIGS
    if not isinstance(configs, dict) or not configs:
        raise InputError(f"{str(path)!r} must be a non-empty JSON object mapping model ids to entries.")
    for key, entry in configs.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("hparams"), dict):
            raise InputError(f"{str(path)!r}: model {key!r} must have an 'hparams' object.")
        for name, spec in entry["hparams"].items():
            if not isinstance(spec, dict) or "current_value" not in spec:
                raise InputError(f"{str(path)!r}: hparams.{name} of model {key!r} must have a 'current_value'.")
        if "metrics" in entry and not isinstance(entry["metrics"], dict):
            raise InputError(f"{str(path)!r}: 'metrics' of model {key!r} must be an object.")
        check_accuracies(entry.get("metrics", {}), f"`--task`: {str(path)!r}: model {key!r}")
    listed = {model_folder(directory, str(k)).name for k in configs}
    on_disk = {p.name for p in directory.iterdir() if p.is_dir() and p.name.startswith("model_")}
    if on_disk - listed:
        extra = ", ".join(sorted(on_disk - listed, key=_natural_key)[:5])
        raise InputError(f"{str(directory)!r}: folders {extra} are not listed in {MODEL_CONFIGS}.")
    if listed - on_disk:
        missing = ", ".join(sorted(listed - on_disk, key=_natural_key)[:5])
        raise InputError(f"{str(path)!r} lists models without a folder: {missing}.")
    for key in configs:
        for name in (CONFIG_FILE, WEIGHTS):
            if not (model_folder(directory, str(key)) / name).is_file():
                raise InputError(f"PGDL task file {str(model_folder(directory, str(key)) / name)!r} does not exist.")
    return configs


def load_task(directory: str | os.PathLike[str], *, trust_code: bool = False) -> PGDLTask | Population:
    """Open a PGDL task directory (the competition's format, see the module docstring).

    A folder written by :func:`fitaudit.pgdl.population_import.import_population`
    (a user's own models) is opened as a
    :class:`~fitaudit.pgdl.population.Population`, which offers the same
    methods.

    Checks that ``model_configs.json`` is valid, that its ids and the
    ``model_<id>`` folders agree, and that every model has ``config.json``
    and ``weights.hdf5``; models and data are read when asked for.

    Parameters
    ----------
    directory : path
    trust_code : bool
        Let a population's torch folders that name their own architecture
        file run it (``--trust-code``); only the caller grants this, never a
        file in the folder.

    Returns
    -------
    PGDLTask
        ``model_ids``, ``configs``, ``model(id, initial=False)``,
        ``train_data()``, ``test_data()``, ``hparams(id)``, ``metrics(id)``,
        ``gap(id)``.
    """
    if not isinstance(directory, (str, os.PathLike)):
        raise InputError(f"`directory` must be a folder path; got {type(directory).__name__}.")
    folder = Path(directory)
    if not folder.is_dir():
        raise InputError(f"`directory`: {str(folder)!r} is not a folder.")
    from fitaudit.pgdl.population import is_population, load_population

    if is_population(folder):
        return load_population(folder, trust_code=trust_code)
    configs = _check_configs(folder, _read_json(folder / MODEL_CONFIGS))
    return PGDLTask(folder, configs)


# ====================================================================== writing
@dataclasses.dataclass
class TaskModel:
    """One model to write into a task.

    Attributes
    ----------
    model_id : str
        Written as ``model_<id>`` and as the key in ``model_configs.json``.
    model : torch.nn.Sequential
        The trained network (channels-first input), made of layers
        :func:`torch_to_keras.keras_config_from_torch` can express.
    hparams : dict
        Hyperparameter name -> value.
    metrics : dict
        ``train_acc`` and ``test_acc`` (and anything else to record).
    initial_model : torch.nn.Sequential, optional
        The same network at initialisation (``weights_init.hdf5``).
    """

    model_id: str
    model: Any
    hparams: dict[str, Any]
    metrics: dict[str, float]
    initial_model: Any = None


def keras_form(module: Any, input_shape: Sequence[int], *, check_x: np.ndarray | None = None) -> tuple[dict[str, Any], list[Any]]:
    """The ``config.json`` content and Keras 2 weights of a torch network.

    With ``check_x`` (channels-first inputs), the network rebuilt from the
    config must give the same outputs as ``module`` (relative tolerance
    1e-4), or an :class:`InputError` is raised.
    """
    torch = import_optional("torch", "writing a PGDL task")
    model_config, keras_shape = torch_to_keras.keras_config_from_torch(module, tuple(input_shape))
    net = keras_layers.build_torch(model_config, keras_shape, where="the generated config")
    torch_to_keras.load_state_in_order(module, net.module)
    if check_x is not None and len(check_x):
        was_training = module.training
        module.eval()
        with torch.no_grad():
            batch = torch.from_numpy(np.ascontiguousarray(check_x, dtype=np.float32))
            expected, got = module(batch), net.module(batch)
        module.train(was_training)
        scale = float(expected.abs().max()) + 1e-6
        if float((expected - got).abs().max()) > 1e-4 * scale:
            raise InputError("`module` computes something its Keras form does not (a layer order or padding fitaudit cannot express).")
    return {"model_config": model_config, "input_shape": keras_shape}, keras_layers.keras_weights(net)


def _possible_values(members: Sequence[TaskModel]) -> dict[str, list[Any]]:
    names = list(members[0].hparams)
    values: dict[str, list[Any]] = {}
    for name in names:
        seen: list[Any] = []
        for member in members:
            if set(member.hparams) != set(names):
                raise InputError(f"`members`: model {member.model_id!r} has hyperparameters {sorted(member.hparams)}; the first has {sorted(names)}.")
            if member.hparams[name] not in seen:
                seen.append(member.hparams[name])
        values[name] = sorted(seen, key=lambda v: (isinstance(v, str), v))
    return values


def _check_split(data: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise InputError(f"`{name}` must be a pair (x, y); got {type(data).__name__}.")
    x = np.asarray(data[0], dtype=np.float32)
    y = np.asarray(data[1])
    if x.ndim not in (2, 4) or len(x) != len(y) or y.ndim != 1 or y.dtype.kind not in "iu":
        raise InputError(
            f"`{name}` must be x of shape (n, C, H, W) or (n, d) and n integer labels; got x {x.shape}, y {y.shape} {y.dtype}."
        )
    return x, y.astype(np.int64)


def write_data(directory: Path, split: str, x: np.ndarray, y: np.ndarray, shard_size: int) -> list[Path]:
    """Write channels-first ``x`` and labels ``y`` as ``dataset_1/<split>/shard_*.tfrecord`` (channels last)."""
    stored = np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if x.ndim == 4 else x
    folder = directory / DATA_DIR / split
    folder.mkdir(parents=True, exist_ok=True)
    for stale in _shards(folder):  # shards of an earlier write would be read as data
        stale.unlink()
    paths = []
    for shard, start in enumerate(range(0, len(stored), shard_size)):
        paths.append(tfrecords.write_examples(folder / f"shard_{shard}.tfrecord", stored[start : start + shard_size], y[start : start + shard_size]))
    return paths


def write_task(
    directory: str | os.PathLike[str],
    members: Sequence[TaskModel],
    train: tuple[Any, Any],
    test: tuple[Any, Any] | None = None,
    *,
    shard_size: int = 1000,
    check_outputs: bool = True,
) -> Path:
    """Write models and data as a PGDL task directory (the competition's format).

    Parameters
    ----------
    directory : path
        Created if needed; files already there are overwritten.
    members : sequence of TaskModel
        All with the same hyperparameter names; ``possible_values`` of each
        hyperparameter are the values the members take.
    train, test : (x, y)
        Channels-first inputs ``(n, C, H, W)`` (or vectors) and int labels;
        stored channels last, as the competition stores them.
    shard_size : int
        Examples per TFRecord shard.
    check_outputs : bool
        Check on a few training inputs that each model rebuilt from its
        Keras form gives the same outputs as the torch model.

    Returns
    -------
    Path
        The task directory (load it with :func:`load_task`).
    """
    from fitaudit._validation import check_int

    if not members:
        raise InputError("`members` must hold at least one model.")
    ids = [str(m.model_id) for m in members]
    if len(set(ids)) != len(ids):
        raise InputError("`members` must have distinct model ids.")
    shard_size = check_int(shard_size, "shard_size", minimum=1)
    x_train, y_train = _check_split(train, "train")
    folder = Path(directory)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"`directory`: {str(folder)!r} is an existing file, not a folder.")
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {model_folder(folder, i).name for i in ids}
    others = sorted((p.name for p in folder.iterdir() if p.is_dir() and p.name.startswith("model_") and p.name not in wanted), key=_natural_key)
    if others:
        raise InputError(f"`directory` {str(folder)!r} already holds other models ({', '.join(others[:5])}); write into an empty folder.")
    possible = _possible_values(members)
    configs: dict[str, Any] = {}
    sample = x_train[:16] if check_outputs else None
    for member in members:
        model_dir = model_folder(folder, str(member.model_id))
        model_dir.mkdir(parents=True, exist_ok=True)
        config, weights = keras_form(member.model, x_train.shape[1:], check_x=sample)
        atomic_write_text(model_dir / CONFIG_FILE, json.dumps(config, indent=1) + "\n")
        keras_hdf5.write_weights(model_dir / WEIGHTS, weights)
        if member.initial_model is not None:
            config_init, weights_init = keras_form(member.initial_model, x_train.shape[1:], check_x=sample)
            if config_init != config:
                raise InputError(f"`members`: the initial model of {member.model_id!r} has another architecture than the trained one.")
            keras_hdf5.write_weights(model_dir / WEIGHTS_INIT, weights_init)
        configs[str(member.model_id)] = {
            "hparams": {name: {"current_value": member.hparams[name], "possible_values": possible[name]} for name in possible},
            "metrics": {key: float(value) for key, value in member.metrics.items()},
        }
    write_data(folder, "train", x_train, y_train, shard_size)
    if test is not None:
        x_test, y_test = _check_split(test, "test")
        write_data(folder, "test", x_test, y_test, shard_size)
    atomic_write_text(folder / MODEL_CONFIGS, json.dumps(configs, indent=1) + "\n")
    return folder
