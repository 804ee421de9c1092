"""The examination loop: Algorithm 1 of Shu, Liu, Qiu, Yuille (AAAI 2020).

For every instance z_i (label y_i) and t = 1..T: the examiner proposes
factors s_t, the generator renders x = g(z_i, s_t), the classifier scores
it, l_t = L(f(x), y_i) (docs/examiner.md#algorithm-1; by default the negative
post-softmax true-class probability, see :mod:`fitaudit.examine.losses`),
and the examiner learns from (s_t, l_t). The paper reports
E_examiner = mean_i l_i^T (the loss of the T-th query) and curves over t;
fitaudit also reports the worst case found, max_{t <= T} l_i^t.

All instances are examined together: every step asks the examiner for
factors ``(n_instances, q, n_factors)``, renders ONE batch and classifies
ONE batch. Instances may be split into fixed chunks (``chunk_size``) that
run in parallel through :func:`fitaudit.parallel.parallel_map` (local
processes or a Dask cluster); the chunks and their seeds do not depend on
``n_jobs``, so neither do the numbers.

With ``checkpoint_dir`` the query log of every chunk is written every
``checkpoint_every`` steps (npz, atomically) under a key that fingerprints
the model weights, the generator, the examiner and its settings, the seed,
the loss and the direction. A killed run resumes by replaying the logged
steps through the examiner's ``ask``/``tell`` (no model calls) and goes on;
examiners are deterministic given their seed and tell history, so the result
is the same as that of an uninterrupted run.
"""

from __future__ import annotations

import copy
import functools
import inspect
import math
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fitaudit._errors import FitauditError, InputError
from fitaudit._validation import check_int
from fitaudit.checkpoint import CheckpointStore, check_folder, code_fingerprint
from fitaudit.data.factors import FactorSpace
from fitaudit.data.generators import (
    as_generator,
    check_queries,
    describe_generator,
    generate_checked,
)
from fitaudit.examine.base import Examiner
from fitaudit.examine.losses import check_loss, score_queries
from fitaudit.examine.profile import result_profile
from fitaudit.examine.result import RESERVED_COLUMNS, ExaminationResult, summarise_logs
from fitaudit.models import as_classifier
from fitaudit.parallel import check_n_jobs, parallel_map
from fitaudit.random import as_seed, spawn_seeds

#: bump when the query-log format changes, so old checkpoints are not reused
_LOG_VERSION = 1


def _code_fingerprint(examiner_class: type) -> str:
    """Fingerprint of the code an examination runs: all of fitaudit's source and, for an examiner
    defined outside fitaudit, its modules (:func:`~fitaudit.checkpoint.code_fingerprint`)."""
    return code_fingerprint(examiner_class, _examine_chunk, check_loss)


def restrict_space(space: FactorSpace, ranges: Mapping[str, Any] | None) -> FactorSpace:
    """``space`` narrowed to ``ranges`` ``{name: (low, high)}``; a single number fixes a factor.

    Raises
    ------
    InputError
        Naming ``ranges``: an unknown factor, a range that is not two
        finite numbers, an inverted range (low > high) or one outside the
        factor's own range (nothing left to examine).
    """
    if ranges is None:
        return space
    if not isinstance(ranges, Mapping):
        raise InputError(f"`ranges` must be a mapping factor name -> (low, high); got {type(ranges).__name__}.")
    unknown = sorted(set(ranges) - set(space.names))
    if unknown:
        raise InputError(
            f"`ranges` names unknown factor(s) {', '.join(map(str, unknown))}; the factors are {', '.join(space.names)}."
        )
    bounds: dict[str, tuple[float, float]] = {}
    for name, value in ranges.items():
        pair: Any = (value, value) if np.isscalar(value) else value
        try:
            low, high = (float(v) for v in pair)
        except (TypeError, ValueError) as exc:
            raise InputError(f"`ranges['{name}']` must be (low, high) or one number; got {value!r}.") from exc
        if not (math.isfinite(low) and math.isfinite(high)):
            raise InputError(f"`ranges['{name}']` must be finite; got ({low:g}, {high:g}).")
        if low > high:
            raise InputError(f"`ranges['{name}']` is inverted: low {low:g} > high {high:g}.")
        factor = space[name]
        if high < factor.low or low > factor.high:
            raise InputError(
                f"`ranges['{name}']` ({low:g}, {high:g}) is empty inside the factor's range "
                f"[{factor.low:g}, {factor.high:g}]."
            )
        if low < factor.low or high > factor.high:
            raise InputError(
                f"`ranges['{name}']` ({low:g}, {high:g}) must lie inside the factor's range "
                f"[{factor.low:g}, {factor.high:g}]."
            )
        bounds[name] = (low, high)
    return space.restrict(**bounds)


