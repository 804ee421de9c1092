"""Model zoos: populations of trained networks over a full hyperparameter grid.

The PGDL competition (Jiang et al., NeurIPS 2020; docs/pgdl.md)
scores a complexity measure by how well it ranks the generalization gaps
of networks that differ in a few hyperparameters, every combination of
values trained once (a *complete grid*), all trained to ~100% training
accuracy ("Fantastic generalization measures" stops at a training
cross-entropy of 0.01). :func:`build_zoo` builds such a population:

* one *member* per point of :attr:`ZooSpec.grid` (``>= 3`` hyperparameters;
  each either an architecture argument, e.g. ``width`` or ``dropout``, or a
  training setting: ``learning_rate``, ``batch_size``, ``weight_decay``);
* SGD with momentum (or Adam) on the training set, by fitaudit's one
  trainer (:func:`fitaudit.models.training.train_epochs`: every epoch's
  shuffling and dropout seeded from the member's seed and the epoch), until, measured after
  each epoch in evaluation mode on the whole training set, the
  cross-entropy is at most :attr:`ZooSpec.target_loss` or the accuracy at
  least :attr:`ZooSpec.target_accuracy` ("trained to ~100% training
  accuracy or a fixed cross-entropy"), or :attr:`ZooSpec.max_epochs` (the
  member is then recorded as not converged); the learning rate is halved
  whenever the training cross-entropy has not improved by 1% for
  :attr:`ZooSpec.lr_patience` epochs (torch's ``ReduceLROnPlateau``), which
  lets members with dropout or weight decay settle instead of oscillating
  at a constant rate; train and test accuracy recorded;
* members trained in parallel by :func:`fitaudit.parallel.parallel_map`
  (``n_jobs``, or a Dask cluster inside ``joblib.parallel_config(backend="dask")``),
  each with one torch thread (:data:`TORCH_THREADS`, in every member's key and
  summary: torch's CPU results differ across thread counts), so the weights
  do not depend on ``n_jobs`` or the machine;
* with ``checkpoint_dir`` every finished member is kept in a
  :class:`~fitaudit.checkpoint.CheckpointStore` under a key fingerprinting
  the training code, the architecture (its layers as built) and its
  arguments, the training settings, the data and the seed: a killed build loses only the members
  in flight, and a changed setting never reuses an old member.

Two default zoos on built-in data (:func:`default_zoo`): ``"digits"``
(scikit-learn's 8x8 digits, VGG-like networks; fast) and ``"shapes"`` (the
Shapes world at 16x16, VGG-like networks with batch norm); each in a ``"quick"`` size (8
members, for demos and CI) and a ``"default"`` size. Build times and sizes
are measured by ``benchmarks/bench_zoo.py``.

Writing a zoo in the competition's on-disk format is
:func:`fitaudit.pgdl.zoo_task.build_zoo_task` (``fitaudit pgdl zoo build``).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit._validation import check_choice, check_float, check_int
from fitaudit.checkpoint import CheckpointStore, code_fingerprint
from fitaudit.models.architectures import build_architecture
from fitaudit.models.torch_ops import evaluate
from fitaudit.models.training import TORCH_RNG_LOCK, train_epochs
from fitaudit.options import RunOptions, as_options
from fitaudit.random import spawn_seeds

#: hyperparameters that are training settings rather than architecture arguments
TRAINING_HPARAMS = ("learning_rate", "batch_size", "weight_decay")

#: torch threads of every member's training: torch's CPU results differ across thread counts,
#: so the count is fixed, part of each member's key and recorded in its summary
TORCH_THREADS = 1

ZOO_NAMES = ("digits", "shapes")
ZOO_SIZES = ("quick", "default", "large")

#: the ``large`` size: 4 hyperparameters x 3 values = 81 members (the competition's tasks had about 100)
LARGE_GRIDS: dict[str, dict[str, list[Any]]] = {
    "digits": {"width": [8, 16, 32], "dropout": [0.0, 0.25, 0.5], "weight_decay": [0.0, 0.0003, 0.001],
               "batch_size": [32, 64, 128]},
    "shapes": {"width": [8, 16, 32], "dropout": [0.0, 0.15, 0.3], "weight_decay": [0.0, 0.0003, 0.001],
               "batch_size": [32, 64, 128]},
}


@dataclasses.dataclass(frozen=True)
class ZooSpec:
    """What to train: an architecture, a hyperparameter grid and a stopping rule.

    Attributes
    ----------
    name : str
    architecture : str
        A registered architecture (:mod:`fitaudit.models.architectures`).
    grid : dict
        Hyperparameter name -> list of values; every combination is one
        member. Names are architecture arguments or one of
        :data:`TRAINING_HPARAMS`.
    fixed : dict
        Architecture arguments shared by every member (``n_classes``,
        ``in_channels`` and ``image_size`` are filled from the data).
    learning_rate, batch_size, weight_decay : training settings
        Unless the grid varies them.
    momentum : float
        SGD's momentum (unused by Adam).
    optimizer : {"sgd", "adam"}
    max_epochs : int
    target_loss : float
        Stop a member once its training cross-entropy is at most this.
    target_accuracy : float
        ... or once its training accuracy is at least this.
    lr_patience : int
        Epochs without a 1% improvement of the training cross-entropy
        before the learning rate is halved (down to 1/10 of the initial
        rate).
    """

    name: str
    architecture: str
    grid: Mapping[str, list[Any]]
    fixed: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    learning_rate: float = 0.05
    batch_size: int = 64
    weight_decay: float = 0.0
    momentum: float = 0.9
    optimizer: str = "sgd"
    max_epochs: int = 60
    target_loss: float = 0.01
    target_accuracy: float = 1.0
    lr_patience: int = 4

    def points(self) -> list[dict[str, Any]]:
        """Every combination of the grid's values, in grid order (the last name varies fastest)."""
        names = list(self.grid)
        return [dict(zip(names, values)) for values in itertools.product(*(self.grid[n] for n in names))]


