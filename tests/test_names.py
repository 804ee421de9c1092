"""One name per concept (issue 47): a seed argument is ``random_state``, as in scikit-learn.

A record of what was used (a training run's or a zoo member's integer
seed, kept in its JSON) may say ``seed``: it is a value the run drew, not an
argument that draws.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

import fitaudit

RECORDS = {"fitaudit.models.training.TrainingResult", "fitaudit.pgdl.zoo.ZooMember"}


def seed_arguments() -> list[str]:
    """Every public function, class or method of fitaudit with a parameter named ``seed``."""
    found = []
    for info in pkgutil.walk_packages(fitaudit.__path__, "fitaudit."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue  # private modules (and __main__, whose import runs the command line)
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            members = [(name, obj)]
            if inspect.isclass(obj):
                members += [(f"{name}.{n}", f) for n, f in vars(obj).items()
                            if inspect.isfunction(f) and (n == "__init__" or not n.startswith("_"))]
            for qualified, member in members:
                if not (inspect.isclass(member) or inspect.isfunction(member)):
                    continue
                try:
                    parameters = inspect.signature(member).parameters
                except (TypeError, ValueError):
                    continue
                if "seed" in parameters:
                    found.append(f"{module.__name__}.{qualified}")
    return sorted(set(found))


def test_every_seed_argument_is_named_random_state():
    offenders = [name for name in seed_arguments() if name not in RECORDS and name.rsplit(".", 1)[0] not in RECORDS]
    assert offenders == []


def test_the_scan_sees_a_seed_argument(monkeypatch):
    import fitaudit.data.image_ops as image_ops

    def planted(seed: int) -> None: ...

    planted.__module__ = image_ops.__name__
    monkeypatch.setattr(image_ops, "planted", planted, raising=False)
    assert "fitaudit.data.image_ops.planted" in seed_arguments()


def test_the_records_that_say_seed_are_dataclasses_of_what_was_used():
    for name in RECORDS:
        module, cls = name.rsplit(".", 1)
        record = getattr(importlib.import_module(module), cls)
        assert dataclasses.is_dataclass(record) and "seed" in {f.name for f in dataclasses.fields(record)}