def free_factors(space: FactorSpace) -> np.ndarray:
    """Columns of the factors with a range to search (a fixed factor, low == high, is not the examiner's)."""
    return np.flatnonzero(space.highs > space.lows)


def _check_instances(instances: Any, n_available: int) -> np.ndarray:
    if instances is None:
        return np.arange(n_available)
    if isinstance(instances, (int, np.integer)) and not isinstance(instances, bool):
        n = check_int(instances, "instances", minimum=1, maximum=n_available)
        return np.arange(n)
    idx = np.asarray(instances)
    if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
        raise InputError(
            f"`instances` must be a number of instances or a non-empty 1-D list of instance indices; "
            f"got {idx.dtype} with shape {idx.shape}."
        )
    if idx.min() < 0 or idx.max() >= n_available:
        raise InputError(f"`instances` must lie in [0, {n_available - 1}]; got {idx.min()}..{idx.max()}.")
    if len(np.unique(idx)) != len(idx):
        raise InputError("`instances` must not repeat an instance.")
    return idx.astype(np.int64)


def _examiner_spec(examiner: Any, options: Mapping[str, Any] | None) -> tuple[str, type[Examiner], dict[str, Any]]:
    """(name, examiner class, constructor settings without the seed)."""
    opts = dict(options or {})
    if "random_state" in opts:
        raise InputError("`examiner_options` must not hold `random_state`; the examiners' seeds come from "
                         "examine()'s own `random_state`.")
    if isinstance(examiner, str):
        from fitaudit.examine.registry import get_examiner

        probe = get_examiner(examiner, random_state=0, **opts)  # validates the name and the options
        return examiner.strip().lower(), type(probe), _constructor_settings(probe)
    if isinstance(examiner, Examiner):
        if opts:
            raise InputError("`examiner_options` only goes with an examiner name; configure the object instead.")
        return type(examiner).name, type(examiner), _constructor_settings(examiner)
    raise InputError(
        f"`examiner` must be an examiner name (e.g. 'bo', 'rl', 'random', 'optuna:tpe') or an Examiner; "
        f"got {type(examiner).__name__}."
    )


def _constructor_settings(examiner: Examiner) -> dict[str, Any]:
    """The examiner's constructor arguments as given (not the seed, not derived attributes).

    Read from the object, not from :meth:`Examiner.settings` (which may shorten
    an argument for JSON, e.g. an Optuna sampler object to its class name), so
    that the examiner rebuilt for every chunk is configured like the one given.
    """
    accepted = inspect.signature(type(examiner)).parameters
    return {k: getattr(examiner, k) for k in accepted if k != "random_state" and hasattr(examiner, k)}


def _chunk_seeds(seed: int) -> tuple[int, int]:
    """(examiner seed, reference-sample seed) of one chunk."""
    a, b = np.random.SeedSequence(seed).generate_state(2)
    return int(a), int(b)


