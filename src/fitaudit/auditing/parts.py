"""One builder per question an audit can answer.

Every question is a ``run_*`` function (the part computed) with, where its
inputs are not plain, a ``*_key`` function (what the part depends on),
used by the audit's checks (:mod:`fitaudit.auditing.checks`); the
``*_part`` functions turn a finished instrument result into an
:class:`~fitaudit.auditing.result.AuditPart`. A part's status
is never written here: it is its result's own decision
(:func:`part_from_result`), and its sentence is the report layer's words
of that decision (:func:`fitaudit.report.verdicts.word_audit`), so the
CLI, the audit, the report and the demo say the same thing.

A new question is one :class:`~fitaudit.auditing.check.Check` in
:data:`fitaudit.auditing.checks.CHECKS` (``docs/developer.md``); its
``run`` can build its part with :func:`part_from_result`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit.auditing.headlines import (
    examination_numbers,
    nmodel_numbers,
    overfit_numbers,
    pmv_numbers,
)
from fitaudit.auditing.inputs import Dataset
from fitaudit.auditing.result import AuditPart, decided
from fitaudit.examine.decision import EXAMINE_TOLERANCE
from fitaudit.pmv.decision import GOOD_FIT_SLOPE

#: default smallest |k_S| counted as a good fit (see :func:`fitaudit.pmv.decision.pmv_verdict`)
PMV_THRESHOLD = GOOD_FIT_SLOPE

#: measures ranked by default on a population of models: the strong and weak baselines and cheap norms
PGDL_MEASURES = ("noisy_gap", "inverse_margin", "distance_from_init", "log_spec_product", "parameter_count", "vc_dim")


def part_from_result(part_id: str, instrument: str, title: str, result: Any, *,
                     numbers: dict[str, Any] | None = None, settings: dict[str, Any] | None = None,
                     images: list[dict[str, Any]] | None = None, evidence: list[Any] | None = None) -> AuditPart:
    """An :class:`AuditPart` whose verdict is ``result``'s own decision (context from ``settings``), worded."""
    settings = dict(settings or {})
    return AuditPart(id=part_id, instrument=instrument, title=title, verdict=decided(result, settings),
                     numbers=dict(numbers or {}), result=result, settings=settings, images=list(images or []),
                     evidence=list(evidence or []))


# --------------------------------------------------------------------------- overfitting test


def overfit_result_part(part_id: str, title: str, result: Any, *, role: str,
                        settings: dict[str, Any] | None = None, numbers: dict[str, Any] | None = None) -> AuditPart:
    """An :class:`AuditPart` from an overfitting test on the ``role`` data (``"test"`` or ``"train"``)."""
    return part_from_result(part_id, "overfit", title, result, numbers={**overfit_numbers(result), **(numbers or {})},
                            settings={"role": role, **(settings or {})})


def overfit_key(model_key: str, data: Dataset, aeg: Any, *, role: str, delta: float) -> tuple[Any, ...]:
    """What an overfitting test part depends on: the model, the data, the AEG, the level, the role."""
    return (model_key, data.x, data.y, aeg, delta, role)


def run_overfit(part_id: str, title: str, model: Any, data: Dataset, aeg: Any, *, role: str,
                delta: float = 0.05) -> AuditPart:
    """The overfitting test (Werpachowski et al. 2019) of ``model`` on ``data`` with ``aeg``."""
    from fitaudit.overfit import overfit_test

    result = overfit_test(model, data.x, data.y, aeg, delta=delta)
    return overfit_result_part(part_id, title, result, role=role, settings={
        "aeg": repr(aeg), "delta": delta, "data": data.describe(),
        "label": "training data" if role == "train" else "scored data"})


def overfit_images_key(model_key: str, images: Any, pipeline: Any, *, role: str, eps: int,
                       delta: float, stride: int = 1, mirror: bool = False) -> tuple[Any, ...]:
    """What an overfitting test on an image folder depends on: the model's fingerprint, the files (paths,
    sizes, times) and labels, the pipeline, eps, delta, the role and the AEG's stride and mirror images
    (left out at 1 and False: the key of the parts saved before they existed)."""
    return (model_key, images.fingerprint(), pipeline, eps, delta, role, *moves_key(stride, mirror))


