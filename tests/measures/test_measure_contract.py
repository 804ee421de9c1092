"""Every registered measure: a finite float, deterministic, metadata present, needs_init honoured."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fitaudit._errors import InputError
from fitaudit.measures import Measure, get_measure, list_measures

NAMES = list_measures()


def test_at_least_twenty_measures() -> None:
    assert len(NAMES) >= 20


@pytest.mark.parametrize("name", NAMES)
def test_measure_contract(name: str, record, fast) -> None:
    measure = get_measure(name, random_state=3, **fast.get(name, {}))
    assert isinstance(measure, Measure)
    meta = measure.metadata()
    assert meta["name"] == name
    assert meta["cost"] in {"cheap", "moderate", "expensive"}
    assert meta["family"] in {"baseline", "starting_kit", "fantastic", "winners", "fitaudit", "spectrum"}
    assert meta["reference"] and meta["summary"]
    assert isinstance(meta["needs_data"], bool) and isinstance(meta["needs_grad"], bool)
    weights_before = [p.detach().clone() for p in record.model.parameters()]
    first = measure(record)
    assert isinstance(first, float) and np.isfinite(first)
    again = get_measure(name, random_state=3, **fast.get(name, {}))(record)
    assert again == first
    for before, after in zip(weights_before, record.model.parameters()):
        assert np.array_equal(before.numpy(), after.detach().numpy()), (
            "a measure changed the caller's model"
        )
    if measure.needs_init:
        bare = dataclasses.replace(record, initial_model=None)
        with pytest.raises(InputError, match="needs `record.initial_model`"):
            measure(bare)


def test_unknown_measure_is_named() -> None:
    with pytest.raises(InputError, match="`name` must be a registered measure"):
        get_measure("no_such_measure")


def test_bad_records_are_named(record) -> None:
    with pytest.raises(InputError, match="`record` must be a ModelRecord; got dict"):
        get_measure("param_norm")({"model": record.model})
    short = dataclasses.replace(record, train_y=record.train_y[:5])
    with pytest.raises(
        InputError, match=r"needs `record.train_y` of shape \(90,\); got shape \(5,\)"
    ):
        get_measure("inverse_margin")(short)
    floats = dataclasses.replace(record, train_y=record.train_y + 0.5)
    with pytest.raises(InputError, match="needs integer `record.train_y`"):
        get_measure("inverse_margin")(floats)


def test_read_only_data_becomes_a_tensor_without_a_warning():
    """Workers get read-only memory maps of the data; torch must not be handed them as they are."""
    import warnings

    from fitaudit.models.torch_ops import as_tensor

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    x.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tensor = as_tensor(x)
    assert tensor.dtype.is_floating_point and np.array_equal(tensor.numpy(), x)


def test_catalogue_holds_every_measure_module() -> None:
    """Each public module of fitaudit.measures defines a Measure that the catalogue (and so get_measure) finds."""
    import importlib
    import inspect
    import pkgutil

    import fitaudit.measures as package
    from fitaudit.measures.catalogue import BUILTIN_MEASURES

    defined = {}
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_") or info.name in ("base", "catalogue"):
            continue
        module = importlib.import_module(f"fitaudit.measures.{info.name}")
        classes = [c for _, c in inspect.getmembers(module, inspect.isclass)
                   if issubclass(c, Measure) and c.__module__ == module.__name__ and not inspect.isabstract(c)]
        assert len(classes) == 1, (info.name, classes)
        defined[classes[0].name] = classes[0]
    assert defined == dict(BUILTIN_MEASURES)
    assert NAMES == sorted(defined)


def test_a_measure_of_ones_own_is_registered_and_a_taken_name_refused(monkeypatch) -> None:
    from fitaudit import measures

    monkeypatch.setattr(measures, "_ADDED", {})

    class Mine(Measure):
        """A constant."""

        name = "my_constant"

        def compute(self, record):  # type: ignore[no-untyped-def]
            return 1.0

    assert measures.register_measure(Mine) is Mine and measures.register_measure(Mine) is Mine
    assert measures.measure_class("my_constant") is Mine and isinstance(get_measure("my_constant"), Mine)
    assert "my_constant" in list_measures() and "param_norm" in measures.registered()

    class Impostor(Mine):
        name = "param_norm"

    class Nameless(Mine):
        name = ""

    with pytest.raises(InputError, match="a measure named 'param_norm' is already registered"):
        measures.register_measure(Impostor)
    with pytest.raises(InputError, match="measure class Nameless needs a non-empty `name`"):
        measures.register_measure(Nameless)
    assert measures.measure_class("param_norm").__name__ == "ParamNorm"
