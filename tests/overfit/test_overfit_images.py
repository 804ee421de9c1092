"""The overfitting test on image folders, streamed and sharded (fitaudit.overfit.images)."""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit._errors import InputError
from fitaudit.data.images import open_images
from fitaudit.data.pipeline import EvalPipeline
from fitaudit.models.pipeline_classifier import PipelineClassifier
from fitaudit.overfit import overfit_test
from fitaudit.overfit.images import overfit_test_images, shard_ranges
from fitaudit.overfit.nmodel import n_model_test
from fitaudit.overfit.translation import TranslationAEG

torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")

PIPELINE = EvalPipeline(resize=22, crop=16, mean=(0.4, 0.5, 0.6), std=(0.3, 0.2, 0.25))  # P = 3, eps = 1


def write_images(root, n_per_class=5, seed=0):
    rng = np.random.default_rng(seed)
    for c, name in enumerate(["a", "b", "c"]):
        (root / name).mkdir(parents=True)
        for i in range(n_per_class):
            size = (int(rng.integers(22, 34)), int(rng.integers(22, 34)))
            pixels = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
            pixels[..., c] = np.clip(pixels[..., c].astype(int) + 60, 0, 255)  # some class signal
            fmt, ext = ("JPEG", "jpg") if i % 2 else ("PNG", "png")
            Image.fromarray(pixels).save(root / name / f"{i}.{ext}", fmt)
    return root


def linear_model(seed):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 16 * 16, 3)).eval()
    from fitaudit.models import as_classifier

    return as_classifier(net, n_classes=3)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_images(tmp_path_factory.mktemp("imgs") / "data")


def canvas_path(model, data, variant="strongest"):
    """The same test through the canvas-array path: all canvases in memory, TranslationAEG, overfit_test."""
    canvases = np.concatenate([b.images for b in data.batches(PIPELINE, batch_size=100)])
    aeg = TranslationAEG(eps=1, margin=PIPELINE.margin, variant=variant)
    return canvases, overfit_test(PipelineClassifier(model, PIPELINE), canvases, data.labels, aeg)


@pytest.mark.parametrize("variant", ["strongest", "nearest"])
def test_folder_pvalue_equals_canvas_array_path(folder, variant):
    data = open_images(folder)
    model = linear_model(0)
    _, expected = canvas_path(model, data, variant)
    assert expected.n_success > 0  # the check means something: the AEG succeeds on some images
    run = overfit_test_images([model], data, PIPELINE, variant=variant, batch_size=4)
    got = run.test
    assert run.n_scored == 15 and run.broken == [] and run.pvalue == got.pvalue and run.reject == got.reject
    assert got.pvalue == pytest.approx(expected.pvalue, rel=1e-12, abs=1e-15)
    assert got.statistic == pytest.approx(expected.statistic, abs=1e-15)
    assert got.risk_plain == expected.risk_plain and got.n_success == expected.n_success
    assert got.ci.pvalue == pytest.approx(expected.ci.pvalue, rel=1e-12, abs=1e-15)
    assert got.evaluations == expected.evaluations


def test_streaming_and_shards_equal_one_batch(folder, tmp_path):
    data = open_images(folder)
    model = linear_model(1)
    one = overfit_test_images([model], data, PIPELINE, batch_size=len(data)).test
    streamed = overfit_test_images([model], data, PIPELINE, batch_size=2, n_shards=3).test
    assert streamed.pvalue == pytest.approx(one.pvalue, rel=1e-12, abs=1e-15)
    assert streamed.pairwise.variance == pytest.approx(one.pairwise.variance, rel=1e-12)
    # resumable: a second run reads every batch back from the checkpoints and gives the same numbers
    first = overfit_test_images([model], data, PIPELINE, batch_size=4, checkpoint_dir=tmp_path)
    units = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert len(units) >= 4
    again = overfit_test_images([model], data, PIPELINE, batch_size=4, checkpoint_dir=tmp_path)
    assert again.pvalue == first.pvalue == pytest.approx(one.pvalue, rel=1e-12, abs=1e-15)
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == units


def test_random_variant_shards_equal_one_process(folder):
    """Randomised AEGs draw per batch: shards of whole batches give the same numbers as one process."""
    data = open_images(folder)
    model = linear_model(2)
    one = overfit_test_images([model], data, PIPELINE, variant="random", batch_size=3, random_state=5).test
    sharded = overfit_test_images(
        [model], data, PIPELINE, variant="random", batch_size=3, n_shards=4, random_state=5
    ).test
    assert sharded.pvalue == one.pvalue and sharded.risk_adversarial == one.risk_adversarial