def moves_key(stride: int, mirror: bool) -> tuple[Any, ...]:
    """The stride and mirror of a translational AEG in a part's key: () for the paper's AEG, as before they existed."""
    return () if (stride, mirror) == (1, False) else ("stride", stride, "mirror", bool(mirror))


def image_aeg_name(eps: int, pipeline: Any, stride: int = 1, mirror: bool = False) -> str:
    """The repr of the AEG an image part runs (:meth:`fitaudit.overfit.images.ImageAEGSettings.aeg`)."""
    from fitaudit.overfit.images import ImageAEGSettings

    return repr(ImageAEGSettings(pipeline=pipeline, eps=eps, stride=stride, mirror=mirror).aeg(0))


def run_overfit_images(part_id: str, title: str, model: Any, model_key: str, images: Any, pipeline: Any, *,
                       role: str, eps: int, delta: float = 0.05, checkpoint_dir: Path | None = None,
                       progress: bool = False, stride: int = 1, mirror: bool = False) -> AuditPart:
    """The overfitting test on an image folder through the evaluation pipeline (Werpachowski et al. 2019, Sec. 5).

    ``images`` is a checked :class:`~fitaudit.data.images.ImageDataset`;
    the test streams it batch by batch
    (:func:`fitaudit.overfit.images.overfit_test_images`, strongest AEG
    with ``stride`` and ``mirror``, per-batch checkpoints in ``checkpoint_dir``).
    """
    from fitaudit.overfit.images import overfit_test_images

    run = overfit_test_images([model], images, pipeline, eps=eps, delta=delta, stride=stride, mirror=mirror,
                              checkpoint_dir=checkpoint_dir, model_keys=[model_key], progress=progress)
    return overfit_result_part(part_id, title, run.test, role=role, settings={
        "aeg": image_aeg_name(eps, pipeline, stride, mirror), "delta": delta,
        "pipeline": pipeline.to_dict(), "data": {"source": images.source, "n": run.n_scored},
        "label": "training images" if role == "train" else "scored images"})


def run_nmodel(models: Sequence[Any], data: Dataset, aeg: Any, *, delta: float = 0.05) -> AuditPart:
    """The N-model test on several trained runs of the same procedure (keyed by the runs' fingerprints,
    the data, the AEG and the level)."""
    from fitaudit.overfit import n_model_test

    result = n_model_test(models, data.x, data.y, aeg, delta=delta)
    return part_from_result(
        "overfit-nmodel", "overfit", f"N-model test over {len(models)} runs", result,
        numbers=nmodel_numbers(result), settings={"aeg": repr(aeg), "delta": delta, "data": data.describe()},
    )


def run_nmodel_images(models: Sequence[Any], model_keys: list[str], images: Any, pipeline: Any, *, eps: int,
                      delta: float = 0.05, checkpoint_dir: Path | None = None, progress: bool = False,
                      stride: int = 1, mirror: bool = False) -> AuditPart:
    """The N-model test on an image folder through the evaluation pipeline (streamed, as :func:`run_overfit_images`)."""
    from fitaudit.overfit.images import overfit_test_images

    run = overfit_test_images(list(models), images, pipeline, eps=eps, delta=delta, stride=stride, mirror=mirror,
                              checkpoint_dir=checkpoint_dir, model_keys=model_keys, progress=progress)
    return part_from_result(
        "overfit-nmodel", "overfit", f"N-model test over {len(models)} runs", run.test,
        numbers=nmodel_numbers(run.test), settings={
            "aeg": image_aeg_name(eps, pipeline, stride, mirror), "delta": delta,
            "pipeline": pipeline.to_dict(), "data": {"source": images.source, "n": run.n_scored}},
    )


# --------------------------------------------------------------------------- PMV


def pmv_result_part(result: Any, *, threshold: float = PMV_THRESHOLD, part_id: str = "pmv",
                    title: str = "Perturbed model validation of the learner",
                    settings: dict[str, Any] | None = None) -> AuditPart:
    """An :class:`AuditPart` from a PMV score (the audit's part and the demo's learners alike)."""
    return part_from_result(
        part_id, "pmv", title, result,
        numbers=pmv_numbers(result),
        settings={"threshold": threshold, "estimator": result.estimator, **(settings or {})},
    )


