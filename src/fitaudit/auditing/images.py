"""An audit of a model on image folders: the overfitting test under the evaluation pipeline.

``fitaudit.audit(model, images="val/", train_images="train/", pipeline=...)``
(``fitaudit audit --images DIR --train-images DIR2``) runs the translational
overfitting test (Werpachowski et al. 2019, Sec. 5) on both folders side by
side, as it does for canvases: every image goes through the evaluation
pipeline (:class:`fitaudit.data.pipeline.EvalPipeline`; resize R, centre crop
C, the AEG moving the crop window inside the ``C + 2P`` canvas) and is
streamed batch by batch (:func:`fitaudit.overfit.images.overfit_test_images`).
The part builder is :func:`fitaudit.auditing.parts.overfit_images_part`;
this module loads and checks what it needs.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError


@dataclasses.dataclass
class ImageInputs:
    """The image folders of an audit and how they are evaluated.

    Attributes
    ----------
    test, train : ImageDataset or None
        The scored images and the training images (checked: usable files only).
    pipeline : EvalPipeline
    eps : int or None
        The AEG's largest shift (default floor(P / 3)); ``None`` when the
        pipeline leaves no room for one (``no_eps`` says why: the
        overfitting test is then skipped, the other questions still run).
    broken : list of str
        Files left out (``skip_broken``), with the reason.
    no_eps : str or None
        Why no translational AEG fits the pipeline (``None`` when one does).
    choice : PipelineChoice or None
        Which pipeline, and the one the model records
        (:func:`fitaudit.data.pipeline_rule.choose_pipeline`).
    stride, mirror : int, bool
        The AEG's step in pixels and whether it tries mirror images
        (:func:`fitaudit.overfit.images.overfit_test_images`).
    """

    test: Any
    train: Any
    pipeline: Any
    eps: int | None
    broken: list[str]
    no_eps: str | None = None
    choice: Any = None
    stride: int = 1
    mirror: bool = False

    def describe(self, which: str = "test") -> dict[str, Any] | None:
        """Source, number of images and pipeline of one folder (for the report's subject)."""
        data = self.test if which == "test" else self.train
        if data is None:
            return None
        return {"source": data.source, "n": len(data), "pipeline": self.pipeline.to_dict()}


def load_image_inputs(
    model: Any,
    images: Any,
    train_images: Any,
    pipeline: Any,
    *,
    eps: int | None = None,
    stride: int = 1,
    mirror: bool = False,
    skip_broken: bool = False,
    progress: bool = False,
    verify_content: bool | None = None,
    classes: str | Sequence[str] | None = None,
) -> ImageInputs:
    """Open and check the folders; the pipeline and class order default to what the model file records.

    Parameters
    ----------
    model : path or model
        A model file's metadata (:func:`fitaudit.models.io.read_model_metadata`)
        gives the class order and, when ``pipeline`` is None, the pipeline.
    images, train_images : path or ImageDataset
        Image folders or CSV files (``train_images`` optional).
    pipeline : EvalPipeline, dict or None
    eps : int, optional
        Largest shift, in steps of ``stride`` (default ``floor(P / (3 stride))``).
    stride, mirror : int, bool
        The AEG's step in pixels and whether it tries mirror images; a
        ``stride`` the pipeline has no room for is an error (the default
        stride 1 only skips the overfitting test).
    skip_broken : bool
        Leave out broken files instead of stopping (listed in ``broken``).
    progress : bool
    verify_content : bool or None
        How the folders are keyed (:class:`fitaudit.data.images.ImageDataset`).
    classes : list of str or str, optional
        The class names in the model's output order
        (:func:`fitaudit.models.io.class_order`: these, else the model
        file's, else the folders' sorted names).
    """
    from fitaudit.data.images import ImageDataset, check_images, open_images
    from fitaudit.models.io import class_order

    choice = image_pipeline(model, pipeline)
    pipeline = choice.pipeline
    classes = class_order(model, classes)
    loaded: list[Any] = []
    broken: list[str] = []
    for value, name in ((images, "images"), (train_images, "train_images")):
        if value is None:
            loaded.append(None)
            continue
        data = value if isinstance(value, ImageDataset) else open_images(value, classes=classes, name=name)
        data, bad = check_images(data, skip_broken=skip_broken, progress=progress, name=name)
        loaded.append(dataclasses.replace(data, verify_content=verify_content))
        broken += [f"{b.path} ({b.reason})" for b in bad]
    no_eps = None
    if eps is None and stride == 1:  # the default shift: a pipeline without room for one skips the overfitting test only
        try:
            eps = pipeline.check_eps(None)
        except InputError as exc:
            no_eps = f"the overfitting test needs a margin around the crop: {exc}"
    else:  # a shift or stride the user asked for must fit
        eps = pipeline.check_eps(eps, stride)
    return ImageInputs(test=loaded[0], train=loaded[1], pipeline=pipeline, eps=eps, broken=broken, no_eps=no_eps,
                       choice=choice, stride=stride, mirror=bool(mirror))


def _recorded(model: Any) -> tuple[list[tuple[str, Any]], Any]:
    """The model file's recorded pipeline (``[]`` for a model object) and its declared input."""
    from fitaudit.models.io import model_input_spec, read_model_metadata

    if not isinstance(model, (str, os.PathLike)):
        return [], None
    metadata = read_model_metadata(model, name="model")
    return [(os.fspath(model), metadata.pipeline)], model_input_spec(model, metadata, name="model")


def image_pipeline(model: Any, pipeline: Any) -> Any:
    """The pipeline of image folders: ``pipeline``'s settings over the model file's (the one rule).

    :func:`fitaudit.data.pipeline_rule.choose_pipeline`; ``pipeline`` is an
    :class:`EvalPipeline` (every setting given), a dict of some settings
    (the others the model's) or None (the model's).
    """
    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.data.pipeline_rule import choose_pipeline, given_settings

    recorded, spec = _recorded(model)
    settings = given_settings(pipeline)
    channels = pipeline.n_channels if isinstance(pipeline, EvalPipeline) else \
        pipeline.get("channels") if isinstance(pipeline, dict) else None
    if spec is not None and spec.channels is not None and channels is not None and channels != spec.channels:
        raise InputError(
            f"`pipeline` gives {channels} channel(s) but the model's input takes {spec.channels} "
            f"(EvalPipeline(..., channels={spec.channels}) with {spec.channels} mean and std value(s)).")
    if spec is not None and spec.channels is not None:
        channels = spec.channels
    try:
        choice = choose_pipeline(recorded, input_size=spec.size if spec else None, channels=channels, required=True,
                                 **settings)
    except InputError as exc:
        if "are needed with --images" not in str(exc):
            raise
        raise InputError(
            "`pipeline` is needed with `images` (e.g. EvalPipeline(resize=256, crop=224, mean=..., std=...); "
            "--resize/--crop on the command line): the model records none.") from exc
    # a whole EvalPipeline is used as given (its resampling too)
    return dataclasses.replace(choice, pipeline=pipeline) if isinstance(pipeline, EvalPipeline) else choice


def array_normalisation(model: Any, x: Any, pipeline: Any) -> Any:
    """The normalisation of ``.npz``/``(x, y)`` image arrays: ``pipeline``'s mean and std over the model file's."""
    from fitaudit.data.pipeline_rule import choose_normalisation, given_settings

    return choose_normalisation(_recorded(model)[0], x, name="data", **given_settings(pipeline, arrays=True))


def image_accuracy(model: Any, data: Any, pipeline: Any, *, name: str) -> float:
    """Accuracy of ``model`` on the pipeline's model inputs, decoded batch by batch.

    Also checks that the data's classes fit the model's outputs
    (:func:`fitaudit.data.images.check_model_classes`).
    """
    from fitaudit.data.images import check_model_classes

    correct = total = 0
    for batch in data.batches(pipeline, kind="input", batch_size=256):
        try:
            predictions = np.asarray(model.predict(batch.images))
        except InputError as exc:
            raise InputError(
                f"the model does not accept `{name}` through the pipeline (crop {pipeline.crop}): {exc}"
            ) from exc
        if total == 0:
            check_model_classes(data, model.n_classes, model="the audited model", name=name)
        correct += int(np.sum(predictions == batch.labels))
        total += len(batch.labels)
    return correct / total


def recorded_image_accuracy(model: Any, data: Any, choice: Any) -> float | None:
    """Accuracy on the image folder ``data`` under the pipeline the model records, when ``choice`` uses another.

    ``choice``: the :class:`~fitaudit.data.pipeline_rule.PipelineChoice` in
    use. ``None`` when the pipelines agree (or nothing is recorded), and
    when the model does not take the recorded pipeline's images (another crop).
    """
    if choice is None or not choice.differs:
        return None
    try:
        return image_accuracy(model, data, choice.recorded, name="images")
    except InputError:  # a model of another input size than the recorded crop: said by the report
        return None
