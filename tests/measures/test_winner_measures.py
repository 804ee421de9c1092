"""The PGDL winners' measures and their pieces against independent references."""

from __future__ import annotations

import colorsys
import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fitaudit._errors import InputError  # noqa: E402
from fitaudit.measures import ModelRecord, get_measure  # noqa: E402
from fitaudit.measures import _winners as W  # noqa: E402
from fitaudit.measures.augmentation_robustness import inconsistency  # noqa: E402
from fitaudit.measures.dbi_mixup import labelwise_mixup_accuracy  # noqa: E402
from fitaudit.measures.mixup_margin import labelwise_midpoints  # noqa: E402


def test_davies_bouldin_matches_scikit_learn() -> None:
    from sklearn.metrics import davies_bouldin_score

    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 5)) + np.repeat(np.eye(5)[:3] * 3, 20, axis=0)
    y = np.repeat(np.arange(3), 20)
    assert W.davies_bouldin(x, y) == pytest.approx(davies_bouldin_score(x, y), rel=1e-12)
    with pytest.raises(InputError, match="at least 2 classes"):
        W.davies_bouldin(x[:20], y[:20])


class Squared(torch.nn.Module):
    """logits (x^2 - 0.5, 0.5 - x^2): class 0 far from 0, class 1 near 0."""

    def forward(self, x):  # noqa: D102
        s = (x**2).sum(1, keepdim=True)
        return torch.cat([s - 0.5, 0.5 - s], dim=1)


def test_labelwise_mixup_accuracy_counts_midpoints_by_hand() -> None:
    x = np.array([[-1.0]] * 5 + [[1.0]] * 5 + [[0.1]] * 10, dtype=np.float32)
    y = np.array([0] * 10 + [1] * 10)
    # class 0: of the 45 pairs, the 25 pairs (-1, +1) meet at 0 (class 1); class 1: every midpoint is 0.1
    acc = labelwise_mixup_accuracy(
        Squared(), x, y, np.random.default_rng(0), per_class=10, n_draws=3
    )
    assert acc == pytest.approx((20 / 45 + 1) / 2)


def test_labelwise_midpoints_pair_within_classes() -> None:
    x = torch.arange(6, dtype=torch.float32)[:, None]
    y = np.array([1, 0, 1, 0, 1, 0])
    mixed, labels = labelwise_midpoints(x, y, np.random.default_rng(0))
    assert list(labels) == [0, 0, 0, 1, 1, 1]
    for value, label in zip(mixed[:, 0].numpy(), labels):
        partner = 2 * value - x[np.flatnonzero(y == label)][:, 0].numpy()
        assert np.any(np.isin(partner, x[np.flatnonzero(y == label)][:, 0].numpy()))


def test_five_number_summary_by_hand() -> None:
    d = np.array([1.0, 2, 3, 4, 5, 6, 7, 8, 100])
    q1, q2, q3 = 3.0, 5.0, 7.0  # numpy's linear percentiles of this set
    # 100 lies above q3 + 1.5 IQR = 13, so the upper "fence" is 100; nothing below -3, so f_l = min = 1
    assert W.five_number_mean(d) == pytest.approx(np.mean([1.0, q1, q2, q3, 100.0]))


def test_representation_margin_of_a_linear_head() -> None:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Linear(6, 3)).eval()
    x = torch.randn(10, 4)
    y = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0])
    margins, feats = W.representation_margins(net, net[0], x, y)
    w2 = net[1].weight.detach().double().numpy()
    z = net(x).detach().double().numpy()
    for row, label, got in zip(z, y, margins):
        top = np.argsort(-row)
        i, j = (top[0], top[1]) if top[0] == label else (label, top[0])
        assert got == pytest.approx(
            (row[i] - row[j]) / (np.linalg.norm(w2[i] - w2[j]) + 1e-7), rel=1e-5
        )
    assert feats.shape == (10, 6)


def test_knn_label_variation_equals_a_sum_over_edges() -> None:
    rng = np.random.default_rng(0)
    feats = rng.normal(size=(12, 4))
    y = np.eye(3)[rng.integers(0, 3, size=12)] * rng.uniform(0.5, 1, size=(12, 1))
    laplacian = W.knn_laplacian(feats)
    v = feats / np.linalg.norm(feats, axis=1, keepdims=True)
    dist = np.array([[np.sum((a - b) ** 2) for b in v] for a in v])
    sim = np.exp(-dist / (3 * dist.std()))
    edges = []
    for i in range(12):
        best = max(sim[i, j] for j in range(12) if j != i)
        edges += [(i, j) for j in range(12) if j != i and sim[i, j] >= best]
    degree = np.zeros(12)
    for i, _ in edges:
        degree[i] += 1
    total = sum(float(y[i] @ y[i]) for i in range(12))
    total -= sum(float(y[i] @ y[j]) / np.sqrt(degree[i] * degree[j]) for i, j in edges)
    assert W.label_variation(laplacian, y) == pytest.approx(total / (4 * 12), rel=1e-9)