class _Log:
    """The query log of one chunk, with its npz segments in a checkpoint store."""

    FIELDS = ("factors", "loss", "predicted", "true_class_probability")

    def __init__(self, store: CheckpointStore | None, key: str, steps: int, n: int, q: int, c: int) -> None:
        self.store, self.key = store, key
        self.factors = np.zeros((steps, n, q, c))
        self.loss = np.zeros((steps, n, q))
        self.predicted = np.zeros((steps, n, q), dtype=np.int64)
        self.true_class_probability = np.zeros((steps, n, q))
        self.saved = 0  # steps written to the store

    def segment_name(self, start: int) -> str:
        return f"{self.key}-{start:06d}"

    def load(self) -> int:
        """Read the consecutive segments already in the store; return the number of steps they hold."""
        if self.store is None:
            return 0
        steps = len(self.loss)
        while self.saved < steps and self.store.has_arrays(self.segment_name(self.saved)):
            arrays = self.store.load_arrays(self.segment_name(self.saved))
            count = min(len(arrays["loss"]), steps - self.saved)
            if arrays["factors"].shape[1:] != self.factors.shape[1:]:
                raise FitauditError(f"checkpoint segment {self.segment_name(self.saved)} has the wrong shape.")
            for name in self.FIELDS:
                getattr(self, name)[self.saved : self.saved + count] = arrays[name][:count]
            self.saved += count
            if count < len(arrays["loss"]):
                break
        return self.saved

    def flush(self, done: int) -> None:
        """Write steps ``saved..done`` as one segment."""
        if self.store is None or done <= self.saved:
            return
        rows = slice(self.saved, done)
        self.store.save_arrays(self.segment_name(self.saved), {n: getattr(self, n)[rows] for n in self.FIELDS})
        self.saved = done


def _same_device(classifier: Any, generator: Any) -> bool:
    """Whether ``generator`` renders on the device of a torch ``classifier`` (then nothing crosses to the host)."""
    if not (callable(getattr(generator, "generate_tensor", None)) and callable(getattr(classifier, "logits_tensor", None))):
        return False
    return str(getattr(generator, "device", "")) == str(getattr(classifier, "device", None))


