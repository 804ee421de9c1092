"""Hugging Face image classifiers saved with save_pretrained: recognised, classes and pipeline read, run like torch.

The models are built from small configs (nothing downloaded); the reference
accuracy is transformers' own: its image processor on the same files, its
model's logits.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from class_images import write_class_folders

import fitaudit
from fitaudit._errors import InputError
from fitaudit.cli import main
from fitaudit.data.images import open_images
from fitaudit.data.pipeline import EvalPipeline
from fitaudit.models import load_model
from fitaudit.models.formats.hf import pipeline_of
from fitaudit.models.io import read_model_metadata
from fitaudit.options import RunOptions

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")

CLASSES = ["ant", "bee", "cat"]


def write_folder(root, seed):
    return write_class_folders(root, CLASSES, seed=seed, per_class=5, sides=(30, 48), spread=40.0)


def labels(config):
    return {"id2label": dict(enumerate(CLASSES)), "label2id": {c: i for i, c in enumerate(CLASSES)}}


def save_vit(folder):
    config = transformers.ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
                                    num_attention_heads=2, intermediate_size=64, num_labels=3, **labels(None))
    torch.manual_seed(0)
    model = transformers.ViTForImageClassification(config).eval()
    model.save_pretrained(folder)
    transformers.ViTImageProcessor(size={"height": 32, "width": 32}, resample=3).save_pretrained(folder)
    return model


def save_resnet(folder):
    config = transformers.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], num_labels=3,
                                       **labels(None))
    torch.manual_seed(1)
    model = transformers.ResNetForImageClassification(config).eval()
    model.save_pretrained(folder)
    transformers.ConvNextImageProcessor(size={"shortest_edge": 32}, crop_pct=0.8).save_pretrained(folder)
    return model


def transformers_accuracy(model, folder_of_model, images):
    """transformers' own processor and model on the same files."""
    processor = transformers.AutoImageProcessor.from_pretrained(folder_of_model)
    data = open_images(images, classes=CLASSES)
    batch = processor(images=[Image.open(p).convert("RGB") for p in data.paths], return_tensors="pt")
    with torch.no_grad():
        predicted = model(**batch).logits.numpy().argmax(axis=1)
    assert len(set(predicted.tolist())) > 1  # the predictions vary with the images
    return float(np.mean(predicted == data.labels)), predicted


