"""The audit's `slices` and `labels` checks (fitaudit.auditing.slice_label_checks) in a whole audit.

On breast_cancer (60/40 stratified split): a gradient boosting model fit with
flipped labels where `worst area` is in its top fifth fails the slice part,
named by worst area or rows the same as its; a scaled logistic regression
passes both parts; the parts are reused on a rerun, saved and read back with
their types; a model without predict_proba skips the label part with the
reason; image arrays skip the slices and run the labels.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import fitaudit
from fitaudit.auditing import CHECKS
from fitaudit.options import RunOptions
from fitaudit.report import load_audit
from fitaudit.report.verdicts import read

#: this module's audits run without progress bars
QUIET = RunOptions(progress=False)

CHECKED = CHECKS  # slices and labels are among the audit's checks


@pytest.fixture(scope="module")
def breast_cancer():
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    data = load_breast_cancer(as_frame=True)
    return train_test_split(data.data, data.target.to_numpy(), test_size=0.4, stratify=data.target,
                            random_state=0)


def _parts(result):
    return {p.id: p for p in result.parts}


def test_a_planted_slice_fails_and_an_honest_model_passes(breast_cancer, tmp_path):
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x_train, x_test, y_train, y_test = breast_cancer
    top_fifth = (x_train["worst area"] > x_train["worst area"].quantile(0.8)).to_numpy()
    planted = GradientBoostingClassifier(random_state=0).fit(x_train, np.where(top_fifth, 1 - y_train, y_train))
    parts = _parts(fitaudit.audit(planted, (x_test, y_test), checks=CHECKED, options=QUIET))
    weak = parts["slices"]
    assert weak.status == "fail" and weak.sentence == read(weak.result).sentence
    first = weak.result.groups[0]
    assert any(t.startswith("worst area > ") for t in [first["text"], *first["same_rows"]])
    assert weak.sentence.startswith(f"Weak slice: {first['text']}: 0.000 on {first['rows']} rows vs ")
    assert weak.numbers["weakest slice"] == first["text"]

    honest = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(x_train, y_train)
    audit = fitaudit.audit(honest, (x_test, y_test), checks=CHECKED, checkpoint_dir=tmp_path, options=QUIET)
    parts = _parts(audit)
    assert parts["slices"].status == "pass" and parts["labels"].status == "pass"
    assert parts["slices"].sentence.startswith("No weak slice among ")
    again = _parts(fitaudit.audit(honest, (x_test, y_test), checks=CHECKED, checkpoint_dir=tmp_path,
                                  options=QUIET))
    assert again["slices"].resumed and again["labels"].resumed
    saved = json.loads(json.dumps(audit.to_dict()))
    back = _parts(load_audit(saved))
    assert back["slices"].verdict == parts["slices"].verdict and back["labels"].verdict == parts["labels"].verdict


def test_a_model_without_probabilities_skips_the_labels_with_the_reason(breast_cancer):
    from sklearn.svm import LinearSVC

    x_train, x_test, y_train, y_test = breast_cancer
    model = LinearSVC().fit(x_train, y_train)
    parts = _parts(fitaudit.audit(model, (x_test, y_test), checks=CHECKED, options=QUIET))
    assert parts["labels"].status == "skipped" and parts["labels"].verdict.reason == "no_probabilities"
    assert "LinearSVC) gives decision scores, not probabilities" in parts["labels"].sentence
    assert "the label check needs probabilities" in parts["labels"].sentence
    assert parts["slices"].status in ("pass", "fail")


@pytest.mark.slow
def test_a_slice_column_with_every_value_missing_is_said_not_a_traceback(breast_cancer):
    from sklearn.ensemble import HistGradientBoostingClassifier

    x_train, x_test, y_train, y_test = breast_cancer
    x_test = x_test.copy()
    x_test["mean radius"] = np.nan  # the model takes missing values; the slices skip the column
    model = HistGradientBoostingClassifier(random_state=0).fit(x_train, y_train)
    part = _parts(fitaudit.audit(model, (x_test, y_test), checks=CHECKED, options=QUIET))["slices"]
    assert part.result.skipped_columns == {"mean radius": "every value is missing"}
    assert "Not sliced: 'mean radius': every value is missing." in part.sentence


@pytest.mark.slow
def test_image_arrays_skip_the_slices_and_check_the_labels(tiny_torch_net, shapes_tiny):
    parts = _parts(fitaudit.audit(tiny_torch_net, (shapes_tiny.images, shapes_tiny.labels), checks=CHECKED,
                                  options=QUIET))
    assert parts["slices"].status == "skipped" and "images have pixels, not columns" in parts["slices"].sentence
    labels = parts["labels"]
    assert labels.status != "skipped" and labels.result.n == len(shapes_tiny.labels)
    assert labels.result.conflict_groups is not None  # the pixels were compared