def run_pmv(learner: Any, data: Dataset, *, threshold: float = PMV_THRESHOLD, random_state: int | None,
            n_jobs: int | None, checkpoint_dir: Path, progress: bool) -> AuditPart:
    """PMV (Zhang et al. 2019) of a scikit-learn learner on the training data; |k_S| below ``threshold`` fails
    (keyed by the learner's fingerprint, the data, the threshold and the seed)."""
    from fitaudit.pmv import pmv_score

    x = data.x if data.is_table else data.x.reshape(len(data.x), -1)  # a table goes to the learner as it is
    result = pmv_score(learner, x, data.y, random_state=random_state, n_jobs=n_jobs,
                       progress=progress, checkpoint_dir=checkpoint_dir)
    return pmv_result_part(result, threshold=threshold, settings={"random_state": random_state,
                                                                  "data": data.describe()})


# --------------------------------------------------------------------------- adversarial examiner


#: columns of the examiner's query log kept in the part (enough to re-read it); the full log goes to a file
KEPT_QUERY_COLUMNS = ("instance", "label", "predicted")


def worst_cases(result: Any, generator: Any, limit: int = 12) -> list[dict[str, Any]]:
    """The worst input found for the first ``limit`` instances (lowest true-class probability first), as pixels.

    Each is ``{"label", "p_true", "factors", "pixels", "original"}`` with
    ``pixels`` a ``uint8`` array (C, H, W) and ``original`` the same
    instance with every factor at its default (the untouched image, for the
    image-transform generator); the report draws them side by side.
    """
    order = np.argsort(result.min_true_class_probability)[:limit]
    pictures = result.extreme_inputs(generator)
    defaults = np.tile(np.asarray(generator.factor_space.defaults, dtype=float), (len(order), 1))
    originals = np.asarray(generator.generate(result.instances[order], defaults), dtype=np.float64)
    names = result.class_names or [str(c) for c in range(int(np.max(result.labels)) + 1)]
    cases = []
    for k, i in enumerate(order):
        pixels = np.asarray(pictures[i], dtype=np.float64)
        if pixels.ndim != 3:
            continue
        cases.append({
            "label": names[int(result.labels[i])],
            "p_true": float(result.min_true_class_probability[i]),
            "factors": {name: float(result.extreme_factors[i, c]) for c, name in enumerate(result.factor_names)},
            "pixels": np.clip(np.round(pixels * 255), 0, 255).astype(np.uint8),
            "original": np.clip(np.round(originals[k] * 255), 0, 255).astype(np.uint8),
        })
    return cases


#: random and examiner queries each in the t-SNE picture of an examination (the paper's Sec. 5 figures)
TSNE_POINTS = 200


def query_embedding(result: Any, generator: Any) -> list[Any]:
    """The t-SNE picture's data (:func:`fitaudit.examine.embed_queries`, on pixels), when there are enough queries."""
    from fitaudit.examine import can_embed, embed_queries

    if not can_embed(result):
        return []
    return [embed_queries(result, generator, n_per_source=TSNE_POINTS, random_state=result.random_state)]


def examination_part(result: Any, generator: Any, *, tolerance: float, part_id: str = "examine",
                     title: str = "Adversarial examination over the input factors",
                     settings: dict[str, Any] | None = None, queries_path: Path | None = None,
                     embedding: bool = True) -> AuditPart:
    """An :class:`AuditPart` from an examination; its full query logs go to ``queries_path``.

    The part holds a copy of ``result`` with the query log cut to
    :data:`KEPT_QUERY_COLUMNS` (``result`` itself is left as it is), the
    worst inputs found as pixels and, with ``embedding``, the t-SNE
    embedding of random against examiner-found inputs (:func:`query_embedding`).
    """
    if queries_path is not None:
        result.save_queries(queries_path)
    kept = dataclasses.replace(
        result,
        queries={k: np.asarray(v) for k, v in result.queries.items() if k in KEPT_QUERY_COLUMNS},
        reference_queries={k: np.asarray(v) for k, v in result.reference_queries.items()},
    )
    return part_from_result(
        part_id, "examine", title, kept, numbers=examination_numbers(result), images=worst_cases(result, generator),
        evidence=query_embedding(result, generator) if embedding else [],
        settings={"tolerance": tolerance, "examiner": result.examiner, "steps": result.steps,
                  "random_state": result.random_state, "queries": str(queries_path) if queries_path else None,
                  **(settings or {})},
    )


