"""The PGDL winners' augmentations, mixups and reductions on the model's device (issue 39).

Aithal et al.'s augmentation robustness, Natekar & Sharma's label-wise
mixup accuracy and Lassance et al.'s mixed-up label variation now make their
batches where the model is and bring back only per-example numbers; Natekar
& Sharma's zoom (augmentation margin) resamples a batch in one call. These
tests run that path with the model on the CPU (the same code a GPU runs)
against references written here in the former host formulation (batches
made on the CPU in numpy or CPU tensors, logits through the numpy
inference path), and torch's ``meta`` device stands for a device other than
the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from host_outputs import output_function  # noqa: E402

from fitaudit.measures import ModelRecord, get_measure  # noqa: E402
from fitaudit.measures import _torch as T  # noqa: E402
from fitaudit.measures import _winners as W  # noqa: E402
from fitaudit.measures.augmentation_robustness import PENALTIES, augmentations, inconsistency  # noqa: E402
from fitaudit.measures.dbi_mixup import labelwise_mixup_accuracy  # noqa: E402
from fitaudit.models.torch_adapter import TorchClassifier  # noqa: E402
from fitaudit.models.torch_ops import as_tensor  # noqa: E402


def erase_by_slices(x, rng, sl=0.02, sh=0.4, r1=0.3):
    """The entry's random erase as a loop of slice assignments on a CPU copy (the former code)."""
    out = x.clone()
    h, w = x.shape[-2:]
    low, high = int(np.round(np.sqrt(sl * h * w * r1))), int(np.round(np.sqrt(sh * h * w / r1)))
    h_high, w_high = min(high, h), min(high, w)
    for i in range(x.shape[0]):
        eh = int(rng.integers(low, h_high)) if h_high > low else min(low, h - 1)
        ew = int(rng.integers(low, w_high)) if w_high > low else min(low, w - 1)
        top = int(rng.integers(0, h - eh)) if h - eh > 0 else 0
        left = int(rng.integers(0, w - ew)) if w - ew > 0 else 0
        out[i, :, top : top + eh, left : left + ew] = 0.0
    return out


def host_augmentation_robustness(record, batch_size, max_batches, seed):
    """Aithal et al.'s mean inconsistency, every batch made on the CPU and scored through numpy logits."""
    run = output_function(T.eval_copy(record.model))
    rng = np.random.default_rng(seed)
    x = np.asarray(record.train_x, dtype=np.float32)

    def softmax(batch):
        return torch.softmax(torch.from_numpy(run(batch.numpy())).float(), dim=1)

    scores = []
    for b, sl in enumerate(T.iterate_batches(len(x), batch_size)):
        if b == max_batches:
            break
        xb = torch.from_numpy(x[sl].copy())
        p = softmax(xb)
        flipped = xb.flip(-1)
        batches = {"flip": flipped, "saturation": W.scale_saturation(xb, float(rng.uniform(0.6, 1.6))),
                   "crop": W.central_crop_resize(xb, 0.9), "sobel": W.sobel_dx(xb),
                   "brightness": xb + 0.5, "flip_saturation": W.scale_saturation(flipped, float(rng.uniform(0.6, 1.6))),
                   "erase": erase_by_slices(xb, rng)}
        total = np.zeros(len(xb))
        for key, penalty in PENALTIES:
            q = softmax(batches[key])
            same = (p.argmax(1) == q.argmax(1)).numpy()
            total += np.where(same, (p.max(1).values - q.max(1).values).abs().double().numpy(), penalty)
        scores.append(total)
    return float(np.mean(np.concatenate(scores)))


@pytest.mark.parametrize("shape", [(5, 3, 8, 8), (4, 1, 9, 13), (3, 3, 32, 32)])
def test_random_erase_zeroes_the_rectangles_the_slice_loop_zeroes(shape) -> None:
    x = torch.rand(*shape) + 0.1
    for seed in range(5):
        assert torch.equal(W.random_erase(x, np.random.default_rng(seed)), erase_by_slices(x, np.random.default_rng(seed)))


def test_augmentation_robustness_equals_the_host_formulation(record: ModelRecord) -> None:
    for seed in (0, 3):
        measure = get_measure("augmentation_robustness", batch_size=32, max_batches=2, random_state=seed)
        assert measure(record) == pytest.approx(host_augmentation_robustness(record, 32, 2, seed), rel=1e-12, abs=1e-12)


@pytest.mark.slow
def test_winners_send_batches_to_the_device_and_never_score_numpy_batches(record: ModelRecord, monkeypatch) -> None:
    """The numpy inference path (TorchClassifier.logits) is never taken: the previous code took it."""
    expected = {name: get_measure(name, random_state=1, **fast)(record) for name, fast in
                [("augmentation_robustness", {"batch_size": 32, "max_batches": 2}),
                 ("dbi_mixup", {"n_draws": 2, "n_examples": 40})]}

    def no_host_batches(self, x):
        raise AssertionError("a batch was scored from the host")

    monkeypatch.setattr(TorchClassifier, "logits", no_host_batches)
    for name, fast in [("augmentation_robustness", {"batch_size": 32, "max_batches": 2}),
                       ("dbi_mixup", {"n_draws": 2, "n_examples": 40})]:
        assert get_measure(name, random_state=1, **fast)(record) == expected[name]


