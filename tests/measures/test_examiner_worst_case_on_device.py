"""The examiner's worst case over transformed training images, on the model's device (issue 39).

The examiner_worst_case measure (Shu et al., AAAI 2020, Algorithm 1, via
:func:`fitaudit.examine.examine`) now uploads its training images once and
transforms and scores them where the model is; only the logits come back.
These tests run that path with ``device="cpu"`` (the same code a GPU runs)
against the former host formulation: a plain callable returning numpy
images, scored through the numpy inference path.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fitaudit.examine import examine  # noqa: E402
from fitaudit.measures import ModelRecord, get_measure  # noqa: E402
from fitaudit.measures import _torch as T  # noqa: E402
from fitaudit.measures import examiner_worst_case as E  # noqa: E402
from fitaudit.models import torch_ops  # noqa: E402
from fitaudit.models.torch_adapter import TorchClassifier  # noqa: E402
from fitaudit.random import check_random_state  # noqa: E402


def host_worst_case(record: ModelRecord, examiner: str, steps: int, n_instances: int, seed: int) -> float:
    """The former measure: images transformed on the host, handed to the examiner as numpy arrays."""
    x, y = T.check_record_data(record, "examiner_worst_case")
    rng = check_random_state(seed)
    idx = np.sort(rng.choice(len(x), size=min(n_instances, len(x)), replace=False))
    images, labels = x[idx], y[idx]
    value_range = float(x.max() - x.min()) or 1.0

    def generate(instances, factors):
        return np.asarray(E.transform(images[np.asarray(instances, dtype=int)], factors, value_range))

    result = examine(T.eval_copy(record.model), generate, factor_space=E.FACTORS, labels=labels, examiner=examiner,
                     steps=steps, weakness=False, n_reference=0, chunk_size=None,
                     random_state=int(rng.integers(0, 2**31 - 1)), device="cpu")
    return float(np.mean(result.worst_loss))


@pytest.mark.parametrize("examiner", ["random", "bo"])
@pytest.mark.slow
def test_worst_case_equals_the_host_formulation(record: ModelRecord, examiner) -> None:
    for seed in (0, 1):
        measure = get_measure("examiner_worst_case", examiner=examiner, steps=4, n_instances=8, random_state=seed)
        assert measure(record) == host_worst_case(record, examiner, 4, 8, seed)


@pytest.mark.slow
def test_no_image_goes_back_to_the_host(record: ModelRecord, monkeypatch) -> None:
    """The numpy inference path (TorchClassifier.logits) is never taken: the previous code took it every step."""
    expected = get_measure("examiner_worst_case", steps=4, n_instances=8, random_state=2)(record)
    uploads: list[int] = []
    as_tensor = torch_ops.as_tensor

    def counting(x, device=None):
        if isinstance(x, np.ndarray):
            uploads.append(len(x))
        return as_tensor(x, device)

    def no_host(*args, **kwargs):
        raise AssertionError("the images went back to the host")

    monkeypatch.setattr(TorchClassifier, "logits", no_host)
    for module in (torch_ops, T, E):  # every module that sends arrays to the device through it
        monkeypatch.setattr(module, "as_tensor", counting)
    assert get_measure("examiner_worst_case", steps=4, n_instances=8, random_state=2)(record) == expected
    assert uploads == [8]  # the examined images, once (the previous code sent every step's batch)


def test_transformed_images_stay_on_the_device() -> None:
    """A CPU tensor mixed into another device's images is an error: ``meta`` stands for a GPU."""
    images = E.TransformedImages(np.zeros((3, 3, 8, 8), np.float32), np.array([0, 1, 2]), 1.0, "meta")
    factors = np.tile(E.FACTORS.lows, (2, 1))
    out = images.generate_tensor(np.array([2, 0]), factors)
    assert out.device.type == "meta" and out.shape == (2, 3, 8, 8) and images.device == "meta"