@dataclasses.dataclass
class ZooData:
    """Training and test data of a zoo: channels-first float32 images and int64 labels."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    @property
    def n_classes(self) -> int:
        return int(max(self.y_train.max(), self.y_test.max())) + 1


@dataclasses.dataclass
class ZooMember:
    """One trained network of a zoo.

    Attributes
    ----------
    model_id : str
        ``"1"``, ``"2"``, ... in grid order.
    architecture : str
    kwargs : dict
        Its architecture arguments.
    hparams : dict
        The grid point (hyperparameter name -> value).
    train_acc, test_acc, train_loss : float
        Of the final network (evaluation mode); ``train_loss`` is the
        training cross-entropy.
    epochs : int
    converged : bool
        Whether ``train_loss`` reached the spec's ``target_loss`` or
        ``train_acc`` its ``target_accuracy``.
    seconds : float
        Training time (wall clock).
    cpu_seconds : float
        CPU time of the training thread (what a quiet machine would take).
    seed : int
    state, initial_state : dict of ndarray
        State dicts after training and at initialisation.
    """

    model_id: str
    architecture: str
    kwargs: dict[str, Any]
    hparams: dict[str, Any]
    train_acc: float
    test_acc: float
    train_loss: float
    epochs: int
    converged: bool
    seconds: float
    cpu_seconds: float
    seed: int
    state: dict[str, np.ndarray] = dataclasses.field(repr=False)
    initial_state: dict[str, np.ndarray] = dataclasses.field(repr=False)

    @property
    def metrics(self) -> dict[str, float]:
        """``train_acc``, ``test_acc`` and ``train_loss`` (the competition's ``metrics`` entry and more)."""
        return {"train_acc": self.train_acc, "test_acc": self.test_acc, "train_loss": self.train_loss}

    def _module(self, state: dict[str, np.ndarray]) -> Any:
        torch = import_optional("torch", "building a zoo model")
        module = build_architecture({"architecture": self.architecture, "kwargs": self.kwargs})
        module.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()})
        return module.eval()

    def model(self) -> Any:
        """The trained network (a torch module in eval mode)."""
        return self._module(self.state)

    def initial_model(self) -> Any:
        """The network at initialisation."""
        return self._module(self.initial_state)


