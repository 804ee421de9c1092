"""The overfitting test on a folder of images, streamed batch by batch.

Werpachowski, Gyorgy, Szepesvari, NeurIPS 2019, Sec. 5: the translational
AEG on images evaluated through the standard pipeline (resize R, centre crop
C), shifting the crop window inside the centre ``C + 2P`` canvas
(docs/overfit.md#your-own-images-image-folders-and-the-evaluation-pipeline).
The per-example vectors the tests need --
L(f, X_i), L(f, g(X_i)) h_g(g(X_i)) and success -- are computed one batch of
decoded canvases at a time (:meth:`fitaudit.data.images.ImageDataset.batches`),
so memory holds two batches of images whatever the number of images; only
the vectors (three numbers per image) grow with m.

Batches are grouped into *shards* (runs of consecutive batches) that can run
on other workers through :func:`fitaudit.parallel.parallel_map` (processes,
or a Dask cluster inside ``joblib.parallel_config(backend="dask")``); the
concatenated vectors, hence the p-value, are those of one process. For the
deterministic AEGs (strongest, nearest) the vectors do not depend on the
batch size either; the randomised ones (random, random2) draw each batch's
shifts from a seed derived from ``(random_state, batch number)``, so their
draws depend on the batch size (not on the shards).

With ``checkpoint_dir`` every batch's vectors are a unit of a
:class:`~fitaudit.checkpoint.CheckpointStore`, keyed by the model's weights,
the pipeline, the AEG, the batch's files (paths, sizes, modification times)
and labels: a killed run resumes after its last finished batch.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_int
from fitaudit.checkpoint import CheckpointStore, check_folder
from fitaudit.data.decode import DECODE_THREADS
from fitaudit.data.image_files import BrokenImage
from fitaudit.data.images import ImageDataset
from fitaudit.data.pipeline import EvalPipeline
from fitaudit.models.pipeline_classifier import PipelineClassifier
from fitaudit.overfit.g3 import MIN_IMAGES, G3ShiftTest, decide_g3, pair_features, plan_g3
from fitaudit.overfit.independence import check_delta
from fitaudit.overfit.mirror import MirrorTranslationAEG
from fitaudit.overfit.nmodel import NModelTestResult, combine_runs, worst_chance
from fitaudit.overfit.one_model import (
    OverfitTestResult,
    aeg_warnings,
    result_from_terms,
)
from fitaudit.overfit.translation import TranslationAEG
from fitaudit.parallel import parallel_map
from fitaudit.random import RandomState, as_seed
from fitaudit.results import Result

#: per-example vectors of one run
TERM_KEYS = ("loss", "weighted_adv_loss", "success", "prediction")


@dataclasses.dataclass(frozen=True)
class ImageAEGSettings:
    """The AEG and decoding settings of an image run (what a shard needs besides the model).

    Attributes
    ----------
    pipeline : EvalPipeline
    eps : int
        Largest shift; ``3 eps <= P`` (checked by :meth:`EvalPipeline.check_eps`).
    variant : str
        strongest, nearest, random or random2.
    batch_size : int
        Images decoded and handed to the AEG at a time.
    model_batch_size : int
        Images per model call inside the AEG.
    decode_threads : int
        Decoding threads per shard (default: this machine's cores,
        :data:`fitaudit.data.decode.DECODE_THREADS`).
    skip_broken : bool
        Skip files that fail to decode (counted) instead of raising.
    random_state : int
        Seed of the randomised variants (batch b draws from ``SeedSequence(random_state, spawn_key=(b,))``).
    stride : int
        Pixels per step of the shifts (:class:`~fitaudit.overfit.translation.TranslationAEG`);
        ``3 eps stride <= P``.
    mirror : bool
        The candidates include the mirror image of every shift
        (:class:`~fitaudit.overfit.mirror.MirrorTranslationAEG`); the (G3)
        check then tests the flip too.
    """

    pipeline: EvalPipeline
    eps: int
    variant: str = "strongest"
    batch_size: int = 64
    model_batch_size: int = 256
    decode_threads: int = DECODE_THREADS
    skip_broken: bool = False
    random_state: int = 0
    stride: int = 1
    mirror: bool = False

    def aeg(self, batch_number: int) -> TranslationAEG:
        """The AEG of one batch (its own seed for the randomised variants)."""
        kind = MirrorTranslationAEG if self.mirror else TranslationAEG
        return kind(
            eps=self.eps,
            margin=self.pipeline.margin,
            variant=self.variant,
            batch_size=self.model_batch_size,
            random_state=np.random.SeedSequence(self.random_state, spawn_key=(batch_number,)),
            stride=self.stride,
        )


def _batch_terms(
    model: Any, pixels: np.ndarray, labels: np.ndarray, aeg: TranslationAEG
) -> dict[str, np.ndarray]:
    """The vectors of one batch of uint8 canvases (:meth:`TranslationAEG.terms`: each canvas goes to the model's device once)."""
    if len(labels) == 0:
        kinds = {"success": bool, "prediction": np.int64}
        return {k: np.zeros(0, dtype=kinds.get(k, np.float64)) for k in TERM_KEYS} | {
            "evaluations": np.array(0)
        }
    return aeg.terms(model, pixels, labels)


def shard_terms(
    batches: tuple[int, int],
    *,
    model: Any,
    dataset: ImageDataset,
    settings: ImageAEGSettings,
    load: dict[str, Any] | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    model_key: str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """The per-example vectors of batches ``start .. stop - 1`` of the dataset (one shard).

    Parameters
    ----------
    batches : (int, int)
        Batch numbers ``[start, stop)``; batch b holds images
        ``b * batch_size .. (b + 1) * batch_size - 1``.
    model : classifier or path
        A classifier on normalised crops, or a model file loaded here with
        :func:`fitaudit.models.load_model` and ``load`` (how a shard on another
        worker gets its model: ONNX sessions do not travel between processes).
    dataset, settings :
        The images and the AEG and decoding settings.
    checkpoint_dir : path, optional
        Keep each batch's vectors (see the module docstring).
    model_key : str, optional
        Fingerprint of the model for the checkpoint keys; default
        :func:`fitaudit.models.fingerprint.model_fingerprint` of ``model``
        plus :func:`~fitaudit.models.fingerprint.run_settings` (a torch
        module's backend and device).
    progress : bool
        A progress bar over the shard's images.

    Returns
    -------
    dict
        ``index`` (positions in ``dataset``), the :data:`TERM_KEYS` vectors,
        ``evaluations`` (model evaluations) and ``broken`` (``[path, reason]``
        of skipped files).
    """
    from fitaudit.models import as_classifier, load_model
    from fitaudit.models.fingerprint import model_fingerprint, run_settings

    store = CheckpointStore(checkpoint_dir) if checkpoint_dir is not None else None
    weights_key = model_fingerprint(model) if store is not None and model_key is None else None
    if isinstance(model, (str, os.PathLike)):
        model = load_model(model, **(load or {}))
    classifier = as_classifier(model)
    if weights_key is not None:  # a file's bytes (before loading) and the backend and device it runs on
        model_key = weights_key + run_settings(classifier)
    wrapped = PipelineClassifier(classifier, settings.pipeline)
    start, stop = batches
    size = settings.batch_size
    rows = np.arange(start * size, min(stop * size, len(dataset)))
    part = dataset.subset(rows)
    out: dict[str, list[Any]] = {k: [] for k in (*TERM_KEYS, "index")}
    evaluations, broken = 0, []
    for number, batch in enumerate(
        part.batches(
            settings.pipeline, kind="pixels", batch_size=size, decode_threads=settings.decode_threads,
            skip_broken=settings.skip_broken, progress=progress,
        ),
        start=start,
    ):
        aeg = settings.aeg(number)
        key = ""
        if store is not None:
            files = part.subset(np.arange((number - start) * size, min((number - start + 1) * size, len(part))))
            key = store.key("image-batch-terms-with-predictions", model_key, aeg, settings.pipeline, files.fingerprint())
        if store is not None and store.has_arrays(key):
            terms = store.load_arrays(key)
        else:
            terms = _batch_terms(wrapped, batch.images, batch.labels, aeg)
            terms["index"] = rows[batch.index]
            if store is not None:
                store.save_arrays(key, terms)
        for k in (*TERM_KEYS, "index"):
            out[k].append(np.asarray(terms[k]))
        evaluations += int(terms["evaluations"])
        broken += [[b.path, b.reason] for b in batch.broken]
    return {k: np.concatenate(v) if v else np.zeros(0) for k, v in out.items()} | {
        "evaluations": evaluations, "broken": broken,
    }


def shard_ranges(n_batches: int, n_shards: int) -> list[tuple[int, int]]:
    """Split batch numbers ``0 .. n_batches - 1`` into ``n_shards`` runs of consecutive batches."""
    n_shards = max(1, min(check_int(n_shards, "n_shards", minimum=1), n_batches))
    edges = np.linspace(0, n_batches, n_shards + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def image_terms(
    model: Any,
    dataset: ImageDataset,
    settings: ImageAEGSettings,
    *,
    n_shards: int = 1,
    n_jobs: int | None = None,
    load: dict[str, Any] | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    model_key: str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """The per-example vectors of one model on every image, in shards (see :func:`shard_terms`).

    Shards run through :func:`fitaudit.parallel.parallel_map` (``n_jobs``
    processes, or a Dask cluster inside ``joblib.parallel_config(backend="dask")``);
    the result is the same for any ``n_shards`` and ``n_jobs``.
    """
    n_batches = -(-len(dataset) // settings.batch_size)
    task = functools.partial(
        shard_terms, model=model, dataset=dataset, settings=settings, load=load,
        checkpoint_dir=checkpoint_dir, model_key=model_key, progress=progress and n_shards == 1,
    )
    shards = parallel_map(
        task, shard_ranges(n_batches, n_shards), n_jobs=n_jobs, progress=progress and n_shards > 1,
        desc="image shards",
    )
    merged: dict[str, Any] = {
        k: np.concatenate([s[k] for s in shards]) for k in (*TERM_KEYS, "index")
    }
    merged["index"] = merged["index"].astype(np.int64)
    merged["success"] = merged["success"].astype(bool)
    merged["evaluations"] = sum(int(s["evaluations"]) for s in shards)
    merged["broken"] = [BrokenImage(p, r) for s in shards for p, r in s["broken"]]
    if len(merged["index"]) < 2:
        raise InputError(f"`--images`: fewer than 2 images of {dataset.source!r} could be decoded.")
    return merged


@dataclasses.dataclass(repr=False)
class ImageOverfitResult(Result):
    """Result of :func:`overfit_test_images`: the test and the facts of the run.

    Attributes
    ----------
    test : OverfitTestResult or NModelTestResult
        The overfitting test (one model) or the N-model test.
    n_scored : int
        Images scored (every model on the same ones).
    broken : list of BrokenImage
        Files skipped because they could not be decoded (``skip_broken``).
    evaluations : list of int
        Model evaluations of each model's AEG.
    """

    test: OverfitTestResult | NModelTestResult
    n_scored: int
    broken: list[Any]
    evaluations: list[int]

    @property
    def pvalue(self) -> float:
        """The test's p-value."""
        return float(self.test.pvalue)

    @property
    def reject(self) -> bool:
        """Whether the test rejects independence at its level."""
        return bool(self.test.reject)


def images_g3(dataset: ImageDataset, settings: ImageAEGSettings, *, random_state: RandomState = 0) -> G3ShiftTest:
    """The (G3) check (:func:`fitaudit.overfit.g3.check_g3`) on the canvases of an image set.

    The plan's images (at most :data:`~fitaudit.overfit.g3.MAX_IMAGES`) are
    decoded batch by batch and reduced to their crops' features at once, so
    memory holds one batch of canvases; files that fail to decode are left
    out when ``settings.skip_broken``.
    """
    plan = plan_g3(len(dataset), eps=settings.eps, random_state=random_state, stride=settings.stride,
                   mirror=settings.mirror)
    kept = np.zeros(len(plan.rows), dtype=bool)
    features: list[np.ndarray] = []
    for batch in dataset.subset(plan.rows).batches(
        settings.pipeline, kind="canvas", batch_size=settings.batch_size, decode_threads=settings.decode_threads,
        skip_broken=settings.skip_broken,
    ):
        kept[batch.index] = True
        flip = None if plan.flip is None else plan.flip[batch.index]
        features.append(pair_features(batch.images, plan.shift[batch.index], margin=settings.pipeline.margin,
                                      eps=settings.eps * settings.stride, flip=flip))
    return decide_g3(plan, np.concatenate(features), kept=kept)


def overfit_test_images(
    models: Sequence[Any],
    dataset: ImageDataset,
    pipeline: EvalPipeline,
    *,
    eps: int | None = None,
    variant: str = "strongest",
    delta: float = 0.05,
    batch_size: int = 64,
    model_batch_size: int = 256,
    decode_threads: int = DECODE_THREADS,
    skip_broken: bool = False,
    n_shards: int = 1,
    n_jobs: int | None = None,
    load: dict[str, Any] | None = None,
    random_state: RandomState = 0,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    model_keys: Sequence[str] | None = None,
    progress: bool = False,
    check_density: bool = True,
    stride: int = 1,
    mirror: bool = False,
) -> ImageOverfitResult:
    """The overfitting test (one model) or the N-model test on an image folder.

    Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 3 and 5: the
    pairwise test (Test B) and the confidence-interval test (Test A) on
    T_i = L(f, g(X_i)) h_g(g(X_i)) - L(f, X_i) with the translational AEG
    moving the crop window of ``pipeline``; with several models, the N-model
    test (Test C) on Tbar_i = (1/N) sum_j T_{i, g_j}(f_j).

    Parameters
    ----------
    models : sequence of classifiers or model paths
        One model, or N runs of one training procedure. Classifiers take the
        pipeline's normalised ``C x C`` crops.
    dataset : ImageDataset
        The scored images (check them first with
        :func:`fitaudit.data.images.check_images`).
    pipeline : EvalPipeline
        The evaluation transform; needs ``P = floor((R - C) / 2) >= 3 eps``.
    eps : int, optional
        Largest shift; default ``floor(P / 3)``.
    variant, delta :
        The AEG variant and the level of the tests.
    batch_size, model_batch_size, decode_threads, skip_broken :
        See :class:`ImageAEGSettings`.
    n_shards, n_jobs :
        Shards of consecutive batches and the parallel workers running them.
    load : dict, optional
        Keyword arguments of :func:`fitaudit.models.load_model` for models given as paths.
    random_state : int, Generator or None
        Seed of the randomised variants.
    checkpoint_dir : path, optional
        Per-batch vectors are kept there (one subfolder per model).
    model_keys : list of str, optional
        Fingerprints of the models' weights keying those checkpoints (e.g.
        of their files); default computed from each model.
    progress : bool
        Progress bars on stderr.
    check_density : bool
        Check (G3) on the images first (:func:`images_g3`: can a classifier
        tell the AEG's shifted crops from the centre crops?); the result's
        ``g3``, which makes the verdict inconclusive where (G3) fails.
    stride : int
        Shifts of ``stride * V_eps`` (:class:`~fitaudit.overfit.translation.TranslationAEG`;
        beyond a random-crop augmentation of fewer pixels); needs
        ``P >= 3 eps stride``, and eps defaults to ``floor(P / (3 stride))``.
    mirror : bool
        Also the mirror image of every shift
        (:class:`~fitaudit.overfit.mirror.MirrorTranslationAEG`): valid where
        the world is mirror-symmetric, which the (G3) check tests with the
        flip (``check_density``).

    Returns
    -------
    ImageOverfitResult
        The test (:attr:`~ImageOverfitResult.test`) and the run's facts:
        images scored, skipped files, evaluations per model.
    """
    models = list(models)
    if not models:
        raise InputError("`models` must hold at least one model; got none.")
    delta = check_delta(delta, high=0.5)
    if checkpoint_dir is not None:  # its per-model subfolders are made later, after the images were checked
        check_folder(checkpoint_dir, "checkpoint_dir")
    stride = check_int(stride, "stride", minimum=1)
    settings = ImageAEGSettings(
        pipeline=pipeline, eps=pipeline.check_eps(eps, stride), variant=variant, stride=stride, mirror=bool(mirror),
        batch_size=check_int(batch_size, "batch_size", minimum=1),
        model_batch_size=check_int(model_batch_size, "model_batch_size", minimum=1),
        decode_threads=check_int(decode_threads, "decode_threads", minimum=1), skip_broken=bool(skip_broken),
        random_state=as_seed(random_state),
    )
    settings.aeg(0)  # checks P >= 3 eps stride before any image is decoded
    runs = []
    for j, model in enumerate(models):
        folder = None if checkpoint_dir is None else os.path.join(os.fspath(checkpoint_dir), f"model-{j}")
        runs.append(
            image_terms(
                model, dataset, settings, n_shards=n_shards, n_jobs=n_jobs, load=load,
                checkpoint_dir=folder, model_key=None if model_keys is None else model_keys[j],
                progress=progress,
            )
        )
    if any(not np.array_equal(run["index"], runs[0]["index"]) for run in runs):
        raise InputError("`--images`: the models could not all be scored on the same images.")
    generator = settings.aeg(0)
    facts = {
        "n_scored": len(runs[0]["index"]),
        "broken": runs[0]["broken"],
        "evaluations": [run["evaluations"] for run in runs],
    }
    g3 = images_g3(dataset, settings) if check_density and len(dataset) >= MIN_IMAGES else None
    labels = np.asarray(dataset.labels, dtype=np.int64)[runs[0]["index"]]
    chance = worst_chance([run["prediction"].astype(np.int64) for run in runs], labels)
    if len(runs) == 1:
        single = result_from_terms(runs[0], generator, delta=delta)
        single.g3, single.chance = g3, chance
        return ImageOverfitResult(test=single, **facts)
    per_run = [
        {
            "loss": run["loss"], "weighted": run["weighted_adv_loss"],
            "n_success": int(np.sum(run["success"])), "evaluations": run["evaluations"],
            "U": generator.pairwise_range,
            "warnings": aeg_warnings(generator, int(np.sum(run["success"]))),
        }
        for run in runs
    ]
    combined = combine_runs(per_run, delta=delta)
    combined.g3, combined.chance, combined.moves = g3, chance, generator.moves()
    return ImageOverfitResult(test=combined, **facts)
