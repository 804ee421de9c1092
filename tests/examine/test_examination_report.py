"""Renderers of examination results (report/examine.py): summaries, figures, contact sheet, t-SNE."""

from __future__ import annotations

import numpy as np
import pytest
from examine_toys import LABELS, SPACE, CountingGenerator, HillClimber, classify, render

from fitaudit._errors import InputError
from fitaudit.data.generators import as_generator
from fitaudit.examine import embed_queries, examine
from fitaudit.report import render as draw


@pytest.fixture(scope="module")
def result():
    return examine(classify, render, factor_space=SPACE, labels=LABELS, class_names=["zero", "one", "two"],
                   examiner=HillClimber(step=0.2), steps=30, random_state=1, n_reference=100)


def test_markdown_names_both_numbers_and_the_rules(result):
    text = draw(result, "markdown")
    assert f"{result.mean_final_true_class_probability:.1%}" in text
    assert f"{result.mean_extreme_true_class_probability:.1%}" in text
    assert "| zero | 2 |" in text
    assert result.weakness.rules[0]["text"].split(":")[0] in text
    assert "E_examiner" in draw(result, "html")


@pytest.mark.slow
def test_figures(result):
    curves = draw(result, "figure", kind="curves").axes[0].lines
    np.testing.assert_allclose(curves[0].get_ydata(), result.curve("true_class_probability", "current"))
    np.testing.assert_allclose(curves[1].get_ydata(), result.curve("true_class_probability", "running"))
    assert draw(result, "figure", kind="histograms").axes
    with pytest.raises(InputError, match="`kind` must be"):
        draw(result, "figure", kind="pie")
    assert draw(result.weakness, "figure").axes
    assert "Weakness" in draw(result.weakness, "markdown")


def test_contact_sheet_needs_images_and_the_generator(result):
    with pytest.raises(InputError, match="`generator` is needed"):
        draw(result, "figure", kind="contact_sheet")
    with pytest.raises(InputError, match="a contact sheet needs images"):
        draw(result, "figure", kind="contact_sheet", generator=CountingGenerator())
    images = as_generator(lambda i, f: np.broadcast_to(f[:, :1, None, None], (len(i), 3, 6, 6)).copy(),
                          factor_space=SPACE, labels=LABELS)
    figure = draw(result, "figure", kind="contact_sheet", generator=images)
    assert len([ax for ax in figure.axes if ax.images]) == len(LABELS)


@pytest.mark.slow
def test_tsne_figure(result):
    embedding = embed_queries(result, CountingGenerator(), n_per_source=20)
    assert len(draw(embedding, "figure").axes[0].collections) >= 2