def test_sobel_matches_scipy_with_reflect_padding() -> None:
    from scipy.ndimage import correlate

    x = np.random.default_rng(0).uniform(size=(2, 3, 6, 7))
    kernel = np.array([[-1.0, 0, 1], [-2, 0, 2], [-1, 0, 1]])
    expected = (
        np.stack([np.stack([correlate(ch, kernel, mode="mirror") for ch in img]) for img in x]) / 4
        + 0.5
    )
    np.testing.assert_allclose(W.sobel_dx(torch.as_tensor(x)).numpy(), expected, atol=1e-12)


def test_saturation_matches_colorsys() -> None:
    x = np.random.default_rng(1).uniform(size=(2, 3, 4, 4))
    for factor in (0.6, 1.5):
        ours = W.scale_saturation(torch.as_tensor(x), factor).numpy()
        for n, i, j in np.ndindex(2, 4, 4):
            h, s, v = colorsys.rgb_to_hsv(*x[n, :, i, j])
            expected = colorsys.hsv_to_rgb(h, min(1.0, s * factor), v)
            np.testing.assert_allclose(ours[n, :, i, j], expected, atol=1e-9)
    gray = torch.rand(2, 1, 4, 4)
    assert torch.equal(W.scale_saturation(gray, 1.5), gray)


def test_crop_erase_and_zoom_keep_the_shape() -> None:
    x = torch.rand(3, 3, 32, 32)
    crop = W.central_crop_resize(x, 0.9)
    assert crop.shape == x.shape and not torch.allclose(crop, x)
    assert torch.allclose(W.central_crop_resize(x, 1.0), x)
    erased = W.random_erase(x, np.random.default_rng(0))
    assert erased.shape == x.shape and bool(((erased == 0).reshape(3, -1).any(1)).all())
    zoomed = W.random_zoom(x, np.random.default_rng(0))
    assert zoomed.shape == x.shape


def test_inconsistency_rule() -> None:
    p = torch.tensor([[0.7, 0.3], [0.6, 0.4]])
    q = torch.tensor([[0.9, 0.1], [0.2, 0.8]])
    np.testing.assert_allclose(inconsistency(p, q, 6.0), [0.2, 6.0], atol=1e-6)


def test_augmentation_robustness_of_a_constant_network_is_zero(record: ModelRecord) -> None:
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 3)).eval()
    with torch.no_grad():
        net[1].weight.zero_()
    rec = dataclasses.replace(record, model=net, initial_model=None)
    assert get_measure("augmentation_robustness")(rec) == 0.0
    assert get_measure("augmentation_robustness")(record) > 0.0


@pytest.mark.parametrize("name", ["augmentation_robustness", "augmentation_margin"])
def test_image_augmentations_refuse_vectors(name: str) -> None:
    net = torch.nn.Sequential(torch.nn.Linear(4, 2)).eval()
    rec = ModelRecord(
        model=net, train_x=np.zeros((10, 4), np.float32), train_y=np.zeros(10, np.int64)
    )
    with pytest.raises(InputError, match=r"needs `record.train_x` of shape \(m, C, H, W\)"):
        get_measure(name)(rec)


def test_dbi_mixup_is_dbi_times_mixup_error(record: ModelRecord) -> None:
    from sklearn.metrics import davies_bouldin_score

    from fitaudit.measures.dbi_mixup import early_features

    net = record.model
    # the early representation: the first convolution's output, max-pooled 4x4, flattened
    with torch.no_grad():
        h = torch.nn.functional.max_pool2d(net[0](torch.as_tensor(record.train_x)), 4)
    np.testing.assert_allclose(
        early_features(net, record.train_x), h.reshape(len(h), -1).numpy(), rtol=1e-6
    )
    m = get_measure("dbi_mixup", n_examples=90, n_draws=1, per_class=30)
    dbi = davies_bouldin_score(h.reshape(len(h), -1).double().numpy(), record.train_y)
    mixup = labelwise_mixup_accuracy(
        net, record.train_x, record.train_y, np.random.default_rng(0), 30, 1
    )
    assert m(record) == pytest.approx(dbi * (1 - mixup), rel=1e-6)
