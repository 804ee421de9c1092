"""A model zoo written as a PGDL competition task (``fitaudit pgdl zoo build``).

:func:`build_zoo_task` trains a zoo (:func:`fitaudit.pgdl.zoo.build_zoo`:
a complete hyperparameter grid, in parallel, resumable) and writes it in the
competition's on-disk format (:func:`fitaudit.pgdl.task.write_task`):
``model_configs.json``, ``model_<id>/config.json``, ``weights.hdf5``,
``weights_init.hdf5`` and ``dataset_1/{train,test}/shard_*.tfrecord``, so
that :func:`fitaudit.pgdl.load_task` (or the competition's own TensorFlow
loader) reads it back.
"""

from __future__ import annotations

import os
from pathlib import Path

from fitaudit._errors import InputError
from fitaudit.options import RunOptions
from fitaudit.pgdl.task import TaskModel, write_task
from fitaudit.pgdl.zoo import Zoo, ZooData, ZooSpec, build_zoo

#: where :func:`build_zoo_task` keeps finished members by default, inside the task directory
CHECKPOINT_SUBDIR = ".zoo-checkpoints"


def zoo_members(zoo: Zoo) -> list[TaskModel]:
    """The members of ``zoo`` as :class:`TaskModel` entries (metrics: train_acc, test_acc)."""
    return [
        TaskModel(
            model_id=member.model_id,
            model=member.model(),
            hparams=dict(member.hparams),
            metrics={"train_acc": member.train_acc, "test_acc": member.test_acc},
            initial_model=member.initial_model(),
        )
        for member in zoo.members
    ]


def write_zoo_task(zoo: Zoo, out_dir: str | os.PathLike[str], *, shard_size: int = 1000) -> Path:
    """Write a built zoo in the competition's format; returns the task directory."""
    if not isinstance(zoo, Zoo):
        raise InputError(f"`zoo` must be a Zoo from fitaudit.pgdl.zoo.build_zoo; got {type(zoo).__name__}.")
    data = zoo.data
    return write_task(
        out_dir, zoo_members(zoo), (data.x_train, data.y_train), (data.x_test, data.y_test), shard_size=shard_size
    )


def build_zoo_task(
    out_dir: str | os.PathLike[str],
    zoo: ZooSpec | str = "digits",
    *,
    size: str = "default",
    data: ZooData | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    shard_size: int = 1000,
    options: RunOptions | None = None,
) -> tuple[Path, Zoo]:
    """Train a zoo and write it as a PGDL task directory.

    Parameters
    ----------
    out_dir : path
        The task directory (created; existing task files are overwritten).
    zoo : ZooSpec or {"digits", "shapes"}
        A spec (then ``data`` is needed) or a default zoo
        (:func:`fitaudit.pgdl.zoo.default_zoo`).
    size : {"quick", "default", "large"}
        Size of a default zoo: ``quick`` is 8 briefly trained models.
    data : ZooData, optional
    checkpoint_dir : path, optional
        Finished members are kept there (default: ``out_dir/.zoo-checkpoints``),
        so a killed build resumes where it stopped.
    shard_size : int
        Examples per TFRecord shard.
    options : RunOptions, optional
        How the members train (:func:`fitaudit.pgdl.zoo.build_zoo`): the same
        ``random_state``, the same weights, whatever ``n_jobs`` or ``device``.

    Returns
    -------
    (Path, Zoo)
        The task directory and the zoo (members with their metrics).
    """
    folder = Path(out_dir)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"`out_dir`: {str(folder)!r} is an existing file, not a folder.")
    store = Path(checkpoint_dir) if checkpoint_dir is not None else folder / CHECKPOINT_SUBDIR
    built = build_zoo(zoo, size=size, data=data, checkpoint_dir=store, options=options)
    return write_zoo_task(built, folder, shard_size=shard_size), built
