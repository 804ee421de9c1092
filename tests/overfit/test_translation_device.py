"""The translational AEG's crops made on the model's device (fitaudit.overfit.translation_device).

Werpachowski et al. (NeurIPS 2019), App. B: every image is scored at up to
(4 eps + 1)^2 translations. These tests run the device path on the CPU
(``device="cpu"``: the same functions a GPU runs) and check it against the
host path of a model that takes numpy arrays (crops cut by numpy, normalised
by :class:`~fitaudit.models.pipeline_classifier.PipelineClassifier`): the same outcomes,
bit for bit, and each image handed to the device once.
"""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit.data.images import open_images
from fitaudit.data.pipeline import EvalPipeline
from fitaudit.models.pipeline_classifier import PipelineClassifier
from fitaudit.overfit.images import overfit_test_images
from fitaudit.overfit.one_model import example_terms
from fitaudit.overfit.translation import TranslationAEG
from fitaudit.overfit.translation_device import CropScorer

torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")

from fitaudit.models.torch_adapter import TorchClassifier  # noqa: E402  (needs torch)

PIPELINE = EvalPipeline(resize=22, crop=16, mean=(0.4, 0.5, 0.6), std=(0.3, 0.2, 0.25))  # P = 3, eps = 1


def small_cnn(seed=0, n_classes=3):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(16, n_classes),
    ).eval()


class HostOnly:
    """The same torch model seen as a model of numpy arrays only (no device path): the reference."""

    def __init__(self, classifier):
        self.classifier = classifier
        self.n_classes = classifier.n_classes

    def logits(self, x):
        return self.classifier.logits(x)

    def predict(self, x):
        return self.logits(x).argmax(axis=1)


class CountingClassifier(TorchClassifier):
    """A torch adapter that counts the bytes of images handed to its device: numpy batches and uploads alike.

    (The runner's one calibration batch per input shape, taken when the
    runner is chosen, is not counted: it does not grow with the images.)
    """

    handed = 0

    def to_device(self, array):
        self.handed += array.nbytes
        return super().to_device(array)

    def _logits_batch(self, x):
        self.handed += x.nbytes
        return super()._logits_batch(x)


def pixels(m=6, side=22, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (m, 3, side, side), dtype=np.uint8)


@pytest.mark.parametrize("gather", ["index", "copy"])
def test_crops_scored_on_the_device_equal_the_host_crops(gather):
    """Both ways of cutting crops on a device give the host path's losses, excess logits and predictions exactly."""
    model = TorchClassifier(small_cnn(), n_classes=3, backend="eager")
    canvases = pixels()
    rng = np.random.default_rng(1)
    rows, tops, lefts = rng.integers(0, 6, 40), rng.integers(0, 7, 40), rng.integers(0, 7, 40)
    labels = rng.integers(0, 3, 40)
    wrapped = PipelineClassifier(model, PIPELINE)
    device = CropScorer(wrapped, canvases, height=16, width=16, gather=gather)
    host = CropScorer(PipelineClassifier(HostOnly(model), PIPELINE), canvases, height=16, width=16)
    assert device.device == torch.device("cpu") and host.device is None
    got, expected = device.score(rows, tops, lefts, labels, 3), host.score(rows, tops, lefts, labels, 3)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    assert got[0].any() and not got[0].all()  # some crops right, some wrong: the comparison means something
    # the outcomes are those of the logits, computed independently here
    crops = np.stack([PIPELINE.normalise(canvases[i, :, a : a + 16, b : b + 16] / np.float32(255))
                      for i, a, b in zip(rows, tops, lefts)])
    logits = model.logits(crops)
    np.testing.assert_array_equal(got[2], logits.argmax(axis=1))
    others = np.where(np.eye(3, dtype=bool)[labels], -np.inf, logits).max(axis=1)
    np.testing.assert_array_equal(got[1], others - logits[np.arange(40), labels])


@pytest.mark.parametrize("variant", ["strongest", "random2"])
def test_uint8_canvases_on_the_device_give_the_float_host_path_vectors(variant):
    """The AEG's vectors from uint8 pixels normalised on the device equal those of float canvases on the host."""
    torch.manual_seed(2)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 16 * 16, 3)).eval()  # moved crops change its class
    model = TorchClassifier(net, n_classes=3, backend="eager")
    canvases = pixels(m=12, seed=3)
    floats = canvases.astype(np.float32) / np.float32(255)
    labels = HostOnly(model).predict(PIPELINE.normalise(floats[:, :, 3:19, 3:19]))
    labels[::4] = (labels[::4] + 1) % 3  # some examples wrong
    aeg = TranslationAEG(eps=1, margin=3, variant=variant, random_state=0)
    got = aeg.terms(PipelineClassifier(model, PIPELINE), canvases, labels)
    expected = example_terms(PipelineClassifier(HostOnly(model), PIPELINE), floats, labels, aeg)
    for key in ("loss", "weighted_adv_loss", "success", "prediction", "evaluations"):
        np.testing.assert_array_equal(got[key], expected[key], err_msg=key)
    assert got["loss"].any() and got["success"].any()


def test_each_image_goes_to_the_device_once_not_as_its_crops(tmp_path):
    """The streamed test hands the device about one uint8 canvas per image, not its 25 float crops (eps = 1).

    On the code before the device path every crop went to the model as a
    float32 array: 25 crops of 3 x 16 x 16 x 4 bytes per image, 16.7x a
    uint8 canvas of 3 x 22 x 22 bytes.
    """
    rng = np.random.default_rng(0)
    for c in "ab":
        (tmp_path / c).mkdir()
        for i in range(4):
            Image.fromarray(rng.integers(0, 256, (26, 30, 3), dtype=np.uint8)).save(tmp_path / c / f"{i}.png")
    data = open_images(tmp_path)
    model = CountingClassifier(small_cnn(4, n_classes=2), n_classes=2, backend="eager")
    run = overfit_test_images([model], data, PIPELINE, eps=1, batch_size=3, check_density=False)
    assert run.n_scored == 8 and run.evaluations[0] >= 8 * 9  # the AEG scored at least the 9 candidates per image
    canvas = 3 * PIPELINE.canvas_size**2  # bytes of one uint8 canvas
    assert model.handed / run.n_scored <= 1.1 * canvas
    assert model.handed > 0  # the count sees the uploads