def _queries_path(folder: Path, key: str, keep: bool) -> Path | None:
    """Where an examination's full query log is written (the part names it), or None when ``folder`` is not kept."""
    return folder / "examine" / f"{key}-queries.npz" if keep else None


def run_examination(model: Any, generator: Any, key: str, *, examiner: str = "bo", steps: int = 30,
                    instances: int | None = None, tolerance: float = EXAMINE_TOLERANCE, random_state: Any,
                    n_jobs: int | None, folder: Path, progress: bool, keep_queries: bool = True,
                    factors: Mapping[str, Any] | None = None) -> AuditPart:
    """The adversarial examiner (Shu et al. 2020) of ``model`` over ``generator``'s factors (``key``: the part's
    stored name, for its checkpoints and query log; ``factors``: ranges narrowing or fixing them)."""
    from fitaudit.examine import examine

    result = examine(model, generator, examiner=examiner, steps=steps, instances=instances, ranges=factors,
                     random_state=random_state, n_jobs=n_jobs, checkpoint_dir=folder / "examine" / key,
                     progress=progress)
    return examination_part(result, generator, tolerance=tolerance,
                            settings={"factors": dict(factors)} if factors else None,
                            queries_path=_queries_path(folder, key, keep_queries))


#: images examined by default when the audited data are images (several per class): the bootstrap over images
#: that confirms a weakness rule needs more than a dozen (benchmarks/validity/photo_examine.py: a planted
#: brightness weakness was the headline in 2 of 5 seeds with 12 images, in 8 of 9 with 24)
IMAGE_INSTANCES = 24
#: uniform random reference queries per examined image: the average, and the random queries that cut and confirm
#: weakness rules (fitaudit.examine.weakness: half teach the random queries' tree, half confirm; 32 per image
#: confirmed none on real photos, benchmarks/validity/photo_examine.py)
IMAGE_REFERENCE = 128


def is_image_data(data: Dataset) -> bool:
    """Whether ``data.x`` holds grey or RGB images with values in [0, 1] (what the image transforms take)."""
    x = data.x
    return x.ndim == 4 and x.shape[1] in (1, 3) and np.issubdtype(x.dtype, np.floating) and bool(
        len(x) and x.min() >= 0.0 and x.max() <= 1.0)


#: the image factors in the words of the examination's title: a word and the factors it stands for
TITLE_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("flip", ("flip",)), ("rotation", ("rotation",)), ("translation", ("translation_x", "translation_y")),
    ("scale", ("scale",)), ("light", ("brightness", "contrast", "saturation")), ("blur", ("blur",)),
    ("noise", ("noise",)), ("occlusion", ("occlusion", "occlusion_u", "occlusion_v")),
    ("JPEG quality", ("jpeg_quality",)),
)


def image_examination_title(factors: Mapping[str, Any] | None = None) -> str:
    """The title of an examination of images under the image transforms with ``factors`` changed.

    The factors that keep a range, in the order they are applied: a group's
    word (:data:`TITLE_GROUPS`) where none of its factors was set, else each
    factor set with its range; the fixed ones are left out.
    """
    from fitaudit.data.transforms import image_factor_space

    space = image_factor_space(factors)
    given = dict(factors or {})
    words = []
    for word, names in TITLE_GROUPS:
        varying = [f for f in space.factors if f.name in names and f.low < f.high]
        if not varying:
            continue
        if not any(f.name in given for f in varying):
            words.append(word)
            continue
        words.extend(f"{f.name} {f.low:g}..{f.high:g}" if f.name in given else f.name for f in varying)
    return "Adversarial examination of the images under " + ", ".join(words)


def transforms_fingerprint() -> str:
    """The source of the image transforms: an edit of them makes a new key for the image examinations."""
    from fitaudit.checkpoint import code_fingerprint
    from fitaudit.data.transforms import ImageTransformGenerator

    return code_fingerprint(ImageTransformGenerator)