@pytest.mark.parametrize("kind", ["vit", "resnet"])
@pytest.mark.slow
def test_save_pretrained_folder_inspect_and_audit(kind, tmp_path, capsys):
    folder = tmp_path / kind
    model = (save_vit if kind == "vit" else save_resnet)(folder)
    images = write_folder(tmp_path / "images", 3)
    truth, predicted = transformers_accuracy(model, folder, images)
    metadata = read_model_metadata(folder)
    assert metadata.classes == CLASSES
    pipeline = EvalPipeline.from_dict(metadata.pipeline)
    if kind == "vit":  # a fixed 32 x 32 size, bicubic, mean and std 0.5
        assert (pipeline.resize, pipeline.crop, pipeline.squash, pipeline.resample) == (32, 32, True, "bicubic")
        assert pipeline.mean == (0.5, 0.5, 0.5)
    else:  # ConvNeXt's rule: shortest edge 32 / crop_pct 0.8 = 40, centre crop 32
        assert (pipeline.resize, pipeline.crop, pipeline.squash) == (40, 32, False)
    adapter = load_model(folder)
    assert adapter.kind == "torch" and adapter.n_classes == 3
    inputs = open_images(images, classes=CLASSES).arrays(pipeline)[0]
    ours = adapter.predict(inputs)
    assert np.mean(ours == predicted) >= 0.9  # the resize may round a pixel differently from transformers'
    assert main(["inspect", "--model", str(folder), "--images", str(images), "--json", "--quiet"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["classes"] == CLASSES and shown["accuracy"] == pytest.approx(truth, abs=0.07)
    if kind == "resnet":  # resize 40, crop 32: 4 spare pixels per side, room for the overfitting test's shifts
        result = fitaudit.audit(folder, images=images, instruments=["overfit"], options=RunOptions(progress=False))
        assert result.subject["accuracy"] == pytest.approx(shown["accuracy"])


def test_remote_code_and_pickled_weights_are_refused(tmp_path):
    folder = tmp_path / "vit"
    save_vit(folder)
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModelForImageClassification": "modeling_evil.EvilModel"}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "modeling_evil.py").write_text("raise SystemExit('ran')\n")
    with pytest.raises(InputError, match=r"needs code from outside transformers.*--trust-code"):
        load_model(folder)
    from fitaudit.models.io import runs_code

    assert runs_code(folder)
    bare = tmp_path / "bin"
    save_vit(bare)
    (bare / "model.safetensors").rename(bare / "pytorch_model.bin")
    with pytest.raises(InputError, match="no model.safetensors.*pickle"):
        load_model(bare)


class _Payload:
    """A pickle that, when unpickled, writes a marker file (the attack of issue 37's first item)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def _point_index_at(folder, target):
    """A model.safetensors.index.json whose weight_map sends every tensor to ``target``; the single file removed."""
    from safetensors.torch import load_file

    names = list(load_file(str(folder / "model.safetensors")))
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": {name: target for name in names}}))


def test_an_index_naming_a_pickle_is_refused_and_the_pickle_never_opened(tmp_path, capsys):
    folder = tmp_path / "vit"
    save_vit(folder)
    marker = tmp_path / "payload-ran"
    torch.save({"weights": _Payload(marker)}, folder / "pytorch_model.bin")
    _point_index_at(folder, "pytorch_model.bin")
    with pytest.raises(InputError, match=r"maps weights to 'pytorch_model.bin'.*only from \.safetensors files"):
        load_model(folder)
    assert main(["inspect", "--model", str(folder), "--quiet"]) == 2
    assert "loaded safely" not in capsys.readouterr().out
    assert not marker.exists()


@pytest.mark.parametrize("target", ["../model.safetensors", "sub/model.safetensors", "missing.safetensors"])
def test_an_index_naming_files_outside_the_folder_or_absent_is_refused(tmp_path, target):
    folder = tmp_path / "vit"
    save_vit(folder)
    _point_index_at(folder, target)
    with pytest.raises(InputError, match=f"maps weights to {target!r}"):
        load_model(folder)


def test_sharded_safetensors_load_to_the_same_model(tmp_path):
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "vit"
    model = save_vit(folder)
    state = load_file(str(folder / "model.safetensors"))
    names = sorted(state)
    halves = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    for shard, keys in halves.items():
        save_file({k: state[k] for k in keys}, str(folder / shard), metadata={"format": "pt"})
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {k: shard for shard, keys in halves.items() for k in keys}}))
    inputs = np.random.default_rng(0).random((4, 3, 32, 32), dtype=np.float32)
    with torch.no_grad():
        expected = model(pixel_values=torch.from_numpy(inputs)).logits.numpy().argmax(axis=1)
    assert np.array_equal(load_model(folder).predict(inputs), expected)


def test_weights_that_do_not_match_the_config_are_refused(tmp_path):
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "vit"
    save_vit(folder)
    state = load_file(str(folder / "model.safetensors"))
    head = [k for k in state if k.startswith("classifier")]
    save_file({k: v for k, v in state.items() if k not in head}, str(folder / "model.safetensors"))
    with pytest.raises(InputError, match=r"do not fill the model.*weights missing.*classifier"):
        load_model(folder)


def test_the_refusals_name_their_cause(tmp_path):
    folder = tmp_path / "vit"
    save_vit(folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoConfig": "x.Y"}}))
    with pytest.raises(InputError, match=r"names code of its own \('auto_map'") as refused:
        load_model(folder)
    assert "does not know" not in str(refused.value) and "is not one transformers knows" not in str(refused.value)
    (folder / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match=r"config.json' is not valid JSON \(nested too deep\)"):
        load_model(folder)


@pytest.mark.parametrize(
    "settings, expected",
    [
        ({"size": {"height": 224, "width": 224}, "resample": 2}, {"resize": 224, "crop": 224, "squash": True}),
        ({"size": {"shortest_edge": 224}, "crop_pct": 0.875}, {"resize": 256, "crop": 224}),
        ({"size": {"shortest_edge": 384}, "crop_pct": 0.875}, {"resize": 384, "crop": 384, "squash": True}),
        ({"size": {"shortest_edge": 256}, "do_center_crop": True, "crop_size": {"height": 224, "width": 224}},
         {"resize": 256, "crop": 224}),
        ({"size": {"height": 256, "width": 256}, "do_center_crop": True, "crop_size": 224},
         {"resize": 256, "crop": 224, "squash": True}),
    ],
)
def test_processor_settings_map_to_the_pipeline(settings, expected):
    pipeline = pipeline_of({"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], **settings}, where="x")
    assert {key: pipeline[key] for key in expected} == expected


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"size": {"height": 224, "width": 200}}, "non-square 'size'"),
        ({"size": {"shortest_edge": 224}}, "give --crop"),
        ({"size": 32, "rescale_factor": 1.0}, "does not scale pixels by 1/255"),
        ({"size": 32, "resample": 9}, "'resample' must be one of"),
    ],
)
def test_processor_settings_fitaudit_cannot_reproduce_are_refused(settings, message):
    with pytest.raises(InputError, match=message):
        pipeline_of(settings, where="x")