def _logits(classifier: Any, generator: Any, instances: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """Render queries and classify them: logits ``(n, k)``.

    When the generator renders on the model's device (the image transforms,
    :mod:`fitaudit.data.transforms`), the images stay there from rendering
    to the model call and only the logits, one row per query, come back.
    """
    if _same_device(classifier, generator):
        idx, values = check_queries(generator, instances, factors)
        return np.asarray(classifier.logits_tensor(generator.generate_tensor(idx, values)).cpu().numpy())
    return np.asarray(classifier.logits(generate_checked(generator, instances, factors)))


def _score(classifier: Any, generator: Any, instances: np.ndarray, factors: np.ndarray, labels: np.ndarray, loss: str) -> Any:
    """Render one batch, classify it, score it."""
    return score_queries(_logits(classifier, generator, instances, factors), labels, loss)


def _examine_chunk(
    chunk: tuple[int, tuple[int, ...], int],
    *,
    classifier: Any,
    generator: Any,
    space: FactorSpace,
    examiner: tuple[str, type[Examiner], dict[str, Any]],
    steps: int,
    sign: float,
    loss: str,
    n_reference: int,
    checkpoint_dir: str | None,
    checkpoint_every: int,
    key: str,
    progress: bool,
) -> dict[str, np.ndarray]:
    """Examine one chunk of instances for ``steps`` steps (resuming from its log); return its log."""
    _, members, seed = chunk
    idx = np.asarray(members, dtype=np.int64)
    labels = np.asarray(generator.labels)[idx]
    examiner_seed, reference_seed = _chunk_seeds(seed)
    store = CheckpointStore(checkpoint_dir) if checkpoint_dir is not None else None

    reference = _reference(classifier, generator, space, idx, labels, n_reference, reference_seed, loss, store, key)

    free = free_factors(space)
    _, examiner_cls, examiner_settings = examiner
    ex = examiner_cls(random_state=examiner_seed, **examiner_settings)
    ex.start(FactorSpace([space.factors[i] for i in free]), len(idx))
    q = ex.queries_per_step
    log = _Log(store, key, steps, len(idx), q, len(space))
    done = log.load()
    tolerance = 1e-6 * np.maximum(1.0, space.highs - space.lows)[free]
    # replay the log (no model calls) so that the examiner can go on; a finished log needs no replay
    for t in range(done if done < steps else 0):
        proposed = ex.ask()
        if np.any(np.abs(proposed - log.factors[t][..., free]) > tolerance):
            raise FitauditError(
                f"the checkpoint in `checkpoint_dir` does not match the examiner's proposals at step {t + 1} "
                "(was the examiner changed, or is it not deterministic?); use another folder."
            )
        ex.tell(log.factors[t][..., free], sign * log.loss[t])
    full = np.broadcast_to(space.lows, (len(idx), q, len(space))).copy()  # fixed factors stay at their value
    query_instances = np.repeat(idx, q)
    query_labels = np.repeat(labels, q)
    bar = tqdm(total=steps, initial=done, desc=f"examine ({ex.name})", disable=not progress, unit="step")
    try:
        for t in range(done, steps):
            proposed = ex.ask()
            full[..., free] = proposed
            scores = _score(classifier, generator, query_instances, full.reshape(-1, len(space)), query_labels, loss)
            values = scores.loss.reshape(len(idx), q)
            ex.tell(proposed, sign * values)
            log.factors[t] = full
            log.loss[t] = values
            log.predicted[t] = scores.predicted.reshape(len(idx), q)
            log.true_class_probability[t] = scores.true_class_probability.reshape(len(idx), q)
            done = t + 1
            if done % checkpoint_every == 0:
                log.flush(done)
            bar.update(1)
    finally:
        log.flush(done)  # an interrupted run keeps every finished step
        bar.close()
    return {
        **{name: getattr(log, name) for name in _Log.FIELDS},
        **{f"reference_{name}": value for name, value in reference.items()},
    }


def _reference(
    classifier: Any,
    generator: Any,
    space: FactorSpace,
    idx: np.ndarray,
    labels: np.ndarray,
    n_reference: int,
    seed: int,
    loss: str,
    store: CheckpointStore | None,
    key: str,
) -> dict[str, np.ndarray]:
    """``n_reference`` uniform random queries per instance: the baseline of the weakness report."""
    name = f"{key}-reference"
    if store is not None and store.has_arrays(name):
        return store.load_arrays(name)
    n, c = len(idx), len(space)
    if n_reference == 0:
        out = {"factors": np.zeros((n, 0, c)), "loss": np.zeros((n, 0)), "predicted": np.zeros((n, 0), dtype=np.int64),
               "true_class_probability": np.zeros((n, 0))}
    else:
        factors = space.sample(n * n_reference, random_state=seed)
        scores = _score(classifier, generator, np.repeat(idx, n_reference), factors, np.repeat(labels, n_reference), loss)
        out = {
            "factors": factors.reshape(n, n_reference, c),
            "loss": scores.loss.reshape(n, n_reference),
            "predicted": scores.predicted.reshape(n, n_reference),
            "true_class_probability": scores.true_class_probability.reshape(n, n_reference),
        }
    if store is not None:
        store.save_arrays(name, out)
    return out


def _check_labels_fit(classifier: Any, generator: Any, idx: np.ndarray, space: FactorSpace) -> None:
    """One probe query: the model's number of classes must cover every label examined."""
    k = _logits(classifier, generator, idx[:1], space.lows[None, :] + 0.5 * (space.highs - space.lows)[None, :]).shape[1]
    labels = np.asarray(generator.labels)[idx]
    if labels.max() >= k:
        raise InputError(
            f"`generator.labels` holds label {int(labels.max())} but the model outputs {k} classes "
            f"(labels must be in [0, {k - 1}])."
        )


def examine(
    model: Any,
    generator: Any,
    *,
    examiner: str | Examiner = "bo",
    steps: int = 100,
    instances: Any = None,
    maximize: bool = True,
    loss: str = "true_class_probability",
    ranges: Mapping[str, Any] | None = None,
    examiner_options: Mapping[str, Any] | None = None,
    n_reference: int = 32,
    weakness: bool = True,
    random_state: Any = 0,
    n_jobs: int | None = None,
    chunk_size: int | None = 64,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    checkpoint_every: int = 10,
    progress: bool = False,
    factor_space: FactorSpace | None = None,
    labels: Sequence[int] | np.ndarray | None = None,
    class_names: Sequence[str] | None = None,
    batch_size: int = 1024,
    device: str = "cpu",
    backend: str | None = None,
) -> ExaminationResult:
    """Examine ``model`` over the factors of ``generator`` (Shu et al., AAAI 2020, Algorithm 1).

    Parameters
    ----------
    model : model
        Anything :func:`fitaudit.models.as_classifier` accepts (torch
        module, ONNX, scikit-learn classifier, callable returning scores).
    generator : Generator or callable
        A generator object (``factor_space``, ``labels``,
        ``generate(instances, factors)``, e.g.
        :class:`fitaudit.data.shapes.ShapesGenerator`) or a plain callable
        ``g(instances, factors) -> inputs`` given with ``factor_space`` and
        ``labels`` (see :func:`fitaudit.data.generators.as_generator`).
    examiner : str or Examiner
        ``"bo"``, ``"rl"``, ``"random"``, ``"optuna:tpe"``, ... (see
        :func:`fitaudit.examine.registry.list_examiners`) or an examiner
        object (only its settings are used; the seeds come from
        ``random_state``).
    steps : int
        T, the steps per instance (every step asks ``queries_per_step``
        queries per instance).
    instances : int or sequence of int, optional
        Which of the generator's instances to examine (an int n: the first
        n); all by default.
    maximize : bool
        True: look for weakness (maximise the loss). False: look for
        strength (the examiner maximises the negated loss).
    loss : {"true_class_probability", "zero_one", "margin"}
        See :mod:`fitaudit.examine.losses`.
    ranges : mapping, optional
        ``{factor: (low, high)}`` narrows the examined space; a single
        number fixes a factor (the paper fixes the sun's direction). The
        examiner searches only the factors with a range left (an RL
        ``factor_order`` then names only those); the query log records
        every factor.
    examiner_options : mapping, optional
        Constructor settings of a named examiner (e.g.
        ``{"queries_per_step": 32}`` for the RL examiner).
    n_reference : int
        Uniform random queries per instance scored as the baseline of the
        weakness report (not counted in ``n_model_queries``).
    weakness : bool
        Compute the weakness report (:func:`fitaudit.examine.weakness.weakness_report`).
    random_state : None, int, SeedSequence or Generator, default 0
        Seeds the chunks' examiners and reference samples; the same seed
        gives the same numbers whatever ``n_jobs``. An int is the run's
        seed; ``None`` or a Generator draws one (:func:`fitaudit.random.as_seed`),
        recorded in the result (resuming needs the same seed).
    n_jobs : int, optional
        Chunks examined in parallel (joblib; Dask inside
        ``joblib.parallel_config(backend="dask")``).
    chunk_size : int or None
        Instances examined together in one chunk (one batch per step);
        ``None``: all in one chunk. Part of what the numbers depend on.
    checkpoint_dir : path, optional
        Keep the query log there and resume from it.
    checkpoint_every : int
        Steps between two writes of the log.
    progress : bool
        Progress bar on stderr.
    factor_space, labels, class_names
        For a plain callable ``generator``.
    batch_size, device
        Passed to :func:`~fitaudit.models.as_classifier`.
    backend : {"eager", "auto", "torch", "onnx"}, optional
        How a torch model runs (:mod:`fitaudit.models.inference`). The
        examiner's search amplifies the backends' tiny logit differences,
        and ``"auto"`` chooses a backend by timing, so by default a torch
        model runs eager torch at the fixed ``batch_size``
        (:data:`~fitaudit.models.inference.settings.ADAPTIVE_BACKEND`),
        unless a default backend was named (``--backend``,
        ``FITAUDIT_BACKEND``). The result records it (``backend``): a rerun
        with the same backend, seed and thread count repeats the numbers.
        Ignored for models that are not torch modules.

    Returns
    -------
    ExaminationResult
    """
    started = time.perf_counter()
    random_state = as_seed(random_state)  # checked where it enters: the seed recorded in the result; a Generator draws it
    n_jobs = check_n_jobs(n_jobs)
    gen = as_generator(generator, factor_space=factor_space, labels=labels, class_names=class_names)
    steps = check_int(steps, "steps", minimum=1)
    loss = check_loss(loss)
    if not isinstance(maximize, (bool, np.bool_)):
        raise InputError(f"`maximize` must be True or False; got {maximize!r}.")
    n_reference = check_int(n_reference, "n_reference", minimum=0)
    checkpoint_every = check_int(checkpoint_every, "checkpoint_every", minimum=1)
    space = restrict_space(gen.factor_space, ranges)
    if not len(free_factors(space)):
        raise InputError("`ranges` fixes every factor; at least one must keep a range to examine.")
    clash = sorted(set(space.names) & set(RESERVED_COLUMNS))
    if clash:
        raise InputError(f"`generator.factor_space` has factor(s) named {clash}, which are reserved query-log columns.")
    idx = _check_instances(instances, len(gen.labels))
    size = len(idx) if chunk_size is None else check_int(chunk_size, "chunk_size", minimum=1)
    spec = _examiner_spec(examiner, examiner_options)
    folder = str(check_folder(checkpoint_dir)) if checkpoint_dir is not None else None
    classifier, used_backend = _with_adaptive_backend(as_classifier(model, batch_size=batch_size, device=device),
                                                      backend, batch_size)
    _check_labels_fit(classifier, gen, idx, space)
    groups = [tuple(int(i) for i in idx[s : s + size]) for s in range(0, len(idx), size)]
    seeds = spawn_seeds(int(random_state), len(groups))
    chunks = [(c, members, seed) for c, (members, seed) in enumerate(zip(groups, seeds))]
    base_key = CheckpointStore.key(
        "fitaudit.examine.examine", _LOG_VERSION, _code_fingerprint(spec[1]), classifier, describe_generator(gen), space.to_dict(),
        spec[0], spec[2], loss, bool(maximize), n_reference,
    ) if folder is not None else ""
    run = functools.partial(
        _run_keyed, base_key=base_key, classifier=classifier, generator=gen, space=space, examiner=spec,
        steps=steps, sign=1.0 if maximize else -1.0, loss=loss, n_reference=n_reference,
        checkpoint_dir=folder, checkpoint_every=checkpoint_every, progress=progress and len(chunks) == 1,
    )
    logs = parallel_map(run, chunks, n_jobs=n_jobs, progress=progress and len(chunks) > 1, desc="examine chunks")
    logs_all = {name: np.concatenate([log[name] for log in logs], axis=1 if not name.startswith("reference_") else 0)
                for name in logs[0]}
    result = summarise_logs(
        logs_all, instances=idx, labels=np.asarray(gen.labels)[idx], space=space, loss=loss, maximize=bool(maximize),
        examiner=spec[0], examiner_settings=spec[2], generator=describe_generator(gen),
        class_names=getattr(gen, "class_names", None), random_state=int(random_state), seeds=seeds,
        chunk_size=size,
    )
    if weakness:
        from fitaudit.examine.weakness import weakness_report

        result.weakness = weakness_report(result, random_state=int(random_state))
    result.sensitivity = result_profile(result)
    result.backend = used_backend
    result.seconds = time.perf_counter() - started
    return result


def _with_adaptive_backend(classifier: Any, backend: str | None, batch_size: int) -> tuple[Any, str | None]:
    """A torch adapter set to the examiner's backend (a copy: the caller's adapter is left as it was), and that backend.

    Other models run as they are (backend ``None``).
    """
    from fitaudit.models.inference.settings import adaptive_backend

    chosen = adaptive_backend(backend)
    if getattr(classifier, "kind", None) != "torch":
        return classifier, None
    if getattr(classifier, "requested_backend", None) == chosen:
        return classifier, chosen
    own = copy.copy(classifier)
    own.configure(backend=chosen, batch_size=batch_size)
    return own, chosen


def _run_keyed(chunk: tuple[int, tuple[int, ...], int], *, base_key: str, **kwargs: Any) -> dict[str, np.ndarray]:
    """:func:`_examine_chunk` with the chunk's own checkpoint key (its instances and seed)."""
    key = CheckpointStore.key(base_key, chunk[1], chunk[2]) if base_key else ""
    return _examine_chunk(chunk, key=key, **kwargs)

