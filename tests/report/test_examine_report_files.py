"""report.examine.write_examination_figures: the files `fitaudit examine --out` writes (moved from the CLI)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def scenario(tiny_torch_net, shapes_tiny):
    from fitaudit.examine.scenarios import image_scenario

    return image_scenario(tiny_torch_net, shapes_tiny.images, shapes_tiny.labels, instances=3,
                          random_state=0, option="images")


def _examine(net, scenario, steps, weakness=True):
    from fitaudit.examine import examine

    return examine(net, scenario.generator, examiner="random", steps=steps, instances=scenario.instances,
                   random_state=0, weakness=weakness, progress=False)


@pytest.mark.slow
def test_every_file_of_an_examination_is_written_and_readable(tiny_torch_net, scenario, tmp_path):
    from PIL import Image

    from fitaudit.report.examine import examination_markdown, write_examination_figures

    result = _examine(tiny_torch_net, scenario, steps=4)
    files = write_examination_figures(result, scenario.generator, tmp_path)
    assert set(files) == {"markdown", "curves", "histograms", "sensitivity", "contact_sheet", "pairs", "tsne"}
    assert files["markdown"].read_text() == examination_markdown(result) + "\n"
    for name, path in files.items():
        assert path.parent == tmp_path and path.is_file()
        if name != "markdown":
            with Image.open(path) as image:
                assert image.format == "PNG" and min(image.size) > 100


@pytest.mark.slow
def test_pictures_that_need_what_the_result_lacks_are_left_out(tiny_torch_net, scenario, tmp_path):
    from fitaudit.examine.embedding import TSNE_MIN_STEPS
    from fitaudit.report.examine import write_examination_figures

    result = _examine(tiny_torch_net, scenario, steps=TSNE_MIN_STEPS - 1, weakness=False)
    files = write_examination_figures(result, scenario.generator, tmp_path)
    assert "tsne" not in files and "histograms" not in files  # too few steps; no weakness report
    assert not (tmp_path / "tsne.png").exists() and not (tmp_path / "histograms.png").exists()
    result.sensitivity = None
    (tmp_path / "again").mkdir()
    assert "sensitivity" not in write_examination_figures(result, scenario.generator, tmp_path / "again")


@pytest.mark.slow
def test_the_sensitivity_figure_is_refused_without_a_profile(tiny_torch_net, scenario):
    from fitaudit._errors import InputError
    from fitaudit.report import render

    result = _examine(tiny_torch_net, scenario, steps=2, weakness=False)
    result.sensitivity = None
    with pytest.raises(InputError, match="no sensitivity profile"):
        render(result, "figure", kind="sensitivity")
    with pytest.raises(InputError, match="'sensitivity'"):
        render(result, "figure", kind="nope")


@pytest.mark.slow
def test_the_audit_part_keeps_originals_and_embeds_only_when_asked(tiny_torch_net, scenario, tmp_path):
    from fitaudit.auditing.parts import examination_part

    result = _examine(tiny_torch_net, scenario, steps=4)
    shown = scenario.generator.for_display()
    with_tsne = examination_part(result, shown, tolerance=0.2, queries_path=tmp_path / "q.npz")
    without = examination_part(result, shown, tolerance=0.2, embedding=False)
    assert [type(e).__name__ for e in with_tsne.evidence] == ["QueryEmbedding"] and without.evidence == []
    defaults = np.tile(shown.factor_space.defaults, (len(result.instances), 1))
    untouched = np.round(np.asarray(shown.generate(result.instances, defaults)) * 255)
    for case in without.images:  # each original is one of the examined images, untouched
        assert any(np.array_equal(case["original"], image) for image in untouched)
