"""The examiner's image transforms stay on the model's device (issue 39): rendered, normalised and scored there.

``device="cpu"`` runs the same functions as a GPU would; the host path
(``generate``: images back to numpy, then to the model again) must not be
taken, and the numbers must be those of the host path.
"""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit.data.transforms import ImageTransformGenerator, identity_factors
from fitaudit.examine import examine

torch = pytest.importorskip("torch")


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(4 * 10 * 10, 3)).eval()


def _generator() -> ImageTransformGenerator:
    images = np.random.default_rng(0).random((4, 3, 16, 16)).astype(np.float32)
    return ImageTransformGenerator(images, [0, 1, 2, 1], padding=2, mean=[0.5, 0.4, 0.3], std=[0.2, 0.25, 0.3],
                                   factors={"rotation": (-20, 20), "brightness": (-0.2, 0.2), "noise": (0, 0.1)})


class HostOnly:
    """The same generator seen through ``generate`` only (the host path)."""

    def __init__(self, inner: ImageTransformGenerator) -> None:
        self.inner = inner
        self.factor_space, self.labels, self.class_names = inner.factor_space, inner.labels, inner.class_names

    def generate(self, instances, factors):
        return self.inner.generate(instances, factors)


@pytest.mark.slow
def test_queries_are_scored_on_the_device_with_the_host_paths_numbers(monkeypatch) -> None:
    settings = {"examiner": "random", "steps": 6, "n_reference": 2, "weakness": False, "random_state": 0,
                "device": "cpu"}
    host = examine(_model(), HostOnly(_generator()), **settings)
    device_gen = _generator()

    def no_host(*args, **kwargs):
        raise AssertionError("the images went back to the host")

    monkeypatch.setattr(device_gen, "generate", no_host)
    on_device = examine(_model(), device_gen, **settings)
    np.testing.assert_array_equal(on_device.worst_loss, host.worst_loss)
    np.testing.assert_array_equal(on_device.final_loss, host.final_loss)


def test_generate_tensor_is_generate_left_on_the_device() -> None:
    gen = _generator()
    rows = np.tile(identity_factors(gen.factor_space), (4, 1))
    rows[:, gen.factor_space.names.index("rotation")] = [-10.0, 0.0, 5.0, 20.0]
    tensor = gen.generate_tensor(np.arange(4), rows)
    assert isinstance(tensor, torch.Tensor) and tensor.device.type == "cpu"
    np.testing.assert_array_equal(tensor.numpy(), gen.generate(np.arange(4), rows))
