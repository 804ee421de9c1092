"""The generator protocol x = g(z, s): inputs from instances and factors.

The adversarial examiner (Shu, Liu, Qiu, Yuille, AAAI 2020;
docs/examiner.md) evaluates a classifier on inputs x = g(z, s) that a generator
makes from an instance z (an object, a person, a scene, with its label y(z))
and nuisance factors s in a :class:`~fitaudit.data.factors.FactorSpace`
(camera, light, ...). Anything with these members is a generator:

``factor_space``
    the :class:`FactorSpace` S that ``generate`` accepts;
``labels``
    int array ``(n_instances,)``: the label of every instance (the class the
    model must output for every g(z, s));
``generate(instances, factors)``
    batched: ``instances`` an int array ``(n,)`` of instance indices in
    ``0..n_instances-1``, ``factors`` an array ``(n, n_factors)`` inside the
    space; returns an array ``(n, ...)`` of model inputs, one per row, the
    same for the same ``(instance, factor row)`` whatever else is in the batch.

Optionally ``describe()`` returns a JSON-safe dict identifying the generator
(it keys checkpoints and appears in reports) and ``class_names`` names the
labels. :func:`as_generator` turns a plain callable into a generator;
:func:`generate_checked` validates a call on both sides (factors in the
space, output shape, finiteness), so that a broken simulator is reported
by name instead of failing deep inside a model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_labels
from fitaudit.data.factors import FactorSpace


@runtime_checkable
class Generator(Protocol):
    """Structural type of a generator g(z, s) (see the module docstring)."""

    factor_space: FactorSpace
    labels: np.ndarray

    def generate(self, instances: np.ndarray, factors: np.ndarray) -> np.ndarray:
        """Inputs ``(n, ...)`` for instance indices ``(n,)`` and factor rows ``(n, n_factors)``."""
        ...


class CallableGenerator:
    """A plain callable ``fn(instances, factors) -> inputs`` as a :class:`Generator`.

    Parameters
    ----------
    fn : callable
        ``fn(instances, factors)`` with ``instances`` an int array ``(n,)``
        of indices into ``labels`` and ``factors`` a float array
        ``(n, n_factors)``; returns ``n`` inputs.
    factor_space : FactorSpace
    labels : sequence of int
        One label per instance.
    class_names : sequence of str, optional
    name : str
        Shown in reports and part of :meth:`describe`.
    """

    def __init__(
        self,
        fn: Callable[[np.ndarray, np.ndarray], Any],
        *,
        factor_space: FactorSpace,
        labels: Sequence[int] | np.ndarray,
        class_names: Sequence[str] | None = None,
        name: str | None = None,
    ) -> None:
        if not callable(fn):
            raise InputError(f"`fn` must be callable as fn(instances, factors); got {type(fn).__name__}.")
        if not isinstance(factor_space, FactorSpace):
            raise InputError(
                f"`factor_space` must be a fitaudit.data.factors.FactorSpace; got {type(factor_space).__name__}."
            )
        self.fn = fn
        self.factor_space = factor_space
        self.labels = check_labels(labels, "labels")
        self.class_names = list(class_names) if class_names is not None else None
        self.name = name or getattr(fn, "__qualname__", type(fn).__name__)

    @property
    def n_instances(self) -> int:
        """Number of instances z."""
        return len(self.labels)

    def generate(self, instances: np.ndarray, factors: np.ndarray) -> np.ndarray:
        """``fn(instances, factors)`` as a numpy array."""
        return np.asarray(self.fn(instances, factors))

    def describe(self) -> dict[str, Any]:
        """JSON-safe identity: the callable's name, the space and the labels."""
        return {
            "generator": self.name,
            "factor_space": self.factor_space.to_dict(),
            "labels": self.labels.tolist(),
        }

    def __repr__(self) -> str:
        return f"CallableGenerator({self.name}, {self.n_instances} instances, {self.factor_space!r})"


def as_generator(
    fn: Any,
    *,
    factor_space: FactorSpace | None = None,
    labels: Sequence[int] | np.ndarray | None = None,
    class_names: Sequence[str] | None = None,
    name: str | None = None,
) -> Any:
    """A :class:`Generator` from a generator object (returned as it is) or a plain callable.

    Parameters
    ----------
    fn : Generator or callable
        A callable ``fn(instances, factors) -> batch of inputs`` needs
        ``factor_space`` and ``labels`` (one per instance).
    factor_space : FactorSpace
    labels : sequence of int
    class_names : sequence of str, optional
    name : str, optional
    """
    if isinstance(fn, Generator) and not isinstance(fn, type):
        check_generator(fn)
        return fn
    if factor_space is None or labels is None:
        raise InputError(
            "`generator` must be a generator object (factor_space, labels, generate) or a callable "
            "fn(instances, factors) given with `factor_space` and `labels`."
        )
    return CallableGenerator(fn, factor_space=factor_space, labels=labels, class_names=class_names, name=name)


def check_generator(generator: Any, name: str = "generator") -> Any:
    """``generator`` if it has a FactorSpace, integer labels and a ``generate`` method."""
    space = getattr(generator, "factor_space", None)
    if not isinstance(space, FactorSpace):
        raise InputError(f"`{name}.factor_space` must be a FactorSpace; got {type(space).__name__}.")
    if not callable(getattr(generator, "generate", None)):
        raise InputError(f"`{name}` must have a generate(instances, factors) method.")
    check_labels(getattr(generator, "labels", None), f"{name}.labels")
    return generator


def describe_generator(generator: Any) -> dict[str, Any]:
    """A JSON-safe description (the generator's ``describe()`` if it has one)."""
    describe = getattr(generator, "describe", None)
    if callable(describe):
        return dict(describe())
    return {
        "generator": type(generator).__qualname__,
        "factor_space": generator.factor_space.to_dict(),
        "labels": np.asarray(generator.labels).tolist(),
    }


def check_queries(generator: Any, instances: Any, factors: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(instances, factors)`` checked against ``generator``: indices in range, one factor row each, inside the space.

    Raises
    ------
    InputError
        Instance indices out of range or factors outside the space.
    """
    n_instances = len(generator.labels)
    idx = np.asarray(instances)
    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
        raise InputError(f"`instances` must be a 1-D integer array; got {idx.dtype} with shape {idx.shape}.")
    if idx.size and (idx.min() < 0 or idx.max() >= n_instances):
        raise InputError(f"`instances` must lie in [0, {n_instances - 1}]; got {idx.min()}..{idx.max()}.")
    values = generator.factor_space.validate(factors, "factors")
    if len(values) != len(idx):
        raise InputError(f"`factors` must have one row per instance ({len(idx)}); got {len(values)}.")
    return idx, values


def generate_checked(generator: Any, instances: Any, factors: Any) -> np.ndarray:
    """Call ``generator.generate`` after checking its inputs (:func:`check_queries`), then check its output.

    Raises
    ------
    InputError
        Instance indices out of range, factors outside the space, or an
        output that is not an array with one finite row per query.
    """
    idx, values = check_queries(generator, instances, factors)
    out = np.asarray(generator.generate(idx, values))
    if out.ndim < 1 or out.shape[0] != len(idx):
        raise InputError(
            f"the generator must return one input per query ({len(idx)}); got an array of shape {out.shape}."
        )
    if not np.issubdtype(out.dtype, np.number):
        raise InputError(f"the generator must return numbers; got dtype {out.dtype}.")
    if not np.all(np.isfinite(out)):
        raise InputError("the generator returned NaN or infinite values.")
    return out
