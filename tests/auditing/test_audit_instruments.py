"""fitaudit.audit with a generator (the examiner) and a population of models (the PGDL leaderboard)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import fitaudit
from fitaudit.auditing import PGDL_MEASURES
from fitaudit.options import RunOptions
from fitaudit.report import audit_page, load_audit, save_audit

#: this module's audits run without progress bars
QUIET = RunOptions(progress=False)

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def audited(tiny_torch_net, shapes_tiny, tmp_path_factory):
    from fitaudit.data.shapes import ShapesGenerator

    out = tmp_path_factory.mktemp("audit-instruments")
    generator = ShapesGenerator(1, classes=["sphere", "cube", "torus"], split="test")
    result = fitaudit.audit(tiny_torch_net, (shapes_tiny.images, shapes_tiny.labels), generator=generator,
                            examiner="random", examine_steps=4, checkpoint_dir=out, options=QUIET)
    save_audit(result, out)
    return out, result


@pytest.fixture(scope="module")
def population_audit(tiny_pgdl_task, tmp_path_factory):
    """A model of the task's own problem (5 features, 2 classes) audited with the task's population."""
    from sklearn.linear_model import LogisticRegression

    from fitaudit.pgdl import load_task

    x, y = load_task(tiny_pgdl_task).train_data()
    out = tmp_path_factory.mktemp("audit-population")
    result = fitaudit.audit(LogisticRegression().fit(x, y), (x, y), task=tiny_pgdl_task, instruments=["pgdl"],
                            options=QUIET)
    save_audit(result, out)
    return out, result


@pytest.mark.slow
def test_examiner_part_compares_worst_case_with_average(audited):
    _, result = audited
    part = result.part("examine")
    assert part.status in ("pass", "fail")
    average = part.numbers["average accuracy (random factors)"]
    worst = part.numbers["worst-case accuracy (examined)"]
    assert 0.0 <= worst <= 1.0 and 0.0 <= average <= 1.0
    # the worst-case accuracy counts the instances the examiner broke, from the query log on disk
    queries = np.load(part.settings["queries"], allow_pickle=False)
    broken = set(queries["instance"][queries["predicted"] != queries["label"]].tolist())
    assert worst == pytest.approx(1 - len(broken) / part.numbers["instances"])
    # the full log is in its own file; the JSON keeps the columns the reading needs
    assert part.result.steps == 4 and set(part.result.queries) == {"instance", "label", "predicted"}
    assert len(queries["loss"]) == len(part.result.queries["label"])
    assert len(part.images) == part.numbers["instances"]
    pixels = [np.asarray(image["pixels"]) for image in part.images]  # 8-bit values, drawn by the report
    assert all(p.ndim == 3 and p.dtype.kind in "iu" and 0 <= p.min() <= p.max() <= 255 for p in pixels)
    assert (part.status == "fail") == (average - worst > 0.2)


@pytest.mark.slow
def test_pgdl_part_ranks_measures_with_the_strong_baseline_first(population_audit):
    _, result = population_audit
    part = result.part("pgdl")
    assert part.status == "info"
    order = [row["measure"] for row in part.result.rows]
    assert set(order) == set(PGDL_MEASURES)
    # the noisy true gap is the ceiling: on a grid with real gaps it ranks above the parameter count
    assert order.index("noisy_gap") < order.index("parameter_count")
    assert part.settings["ranks"]["noisy_gap"] == order.index("noisy_gap") + 1


@pytest.mark.slow
def test_report_shows_every_instrument_and_json_round_trips(audited, population_audit):
    for (out, _), heading in ((audited, "Adversarial examiner"), (population_audit, "Generalization measures (PGDL)")):
        page = (out / "report.html").read_text()
        assert heading in page
        rebuilt = load_audit(json.loads((out / "audit.json").read_text()))
        assert audit_page(rebuilt) == page
    out, result = audited
    page = (out / "report.html").read_text()
    # the worst cases, the curve and the t-SNE picture of the examiner's queries
    assert page.count("data:image/png;base64,") >= len(result.part("examine").images) + 1
    assert "t-SNE of the inputs" in page and [type(e).__name__ for e in result.part("examine").evidence] == ["QueryEmbedding"]
    assert result.part("overfit-test").status == "skipped"  # images without a margin: no AEG applies


def test_an_unrelated_population_or_too_few_class_names_is_a_clear_error(tiny_torch_net, shapes_tiny, tiny_pgdl_task,
                                                                        tmp_path):
    from fitaudit import InputError
    from fitaudit.data.shapes import ShapesGenerator

    data = (shapes_tiny.images, shapes_tiny.labels)
    with pytest.raises(InputError, match=r"`task` .* inputs of shape \(5,\) with 2 classes, but the audited model "
                                         r"takes \(3, 32, 32\) with 3 outputs"):
        fitaudit.audit(tiny_torch_net, data, task=tiny_pgdl_task, checkpoint_dir=tmp_path, options=QUIET)
    two = ShapesGenerator(1, classes=["sphere", "cube"], split="test")
    with pytest.raises(InputError, match=r"`generator` \(--shapes-classes\) names 2 classes \(sphere, cube\) but the "
                                         r"model has 3 outputs"):
        fitaudit.audit(tiny_torch_net, data, generator=two, checkpoint_dir=tmp_path, options=QUIET)
    assert not (tmp_path / "parts").exists()  # refused before any part ran


@pytest.mark.slow
def test_canvases_with_a_margin_get_the_translational_test_on_both_sets(tiny_torch_net, shapes_tiny, tmp_path):
    canvases = np.pad(shapes_tiny.images, ((0, 0), (0, 0), (3, 3), (3, 3)), mode="wrap")
    np.savez(tmp_path / "test.npz", x=canvases[::2], y=shapes_tiny.labels[::2], margin=np.int64(3))
    np.savez(tmp_path / "train.npz", x=canvases[1::2], y=shapes_tiny.labels[1::2], margin=np.int64(3))
    result = fitaudit.audit(tiny_torch_net, str(tmp_path / "test.npz"), train_data=str(tmp_path / "train.npz"),
                            instruments=["overfit"], options=QUIET)
    test, train = result.part("overfit-test"), result.part("overfit-train")
    assert "TranslationAEG(eps=1, margin=3" in test.result.aeg
    assert test.result.m == 9 and train.result.m == 9
    assert train.status == "info"  # the training set is the scored set's control: no rejection there, no pass here
    assert test.status == ("fail" if test.result.reject else "pass" if train.result.reject else "inconclusive")
    # the model scored the centre crops: the audit's accuracy is the plain accuracy on the images
    with torch.no_grad():
        predictions = tiny_torch_net(torch.from_numpy(shapes_tiny.images[::2])).argmax(1).numpy()
    assert result.subject["accuracy"] == pytest.approx(float(np.mean(predictions == shapes_tiny.labels[::2])))
