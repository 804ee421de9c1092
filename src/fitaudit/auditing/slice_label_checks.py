"""Two first questions of the audit: where does the model fail (weak slices), and are the scored labels right?

``slices`` (:class:`SliceCheck`)
    the scored rows cut by each column and by pairs of columns, each slice's
    accuracy against the rest's (:func:`fitaudit.slices.find_weak_slices`);
    tables and arrays of rows only (images have pixels, not columns);
``labels`` (:class:`LabelCheck`)
    confident learning on the model's probabilities of the scored rows and
    exact conflicting labels (:func:`fitaudit.labels.find_label_problems`);
    tables, arrays and images (arrays and folders). The model was not fit
    on the scored rows, so its own ``predict_proba`` on them is the
    out-of-sample probability confident learning needs. A scikit-learn model
    without ``predict_proba`` (only ``decision_function`` scores) is skipped
    with that reason, and so is an install without cleanlab.

Both are checks of the ``"first"`` instrument (planned in every audit).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit.auditing.check import Check
from fitaudit.auditing.first import INSTRUMENT, class_names, data_key
from fitaudit.auditing.headlines import label_numbers, slice_numbers
from fitaudit.auditing.inputs import AuditInputs
from fitaudit.auditing.parts import part_from_result
from fitaudit.auditing.result import AuditPart
from fitaudit.auditing.table_checks import no_probabilities, no_scored


class SliceCheck(Check):
    """Where does the model fail: slices of the scored rows whose accuracy is shown below the rest's."""

    id, instrument, title = "slices", INSTRUMENT, "Where does the model fail? (weak slices)"
    skip_code = "no_columns"

    def applies(self, inputs: AuditInputs) -> str | None:
        if inputs.test is None:
            return "the slice search needs the scored rows as a table or an array of rows; image folders have none."
        if np.ndim(inputs.test.x) != 2:
            return "the slice search needs a table's columns; images have pixels, not columns."
        return None

    def key(self, inputs: AuditInputs) -> Any:
        assert inputs.test is not None
        return inputs.model_key, inputs.test.key()

    def run(self, inputs: AuditInputs) -> AuditPart:
        from fitaudit.slices import find_weak_slices

        assert inputs.test is not None
        predictions = inputs.scored_predictions()
        result = find_weak_slices(inputs.test.x, inputs.test.y, predictions)
        return part_from_result(self.id, self.instrument, self.title, result, numbers=slice_numbers(result),
                                settings={"data": inputs.test.describe()})


class LabelCheck(Check):
    """Are the scored labels right: rows whose label the model's probabilities and equal rows say is wrong."""

    id, instrument, title = "labels", INSTRUMENT, "Are the scored labels right? (label problems)"
    skip_code = "no_probabilities"
    requires = ("cleanlab", "labels")

    def applies(self, inputs: AuditInputs) -> str | None:
        if inputs.test is None and inputs.pictures is None:
            return no_scored(inputs)
        return no_probabilities(inputs.adapter, "the label check")

    def key(self, inputs: AuditInputs) -> Any:
        return inputs.model_key, *data_key(inputs.test, inputs.pictures, "test"), int(inputs.adapter.n_classes)

    def run(self, inputs: AuditInputs) -> AuditPart:
        from fitaudit.labels import find_label_problems

        adapter, pictures = inputs.adapter, inputs.pictures
        if pictures is not None:  # decoded batch by batch through the pipeline; the rows are not compared
            chunks, labels = [], []
            for batch in pictures.test.batches(pictures.pipeline, kind="input", batch_size=256):
                chunks.append(adapter.predict_proba(batch.images))
                labels.append(np.asarray(batch.labels))
            probabilities, y, x = np.concatenate(chunks), np.concatenate(labels), None
            classes = pictures.test.classes
            names = [str(c) for c in classes] if classes is not None and len(classes) == adapter.n_classes \
                else None
            data = pictures.describe("test")
        else:
            assert inputs.test is not None
            probabilities = inputs.scored_probabilities()
            y, x = inputs.test.y, inputs.test.x
            names = class_names(adapter, int(adapter.n_classes), inputs.labels)
            data = inputs.test.describe()
        result = find_label_problems(x, y, probabilities, class_names=names)
        return part_from_result(self.id, self.instrument, self.title, result, numbers=label_numbers(result),
                                settings={"data": data})


__all__ = ["LabelCheck", "SliceCheck"]