@pytest.mark.slow
def test_dask_cluster_shards_give_the_same_pvalue(folder, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    import joblib

    data = open_images(folder)
    models = [linear_model(3), linear_model(4)]
    paths = []
    from fitaudit.models import save_torch_model

    for j, model in enumerate(models):
        config = {"architecture": "mlp", "kwargs": {"in_features": 768, "hidden_sizes": [], "n_classes": 3}}
        from fitaudit.models.architectures import build_architecture

        net = build_architecture(config)
        net.load_state_dict({k: v for k, v in zip(net.state_dict(), model.model[1].state_dict().values())})
        paths.append(str(save_torch_model(net, config, tmp_path / f"m{j}")))
    local = overfit_test_images(paths, data, PIPELINE, batch_size=4).test
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster), joblib.parallel_config(backend="dask"):
            remote = overfit_test_images(paths, data, PIPELINE, batch_size=4, n_shards=3, n_jobs=2).test
    assert remote.pvalue == pytest.approx(local.pvalue, rel=1e-12, abs=1e-15)
    assert remote.n_models == 2
    assert [r["pvalue"] for r in remote.per_model] == pytest.approx([r["pvalue"] for r in local.per_model])


def test_n_model_test_on_folder_equals_canvas_path(folder):
    data = open_images(folder)
    models = [linear_model(5), linear_model(6)]
    canvases, _ = canvas_path(models[0], data)
    aeg = TranslationAEG(eps=1, margin=PIPELINE.margin)
    expected = n_model_test([PipelineClassifier(m, PIPELINE) for m in models], canvases, data.labels, aeg)
    run = overfit_test_images(models, data, PIPELINE, batch_size=5)
    got = run.test
    assert got.pvalue == pytest.approx(expected.pvalue, rel=1e-12, abs=1e-15)
    assert run.evaluations == [r["evaluations"] for r in expected.per_model]


def test_shard_ranges_cover_every_batch_once():
    assert shard_ranges(10, 3) == [(0, 3), (3, 7), (7, 10)]
    assert shard_ranges(2, 5) == [(0, 1), (1, 2)]
    assert shard_ranges(1, 1) == [(0, 1)]


def test_eps_too_large_is_an_input_error(folder):
    from fitaudit._errors import InputError

    with pytest.raises(InputError, match=r"`--eps` 2 needs 3 \* eps = 6 spare pixels"):
        overfit_test_images([linear_model(0)], open_images(folder), PIPELINE, eps=2)


def test_the_result_object_round_trips_through_its_dict(folder):
    """overfit_test_images returns an ImageOverfitResult, and its saved form loads back with the same numbers."""
    from fitaudit.results import Result

    data = open_images(folder)
    run = overfit_test_images([linear_model(5)], data, PIPELINE, batch_size=4)
    assert not hasattr(run, "__iter__")  # one form: .test, .n_scored, .broken, .evaluations
    again = Result.from_dict(run.to_dict())
    assert again.n_scored == run.n_scored == 15 and again.test.pvalue == run.test.pvalue


def test_a_folder_with_a_stride_equals_the_canvas_path(tmp_path):
    """resize 28, crop 16: P = 6, eps = 1 at stride 2 by default (shifts of 2 px); the G3 check at those offsets."""
    pipeline = EvalPipeline(resize=28, crop=16, mean=(0.4, 0.5, 0.6), std=(0.3, 0.2, 0.25))
    data = open_images(write_images(tmp_path / "wide", seed=1))
    model = linear_model(1)
    run = overfit_test_images([model], data, pipeline, stride=2, batch_size=4)
    canvases = np.concatenate([b.images for b in data.batches(pipeline, batch_size=100)])
    aeg = TranslationAEG(eps=1, margin=pipeline.margin, stride=2)
    expected = overfit_test(PipelineClassifier(model, pipeline), canvases, data.labels, aeg)
    assert run.test.pvalue == pytest.approx(expected.pvalue, rel=1e-12, abs=1e-15)
    assert run.test.n_success == expected.n_success > 0 and run.test.g3.stride == 2
    with pytest.raises(InputError, match="3 \\* eps \\* `--stride` 2 = 12"):
        overfit_test_images([model], data, pipeline, eps=2, stride=2)
