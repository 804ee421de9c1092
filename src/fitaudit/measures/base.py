"""The base of every complexity measure.

A complexity measure mu(model, training data) -> real number predicts the
generalization gap of a trained network from its weights and training data
alone (Jiang et al., "Fantastic generalization measures and where to find
them", ICLR 2020; the NeurIPS 2020 PGDL competition; user guide: docs/pgdl.md, docs/measures.md).
Every measure is oriented so that a *larger value predicts a larger gap*
(the competition's convention); a measure whose natural direction is the
opposite (a margin, a flatness) is negated or inverted in its definition,
and says so in its docstring.

One module per measure under :mod:`fitaudit.measures`; each defines a
subclass of :class:`Measure` with its metadata as class attributes, named
in :data:`fitaudit.measures.catalogue.BUILTIN_MEASURES`;
:func:`fitaudit.measures.get_measure` and :func:`~fitaudit.measures.list_measures`
find them (as scikit-learn's scorers and torchmetrics' metrics are found).
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, TypeVar

import numpy as np

from fitaudit._errors import InputError

_T = TypeVar("_T")


@dataclasses.dataclass
class ModelRecord:
    """Everything a measure may look at for one trained model.

    Attributes
    ----------
    model : torch.nn.Module
        The trained network in eval mode, taking channels-first images
        ``(n, C, H, W)`` (or vectors ``(n, d)``) and returning logits.
    train_x : ndarray, shape (m, ...)
        Training inputs, as the model takes them.
    train_y : ndarray of int64, shape (m,)
        Training labels.
    initial_model : torch.nn.Module, optional
        The same network at initialisation (measures with ``needs_init``).
    n_classes : int, optional
        Number of outputs; inferred from the model when absent.
    hparams : dict
        The model's hyperparameters (name -> value), as in model_configs.json.
    metrics : dict
        ``train_acc`` and ``test_acc`` when known. Only the cheating baseline
        (the noisy true gap) may read ``test_acc``.
    model_id : str
    cache : WorkCache
        Work measures share on this model (a new, empty one by default).
    """

    model: Any
    train_x: np.ndarray
    train_y: np.ndarray
    initial_model: Any = None
    n_classes: int | None = None
    hparams: dict[str, Any] = dataclasses.field(default_factory=dict)
    metrics: dict[str, float] = dataclasses.field(default_factory=dict)
    model_id: str = ""
    cache: WorkCache = dataclasses.field(default_factory=lambda: WorkCache(), repr=False, compare=False)


class WorkCache:
    """Work one measure did on a model that another measure may reuse, with the seconds it took.

    Each :class:`ModelRecord` owns one (``record.cache``): the PAC-Bayes
    measures share one noise-scale search per model and settings, the
    spectrum measures one set of layer spectra. A measure that finds the
    work done is charged its seconds all the same (per thread, in
    :meth:`charged`), so that every measure is timed as if it ran alone:
    each was a separate submission in the PGDL competition, with its own
    time budget. :func:`measure_clock` adds the charge to the wall clock.
    The cache lives as long as its record (one model of one scoring run);
    nothing is kept at module level.
    """

    def __init__(self) -> None:
        self._entries: dict[str, tuple[Any, float]] = {}
        self._charged: dict[int, float] = {}

    def __repr__(self) -> str:
        return f"WorkCache({len(self._entries)} entries)"

    def get_or_compute(self, key: str, compute: Callable[[], _T]) -> _T:
        """The work stored under ``key`` (its seconds charged to the calling thread), or ``compute()`` stored."""
        if key in self._entries:
            value, seconds = self._entries[key]
            thread = threading.get_ident()
            self._charged[thread] = self._charged.get(thread, 0.0) + seconds
            return value
        start = time.perf_counter()
        value = compute()
        self._entries[key] = (value, time.perf_counter() - start)
        return value

    def charged(self) -> float:
        """Seconds of reused work charged so far to the calling thread."""
        return self._charged.get(threading.get_ident(), 0.0)


@dataclasses.dataclass
class MeasureTime:
    """Seconds a measure call cost, set when its :func:`measure_clock` block ends."""

    seconds: float = 0.0


@contextlib.contextmanager
def measure_clock(record: ModelRecord) -> Iterator[MeasureTime]:
    """Time a measure call on ``record`` as if it ran alone: wall-clock seconds plus the reused work it was charged.

    ``with measure_clock(record) as timing: measure(record)`` then ``timing.seconds``.
    """
    timing = MeasureTime()
    start, charged_before = time.perf_counter(), record.cache.charged()
    try:
        yield timing
    finally:
        timing.seconds = time.perf_counter() - start + record.cache.charged() - charged_before


class Measure(abc.ABC):
    """Base class of complexity measures (larger value = larger predicted gap).

    Class attributes
    ----------------
    name : str
        Registry name (snake_case).
    needs_data : bool
        Reads the training data.
    needs_init : bool
        Reads the model at initialisation.
    needs_grad : bool
        Backpropagates through the model.
    cost : {"cheap", "moderate", "expensive"}
        Rough cost per model (cheap: weights only; moderate: a few forward
        passes; expensive: a search with many forward/backward passes).
    family : str
        ``"baseline"``, ``"starting_kit"``, ``"fantastic"``, ``"winners"``,
        ``"spectrum"`` (heavy-tailed self-regularisation) or ``"fitaudit"``.
    reference : str
        The paper (and equation) the definition follows.
    formats : tuple of str
        Model formats the measure can read: ``"torch"`` (a torch module) and,
        for measures that need only outputs or weights, ``"onnx"`` (an ONNX
        model of an imported population, :mod:`fitaudit.pgdl.population`).
    """

    name: ClassVar[str]
    needs_data: ClassVar[bool] = True
    needs_init: ClassVar[bool] = False
    needs_grad: ClassVar[bool] = False
    cost: ClassVar[str] = "cheap"
    family: ClassVar[str] = ""
    reference: ClassVar[str] = ""
    formats: ClassVar[tuple[str, ...]] = ("torch",)

    def __init__(self, *, random_state: Any = 0) -> None:
        self.random_state = random_state

    def __call__(self, record: ModelRecord) -> float:
        """The measure's value for ``record`` (a finite float)."""
        if not isinstance(record, ModelRecord):
            raise InputError(f"`record` must be a ModelRecord; got {type(record).__name__}.")
        model_format = getattr(record.model, "model_format", "torch")
        if model_format not in self.formats:
            raise InputError(
                f"measure {self.name!r} takes {' or '.join(self.formats)} models; "
                f"model {record.model_id!r} is {model_format}."
            )
        if self.needs_init and record.initial_model is None:
            raise InputError(
                f"measure {self.name!r} needs `record.initial_model` (the network at initialisation)."
            )
        value = float(self.compute(record))
        if not np.isfinite(value):
            raise InputError(
                f"measure {self.name!r} gave a non-finite value ({value}) for model {record.model_id!r}."
            )
        return value

    @abc.abstractmethod
    def compute(self, record: ModelRecord) -> float:
        """The raw value (checked by :meth:`__call__`)."""

    def saturation_value(self, n_examples: int) -> float | None:
        """The value a measure built on a bounded search takes when the search ends at its bound.

        None (the default) for measures without such a search. A model whose
        value equals it was not resolved by the search ("saturated"); the
        PGDL leaderboard counts them. ``n_examples`` is the training-set size
        (some measures scale by it).
        """
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(random_state={self.random_state!r})"

    @classmethod
    def metadata(cls) -> dict[str, Any]:
        """The class attributes as a JSON-safe dict."""
        return {
            "name": cls.name,
            "needs_data": cls.needs_data,
            "needs_init": cls.needs_init,
            "needs_grad": cls.needs_grad,
            "cost": cls.cost,
            "family": cls.family,
            "reference": cls.reference,
            "formats": list(cls.formats),
            "summary": (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else "",
        }