@dataclasses.dataclass
class Zoo:
    """A built zoo: its spec, data and members (in grid order)."""

    spec: ZooSpec
    data: ZooData
    members: list[ZooMember]
    build_seconds: float

    def __repr__(self) -> str:
        converged = sum(m.converged for m in self.members)
        return (
            f"Zoo({self.spec.name!r}, {len(self.members)} members over {list(self.spec.grid)}, "
            f"{converged} converged, built in {self.build_seconds:.1f} s)"
        )

    @property
    def hparam_names(self) -> list[str]:
        return list(self.spec.grid)

    def table(self) -> list[dict[str, Any]]:
        """One JSON-safe row per member: id, hyperparameters, accuracies, gap, epochs, converged, seconds."""
        return [
            {
                "model_id": m.model_id, **m.hparams, "train_acc": m.train_acc, "test_acc": m.test_acc,
                "gap": m.train_acc - m.test_acc, "train_loss": m.train_loss, "epochs": m.epochs,
                "converged": m.converged, "seconds": m.seconds,
            }  # fmt: skip
            for m in self.members
        ]


# ====================================================================== data
def digits_data(*, test_fraction: float = 0.5, data_seed: int = 0) -> ZooData:
    """scikit-learn's 8x8 digits as images (n, 1, 8, 8) in [0, 1], split stratified."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=test_fraction, stratify=y, random_state=data_seed)
    return ZooData("digits", x_train, y_train, x_test, y_test)


def shapes_data(*, n_objects_per_class: int = 10, renders_per_object: int = 8, image_size: int = 16, data_seed: int = 0) -> ZooData:
    """Renders of the Shapes world (12 classes): training objects and distinct test objects."""
    from fitaudit.data.shapes import make_dataset

    train = make_dataset(n_objects_per_class, renders_per_object, split="train", image_size=image_size, random_state=data_seed)
    test = make_dataset(n_objects_per_class, renders_per_object, split="test", image_size=image_size, random_state=data_seed + 1)
    return ZooData(
        "shapes",
        np.asarray(train.images, dtype=np.float32),
        np.asarray(train.labels, dtype=np.int64),
        np.asarray(test.images, dtype=np.float32),
        np.asarray(test.labels, dtype=np.int64),
    )


def default_zoo(name: str = "digits", size: str = "default") -> tuple[ZooSpec, ZooData]:
    """The built-in zoos.

    ``digits`` (VGG-like, 1 block of conv-relu-conv-relu-maxpool, one dense
    layer of 128): quick = width {8, 16} x dropout {0, 0.5} x batch size
    {32, 128}; default = width {8, 16, 32} x dropout {0, 0.5} x weight
    decay {0, 0.001} x batch size {32, 128}; at most 150 epochs.

    ``shapes`` (16x16 renders of 12 classes; VGG-like with batch norm, 2
    blocks, one dense layer of 128): quick = width {8, 16} x dropout
    {0, 0.3} x batch size {32, 64} on 432 training images, at most 60
    epochs; default = width {8, 16, 32} x dropout {0, 0.3} x weight decay
    {0, 0.001} x batch size {32, 64} on 960, at most 100. Test images show
    other objects than the training images (the world's test split), so
    the gaps are large.

    ``large`` (both families, the default size's data, architecture and
    epoch caps): 3 values of each of the 4 hyperparameters,
    :data:`LARGE_GRIDS`, 81 members, the scale of the competition's tasks
    (about 100 models) at which its conditional-MI metric, conditioned on
    the other hyperparameters, has groups of 3 rather than 2.

    Every member trains until 100% training accuracy or a training
    cross-entropy of 0.01, whichever comes first (the epoch caps are
    rarely reached: ``benchmarks/bench_zoo.py`` counts the members that
    converged). Both train with Adam (learning rate 0.003, halved on
    plateaus) rather than the competition's SGD, to converge within a CPU
    budget.
    """
    name = check_choice(name, "name", ZOO_NAMES)
    size = check_choice(size, "size", ZOO_SIZES)
    quick = size == "quick"
    if name == "digits":
        grid: dict[str, list[Any]] = {"width": [8, 16], "dropout": [0.0, 0.5], "batch_size": [32, 128]}
        if not quick:
            grid = {"width": [8, 16, 32], "dropout": [0.0, 0.5], "weight_decay": [0.0, 0.001], "batch_size": [32, 128]}
        if size == "large":
            grid = LARGE_GRIDS["digits"]
        spec = ZooSpec(
            name=f"digits-{size}", architecture="pgdl_vgg", grid=grid,
            fixed={"blocks": 1, "dense_layers": 1, "dense_width": 128},
            optimizer="adam", learning_rate=0.003, max_epochs=150,
        )  # fmt: skip
        return spec, digits_data()
    grid = {"width": [8, 16], "dropout": [0.0, 0.3], "batch_size": [32, 64]}
    if not quick:
        grid = {"width": [8, 16, 32], "dropout": [0.0, 0.3], "weight_decay": [0.0, 0.001], "batch_size": [32, 64]}
    if size == "large":
        grid = LARGE_GRIDS["shapes"]
    spec = ZooSpec(
        name=f"shapes-{size}", architecture="pgdl_vgg", grid=grid,
        fixed={"blocks": 2, "dense_layers": 1, "dense_width": 128, "batch_norm": True},
        optimizer="adam", learning_rate=0.003, max_epochs=60 if quick else 100,
    )  # fmt: skip
    data = shapes_data(n_objects_per_class=6, renders_per_object=6) if quick else shapes_data()
    return spec, data


# ====================================================================== training
def _state(module: Any) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy().copy() for k, v in module.state_dict().items()}


def _reached_target(loss: float, accuracy: float, settings: dict[str, Any]) -> bool:
    """The stopping rule: training cross-entropy or training accuracy at its target."""
    return bool(loss <= settings["target_loss"] or accuracy >= settings["target_accuracy"])


def _train(item: dict[str, Any], data: ZooData) -> dict[str, Any]:
    """Train one member with fitaudit's trainer (:func:`fitaudit.models.training.train_epochs`).

    One torch thread, the initial weights from the member's seed and every
    epoch's shuffling and dropout from ``(seed, epoch)``: deterministic given
    the item. After each epoch the whole training set is scored in eval
    mode; training stops at the target (:func:`_reached_target`) and the
    learning rate is halved on a plateau of that loss.
    """
    torch = import_optional("torch", "building a model zoo")
    threads = torch.get_num_threads()
    settings = item["settings"]
    torch.set_num_threads(settings["torch_threads"])
    try:
        with TORCH_RNG_LOCK:
            torch.manual_seed(item["seed"])
            module = build_architecture({"architecture": item["architecture"], "kwargs": item["kwargs"]})
            initial = _state(module)
            module.to(settings.get("device", "cpu"))  # before the optimizer: it holds the parameters
            if settings["optimizer"] == "adam":
                optimizer = torch.optim.Adam(module.parameters(), lr=settings["learning_rate"], weight_decay=settings["weight_decay"])
            else:
                optimizer = torch.optim.SGD(
                    module.parameters(), lr=settings["learning_rate"], momentum=settings["momentum"], weight_decay=settings["weight_decay"]
                )
            schedule = torch.optim.lr_scheduler.ReduceLROnPlateau(
                optimizer, factor=0.5, patience=settings["lr_patience"], threshold=0.01, min_lr=settings["learning_rate"] / 10
            )
            scored = {"loss": float("inf"), "accuracy": 0.0}

            def score_and_stop(epoch: int, batch_loss: float, batch_accuracy: float) -> bool:
                scored["loss"], scored["accuracy"] = evaluate(module, data.x_train, data.y_train)
                if not np.isfinite(scored["loss"]):
                    return True
                schedule.step(scored["loss"])
                return _reached_target(scored["loss"], scored["accuracy"], settings)

            started, cpu_started = time.perf_counter(), time.thread_time()
            epochs = train_epochs(
                module, optimizer, data.x_train, data.y_train, batch_size=settings["batch_size"], random_state=item["seed"],
                epochs=settings["max_epochs"], after_epoch=score_and_stop,
            )
        _, test_acc = evaluate(module, data.x_test, data.y_test)
        loss, acc = scored["loss"], scored["accuracy"]
        summary = {
            "train_acc": acc, "test_acc": test_acc, "train_loss": loss, "epochs": epochs,
            "converged": _reached_target(loss, acc, settings), "seconds": time.perf_counter() - started,
            "cpu_seconds": time.thread_time() - cpu_started, "torch_threads": torch.get_num_threads(),
        }  # fmt: skip
        return {"summary": summary, "state": _state(module), "initial_state": initial}
    finally:
        torch.set_num_threads(threads)


def _fit_member(item: dict[str, Any], *, data: ZooData, store_dir: str | None) -> dict[str, Any]:
    """One unit of :func:`build_zoo`: a stored member, or a freshly trained one (then stored)."""
    store = CheckpointStore(store_dir) if store_dir is not None else None
    key = ""
    if store is not None:
        with TORCH_RNG_LOCK:  # building draws initial weights from torch's global generator
            structure = repr(build_architecture({"architecture": item["architecture"], "kwargs": item["kwargs"]}))
        # code_fingerprint(): all of fitaudit's source (the trainer and the zoo networks included)
        key = store.key(code_fingerprint(), structure, item, data.x_train, data.y_train, data.x_test, data.y_test)
        if store.has(key) and store.has_arrays(key):
            arrays = store.load_arrays(key)
            return {
                "summary": store.load(key),
                "state": {k.removeprefix("final/"): v for k, v in arrays.items() if k.startswith("final/")},
                "initial_state": {k.removeprefix("init/"): v for k, v in arrays.items() if k.startswith("init/")},
            }
    result = _train(item, data)
    if store is not None:
        arrays = {f"final/{k}": v for k, v in result["state"].items()}
        arrays.update({f"init/{k}": v for k, v in result["initial_state"].items()})
        store.save_arrays(key, arrays)
        store.save(key, result["summary"], item=item)  # the JSON document is the commit point
    return result


def _check_spec(spec: Any, data: ZooData) -> dict[str, Any]:
    if not isinstance(spec, ZooSpec):
        raise InputError(f"`spec` must be a ZooSpec or the name of a default zoo {ZOO_NAMES}; got {type(spec).__name__}.")
    if len(spec.grid) < 3:
        raise InputError(
            f"`spec.grid` must vary at least 3 hyperparameters (the PGDL conditional mutual information needs pairs "
            f"of them, and more than one pair); got {list(spec.grid)}."
        )
    for name, values in spec.grid.items():
        if not isinstance(values, list) or len(values) < 2 or len({repr(v) for v in values}) != len(values):
            raise InputError(f"`spec.grid[{name!r}]` must be a list of at least 2 distinct values; got {values!r}.")
    check_int(spec.max_epochs, "spec.max_epochs", minimum=1)
    check_choice(spec.optimizer, "spec.optimizer", ("sgd", "adam"))
    check_float(spec.target_loss, "spec.target_loss", low=0.0)
    check_float(spec.target_accuracy, "spec.target_accuracy", low=0.0, high=1.0)
    check_int(spec.lr_patience, "spec.lr_patience", minimum=0)
    x_shape = data.x_train.shape
    if data.x_train.ndim != 4 or data.x_test.shape[1:] != x_shape[1:] or len(data.y_train) != len(data.x_train) or len(data.y_test) != len(data.x_test):
        raise InputError(f"`data` must hold images (n, C, H, W) with one label each; got {x_shape} and {data.x_test.shape}.")
    return {"n_classes": data.n_classes, "in_channels": int(x_shape[1]), "image_size": [int(x_shape[2]), int(x_shape[3])], **spec.fixed}


def build_zoo(
    spec: ZooSpec | str = "digits",
    *,
    size: str = "default",
    data: ZooData | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    options: RunOptions | None = None,
) -> Zoo:
    """Train every member of a zoo (in parallel, resumably).

    Parameters
    ----------
    spec : ZooSpec or {"digits", "shapes"}
        A spec, or the name of a default zoo (:func:`default_zoo`).
    size : {"quick", "default", "large"}
        Size of a default zoo.
    data : ZooData, optional
        Needed with a ZooSpec; a default zoo brings its own.
    checkpoint_dir : path, optional
        Keep finished members there and reuse them when called again.
    options : RunOptions, optional
        How it runs (:class:`fitaudit.options.RunOptions`): ``n_jobs``
        members train in parallel (joblib, or the Dask cluster of
        ``dask_scheduler``); ``random_state`` seeds the members (one seed per
        member, in grid order), so the same seed gives the same weights
        whatever ``n_jobs``; ``progress`` shows a bar over members;
        ``device`` is where the members train (``"cuda"`` on a GPU): initial
        weights are drawn on the CPU (the same for every device), then the
        member and its batches go there. The device is a setting of each
        member, so part of its checkpoint key (a GPU's results differ in the
        last digits).

    Returns
    -------
    Zoo
    """
    from fitaudit.models.torch_adapter import resolve_device
    from fitaudit.parallel import check_n_jobs, parallel_map

    options = as_options(options)
    n_jobs = check_n_jobs(options.n_jobs)
    device = str(resolve_device(options.device, name="device"))
    if isinstance(spec, str):
        spec, default_data = default_zoo(spec, size)
        data = data if data is not None else default_data
    if not isinstance(data, ZooData):
        raise InputError(f"`data` must be a ZooData (channels-first images and labels); got {type(data).__name__}.")
    fixed = _check_spec(spec, data)
    points = spec.points()
    seeds = spawn_seeds(options.random_state, len(points))
    base = {"learning_rate": spec.learning_rate, "batch_size": spec.batch_size, "weight_decay": spec.weight_decay}
    items: list[dict[str, Any]] = []
    for index, (point, seed) in enumerate(zip(points, seeds)):
        settings = {
            **base, **{k: v for k, v in point.items() if k in TRAINING_HPARAMS},
            "momentum": spec.momentum, "optimizer": spec.optimizer, "max_epochs": spec.max_epochs, "target_loss": spec.target_loss,
            "target_accuracy": spec.target_accuracy, "lr_patience": spec.lr_patience, "torch_threads": TORCH_THREADS,
            "device": device,
        }  # fmt: skip
        kwargs = {**fixed, **{k: v for k, v in point.items() if k not in TRAINING_HPARAMS}}
        items.append({"model_id": str(index + 1), "architecture": spec.architecture, "kwargs": kwargs, "settings": settings, "hparams": point, "seed": seed})
    build_architecture({"architecture": spec.architecture, "kwargs": items[0]["kwargs"]})  # bad kwargs fail here, not in a worker
    store_dir = os.fspath(checkpoint_dir) if checkpoint_dir is not None else None
    started = time.perf_counter()
    with options.running():
        results = parallel_map(functools.partial(_fit_member, data=data, store_dir=store_dir), items, n_jobs=n_jobs,
                               progress=options.progress, desc=f"zoo {spec.name}")
    members = [
        ZooMember(
            model_id=item["model_id"], architecture=item["architecture"], kwargs=item["kwargs"], hparams=item["hparams"],
            train_acc=float(r["summary"]["train_acc"]), test_acc=float(r["summary"]["test_acc"]),
            train_loss=float(r["summary"]["train_loss"]), epochs=int(r["summary"]["epochs"]),
            converged=bool(r["summary"]["converged"]), seconds=float(r["summary"]["seconds"]),
            cpu_seconds=float(r["summary"].get("cpu_seconds", float("nan"))), seed=int(item["seed"]),
            state=r["state"], initial_state=r["initial_state"],
        )  # fmt: skip
        for item, r in zip(items, results)
    ]
    return Zoo(spec=spec, data=data, members=members, build_seconds=time.perf_counter() - started)