def run_image_examination(model: Any, key: str, *, data: Dataset | None = None, pictures: Any = None,
                          examiner: str = "bo", steps: int = 30, instances: int = IMAGE_INSTANCES,
                          tolerance: float = EXAMINE_TOLERANCE, random_state: Any, n_jobs: int | None, folder: Path,
                          progress: bool, keep_queries: bool = True, device: str = "cpu",
                          factors: Mapping[str, Any] | None = None, n_reference: int = IMAGE_REFERENCE) -> AuditPart:
    """The adversarial examiner over the audited images themselves (docs/examiner.md#your-own-images).

    A sample of the images the model classifies correctly (several per
    class) under the image-transform generator's default factors: arrays
    (``data``; the canvases' margin, if any, is the warp's surrounding
    pixels) or the scored image folder (``pictures``, decoded through the
    evaluation pipeline, whose canvases give the warp its surrounding pixels
    and whose mean and std the model's normalisation; it needs no margin).
    ``factors`` narrows, widens or fixes the image factors
    (:func:`fitaudit.data.transforms.image_factor_space`). The result's
    ``space_check`` says whether the space is foreign to the model.
    """
    from fitaudit.examine import examine
    from fitaudit.examine.scenarios import image_scenario

    if pictures is not None:
        scenario = image_scenario(model, pictures.test, pipeline=pictures.pipeline, instances=instances,
                                  factors=factors, random_state=random_state, progress=progress, option="images",
                                  device=device)
        shown = {"pipeline": pictures.pipeline.to_dict()}
    else:
        assert data is not None
        scenario = image_scenario(model, data.x, data.y, padding=data.margin or 0, instances=instances,
                                  factors=factors, random_state=random_state, progress=progress, option="data",
                                  device=device)
        shown = {}
    result = examine(model, scenario.generator, examiner=examiner, steps=steps, instances=scenario.instances,
                     n_reference=n_reference, random_state=random_state, n_jobs=n_jobs,
                     checkpoint_dir=folder / "examine" / key, progress=progress)
    result.space_check = scenario.check_space(result)
    return examination_part(result, scenario.generator.for_display(), tolerance=tolerance,
                            title=image_examination_title({**(factors or {}), **scenario.left_out}),
                            settings={"generator": "image transforms", "border": scenario.generator.border,
                                      "factors": dict(factors) if factors else None,
                                      "left_out": sorted(scenario.left_out) or None, **shown},
                            queries_path=_queries_path(folder, key, keep_queries))


# --------------------------------------------------------------------------- generalization measures


def leaderboard_part(board: Any, *, part_id: str = "pgdl",
                     title: str = "Generalization measures on a population of models",
                     settings: dict[str, Any] | None = None) -> AuditPart:
    """An :class:`AuditPart` from a PGDL leaderboard: which measures predict the generalization gap."""
    ranks = {row["measure"]: i + 1 for i, row in enumerate(board.rows)}
    numbers: dict[str, Any] = {f"#{ranks[row['measure']]} {row['measure']}": row["final_score"] for row in board.rows}
    return part_from_result(part_id, "pgdl", title, board, numbers=numbers,
                            settings={"ranks": ranks, **(settings or {})})


def pgdl_key(loaded: Any, measures: Sequence[str], random_state: Any) -> tuple[Any, ...]:
    """What the PGDL part depends on: the task (models, model_configs.json, data), the measures, the seed."""
    from fitaudit.pgdl.harness import task_fingerprint

    return (task_fingerprint(loaded), list(measures), random_state)


def run_pgdl(loaded: Any, *, measures: Sequence[str] = PGDL_MEASURES, random_state: Any, n_jobs: int | None,
             folder: Path, progress: bool) -> AuditPart:
    """The PGDL leaderboard of ``measures`` on a loaded task (Jiang et al. 2020)."""
    from fitaudit.options import RunOptions
    from fitaudit.pgdl.leaderboard import leaderboard

    board = leaderboard(loaded, list(measures), budget_s=None, checkpoint_dir=folder / "pgdl-scores",
                        options=RunOptions(random_state=random_state, n_jobs=n_jobs, progress=progress))
    return leaderboard_part(board, settings={"task": str(getattr(loaded, "directory", loaded)),
                                             "measures": list(measures)})