@pytest.mark.slow
def test_labelwise_mixup_accuracy_equals_host_midpoints(record: ModelRecord) -> None:
    x, y = np.asarray(record.train_x, dtype=np.float32), np.asarray(record.train_y)
    model = T.eval_copy(record.model)
    for seed in (0, 1):
        rng = np.random.default_rng(seed)  # the former code: midpoints in numpy, logits through numpy
        hits: dict[int, list[float]] = {}
        for c in np.unique(y):
            members = np.flatnonzero(y == c)
            for _ in range(3):
                pick = rng.choice(members, size=min(6, len(members)), replace=False)
                a, b = np.triu_indices(len(pick), 1)
                predicted = output_function(model)((x[pick[a]] + x[pick[b]]) / 2).argmax(1)
                hits.setdefault(int(c), []).append(float(np.mean(predicted == c)))
        expected = float(np.mean([np.mean(v) for v in hits.values()]))
        got = labelwise_mixup_accuracy(model, x, y, np.random.default_rng(seed), per_class=6, n_draws=3)
        assert got == pytest.approx(expected, rel=1e-12)


def test_knn_label_variation_equals_host_mixing(record: ModelRecord) -> None:
    x, y = np.asarray(record.train_x, dtype=np.float32), np.asarray(record.train_y)
    model = T.eval_copy(record.model)
    module = T.last_layer(model)
    rng = np.random.default_rng(2)  # the former code: the mixup made in numpy (float64), then a float32 batch
    values = []
    for _ in range(3):
        idx = np.concatenate([rng.choice(np.flatnonzero(y == c), size=10, replace=False) for c in np.unique(y)])
        lam = rng.beta(2.0, 2.0, size=len(idx))
        partner = rng.permutation(len(idx))
        mixed = lam[:, None, None, None] * x[idx] + (1 - lam[:, None, None, None]) * x[idx][partner]
        onehot = np.eye(3)[y[idx]]
        targets = lam[:, None] * onehot + (1 - lam[:, None]) * onehot[partner]
        _, h = T.capture(model, module, as_tensor(mixed), output=False)
        values.append(W.label_variation(W.knn_laplacian(T.host(h.reshape(len(idx), -1))), targets))
    measure = get_measure("knn_label_variation", n_graphs=3, per_class=10, random_state=2)
    assert measure(record) == pytest.approx(float(np.median(values)), rel=1e-12)


def test_the_seven_augmentations_and_their_reduction_stay_on_the_device() -> None:
    """A CPU tensor mixed into another device's batch is an error: ``meta`` stands for a GPU."""
    x = torch.zeros(4, 3, 8, 8, device="meta")
    augmented = augmentations(x, np.random.default_rng(0))
    assert {v.device.type for v in augmented.values()} == {"meta"}
    p = torch.zeros(4, 3, device="meta")
    assert inconsistency(p, p, 6.0).device.type == "meta"


def zoom_per_image(x, rng):
    """The first-place entry's zoom as the former loop: per image a coin, a scale and its own grid_sample call."""
    scales = np.arange(0.85, 1.0, 0.01)
    out = x.clone()
    h, w = x.shape[-2:]
    for i in range(x.shape[0]):
        if rng.uniform() < 0.5:
            continue
        s = float(scales[int(rng.integers(0, len(scales)))])
        gy = torch.linspace(-s, s, h, dtype=x.dtype, device=x.device)
        gx = torch.linspace(-s, s, w, dtype=x.dtype, device=x.device)
        yy, xx = torch.meshgrid(gy, gx, indexing="ij")
        grid = torch.stack([xx, yy], dim=-1)[None]
        out[i] = torch.nn.functional.grid_sample(x[i : i + 1], grid, mode="bilinear", align_corners=True)[0]
    return out


@pytest.mark.parametrize("shape", [(40, 3, 8, 8), (17, 1, 9, 13), (6, 3, 32, 32)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_random_zoom_in_one_call_equals_the_per_image_loop(shape, dtype, monkeypatch) -> None:
    x = torch.rand(*shape, generator=torch.Generator().manual_seed(shape[0]), dtype=dtype)
    calls: list[int] = []  # rows per grid_sample call
    grid_sample = torch.nn.functional.grid_sample

    def counting(images, *args, **kwargs):
        calls.append(images.shape[0])
        return grid_sample(images, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "grid_sample", counting)
    for seed in (0, 1):
        old_rng, rng = np.random.default_rng(seed), np.random.default_rng(seed)
        expected = zoom_per_image(x, old_rng)
        zoomed = len(calls)
        assert 0 < zoomed < shape[0] and set(calls) == {1}
        calls.clear()
        assert torch.equal(W.random_zoom(x, rng), expected)
        assert calls == [zoomed]  # the same images zoomed, resampled at once
        calls.clear()
        assert rng.uniform() == old_rng.uniform()  # the same draws, so the next ones agree


def test_augmentation_margin_equals_the_per_image_zoom(record: ModelRecord, monkeypatch) -> None:
    for seed in (0, 1):
        got = get_measure("augmentation_margin", n_batches=2, batch_size=20, random_state=seed)(record)
        with monkeypatch.context() as patch:
            patch.setattr(W, "random_zoom", zoom_per_image)
            expected = get_measure("augmentation_margin", n_batches=2, batch_size=20, random_state=seed)(record)
        assert got == expected
