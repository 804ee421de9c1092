"""The table audit's checks of issue 48: better than a baseline? are the probabilities right?

Two :class:`~fitaudit.auditing.check.Check` questions over the scored data,
grouped with the first questions (:mod:`fitaudit.auditing.first`):

===============  ===============================================  ======================================
part             question                                         needs
===============  ===============================================  ======================================
``baseline``     is the model better than the majority class,     the scored data; the training data for
                 and not worse than a scaled logistic regression  the reference learner (tables only)
                 fitted on the training data?
                 (:mod:`fitaudit.baseline`)
``calibration``  are the model's probabilities right? (ECE,       the scored data and probabilities
                 over/underconfidence; :mod:`fitaudit.calibration`) (arrays, tables or image folders)
===============  ===============================================  ======================================

Each part's verdict is its result's own, worded by :mod:`fitaudit.report.table_words`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.auditing.check import Check
from fitaudit.auditing.first import (
    INSTRUMENT,
    class_names,
    data_key,
    folder_predictions,
)
from fitaudit.auditing.inputs import AuditInputs
from fitaudit.auditing.parts import part_from_result
from fitaudit.auditing.result import AuditPart

#: the family level of each check's tests
LEVEL = 0.05


def no_scored(inputs: AuditInputs) -> str:
    """Why a check of the scored rows cannot run, naming the arguments as the caller does."""
    return f"the check needs the scored data ({inputs.named('data')}, or {inputs.named('images')})."


def _train_key(inputs: AuditInputs) -> tuple[Any, ...]:
    if inputs.pictures is not None:
        train = inputs.pictures.train
        return (None,) if train is None else (train.fingerprint(),)
    return (None,) if inputs.train is None else inputs.train.key()


def _scored(inputs: AuditInputs) -> tuple[np.ndarray, list[str] | None]:
    """The scored labels (model output indices) and the class names."""
    if inputs.pictures is not None:
        return np.asarray(inputs.pictures.test.labels), list(inputs.pictures.test.classes)
    assert inputs.test is not None
    n_classes = int(inputs.adapter.n_classes)
    return inputs.test.y, class_names(inputs.adapter, n_classes, inputs.labels)


class BaselineCheck(Check):
    """The model against the majority class and a scaled logistic regression on the same scored rows.

    An accuracy at or below chance is measured and decided like any other (the audit does not stop at it:
    :func:`fitaudit.auditing.first.run_accuracy`); the part then carries the likely causes
    (:func:`fitaudit.models.labels.chance_hint`, with the model's label convention and, for image arrays,
    where their normalisation came from).
    """

    id, instrument, title = "baseline", INSTRUMENT, "Is the model better than a simple baseline?"
    skip_code = "no_scored_data"

    def applies(self, inputs: AuditInputs) -> str | None:
        return no_scored(inputs) if inputs.test is None and inputs.pictures is None else None

    def key(self, inputs: AuditInputs) -> Any:
        # the argument the words name when no training data came (`--train-data` on the command line)
        return (inputs.model_key, *data_key(inputs.test, inputs.pictures, "test"), *_train_key(inputs), LEVEL,
                inputs.named("train_data"))

    def run(self, inputs: AuditInputs) -> AuditPart:
        from fitaudit.baseline import baseline_check, fit_reference, majority_of
        from fitaudit.models.labels import chance_hint

        y, names = _scored(inputs)
        pictures, test, train = inputs.pictures, inputs.test, inputs.train
        if pictures is not None:
            predicted = folder_predictions(inputs.adapter, pictures.test, pictures.pipeline)
            train_labels = None if pictures.train is None else np.asarray(pictures.train.labels)
        else:
            assert test is not None
            predicted = inputs.scored_predictions()
            train_labels = None if train is None else train.y
        reference_pred, missing = None, None
        if train_labels is None:
            missing = (f"no training data was given ({inputs.named('train_data')}) to count the majority class on "
                       "and fit one on")
        elif pictures is not None or (test is not None and not test.is_table and np.ndim(test.x) != 2):
            missing = "the reference learner is fitted on tables only, and these are images"
        else:
            assert test is not None and train is not None
            try:
                reference_pred = fit_reference(train.x, train.y).predict(test.x)
            except InputError as exc:
                missing = str(exc)
        counted = y if train_labels is None else train_labels
        result = baseline_check(y, predicted, reference_pred=reference_pred, majority_label=majority_of(counted),
                                majority_source="scored labels" if train_labels is None else "training labels",
                                class_names=names, level=LEVEL, missing=missing,
                                chance_hint=chance_hint(inputs.labels, inputs.normalisation))
        numbers = {"accuracy": result.accuracy, "majority accuracy": result.majority_accuracy,
                   "chance": result.chance}
        if result.reference is not None:
            low, high = result.reference_interval()
            numbers.update({"reference accuracy": result.reference_accuracy,
                            "difference": result.accuracy - result.reference_accuracy,
                            "difference low": low, "difference high": high})
        settings = {"level": LEVEL, "reference": result.reference, "majority_source": result.majority_source}
        return part_from_result(self.id, self.instrument, self.title, result, numbers=numbers, settings=settings)


def no_probabilities(adapter: Any, check: str = "calibration") -> str | None:
    """Why ``adapter`` gives no probabilities (a scikit-learn estimator with only ``decision_function``), or None;
    ``check`` names the check that needs them (the skipped part's reason)."""
    if getattr(adapter, "kind", None) == "sklearn" and not getattr(adapter, "uses_proba", True):
        name = type(adapter.model).__name__
        steps = getattr(adapter.model, "steps", None)  # a Pipeline: named by its last step too
        if steps:
            name = f"{name} ending in {type(steps[-1][1]).__name__}"
        return (f"the model ({name}) gives decision scores, not probabilities (it has no "
                f"`predict_proba`): {check} needs probabilities (refit it with them, e.g. SVC(probability=True), "
                "or wrap it in sklearn.calibration.CalibratedClassifierCV).")
    return None


def _folder_probabilities(adapter: Any, dataset: Any, pipeline: Any) -> np.ndarray:
    return np.concatenate([np.asarray(adapter.predict_proba(b.images), dtype=np.float64)
                           for b in dataset.batches(pipeline, kind="input", batch_size=256)])


class CalibrationCheck(Check):
    """Top-label calibration of the model's probabilities on the scored rows (tables, arrays and images)."""

    id, instrument, title = "calibration", INSTRUMENT, "Are the model's probabilities right?"
    skip_code = "no_probabilities"

    def applies(self, inputs: AuditInputs) -> str | None:
        if inputs.test is None and inputs.pictures is None:
            return no_scored(inputs)
        return no_probabilities(inputs.adapter)

    def key(self, inputs: AuditInputs) -> Any:
        return (inputs.model_key, *data_key(inputs.test, inputs.pictures, "test"), LEVEL,
                inputs.settings["random_state"])

    def run(self, inputs: AuditInputs) -> AuditPart:
        from fitaudit.calibration import calibration_check

        y, _ = _scored(inputs)
        if inputs.pictures is not None:
            probabilities = _folder_probabilities(inputs.adapter, inputs.pictures.test, inputs.pictures.pipeline)
        else:
            probabilities = inputs.scored_probabilities()
        result = calibration_check(y, probabilities, level=LEVEL, random_state=inputs.settings["random_state"])
        numbers = {"ECE": result.ece, "debiased ECE": result.ece_debiased, "mean confidence": result.mean_confidence,
                   "accuracy": result.accuracy}
        settings = {"level": LEVEL, "n_bins": result.n_bins, "random_state": result.random_state,
                    "reliability": result.reliability()}
        return part_from_result(self.id, self.instrument, self.title, result, numbers=numbers, settings=settings)


#: the checks of this module, in report order (after the accuracy in :data:`fitaudit.auditing.checks.CHECKS`)
TABLE_CHECKS: tuple[Check, ...] = (BaselineCheck(), CalibrationCheck())
