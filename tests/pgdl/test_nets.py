"""The PGDL network families: shapes, parameter counts by hand, TensorFlow 'same' padding, bad arguments."""

from __future__ import annotations

import pytest

from fitaudit._errors import InputError

torch = pytest.importorskip("torch")

from fitaudit.models.architectures import build_architecture, list_architectures  # noqa: E402


def build(name, **kwargs):
    return build_architecture({"architecture": name, "kwargs": kwargs})


def n_params(module):
    return sum(p.numel() for p in module.parameters())


def test_registered():
    assert {"pgdl_vgg", "pgdl_nin", "pgdl_allconv"} <= set(list_architectures())


def test_vgg_layout_and_parameter_count():
    net = build("pgdl_vgg", n_classes=10, in_channels=1, image_size=8, width=4, blocks=1, dense_layers=2, dense_width=16, dropout=0.5)
    kinds = [type(m).__name__ for m in net]
    assert kinds == ["Conv2d", "ReLU", "Conv2d", "ReLU", "MaxPool2d", "Flatten", "Dropout", "Linear", "ReLU", "Dropout", "Linear", "ReLU", "Linear"]
    # conv 1->4 (3x3) + conv 4->4 + dense 4*4*4 -> 16 + 16 -> 16 + 16 -> 10, with biases
    expected = (9 * 1 * 4 + 4) + (9 * 4 * 4 + 4) + (64 * 16 + 16) + (16 * 16 + 16) + (16 * 10 + 10)
    assert n_params(net) == expected
    assert net(torch.zeros(3, 1, 8, 8)).shape == (3, 10)
    three = build("pgdl_vgg", n_classes=10, in_channels=3, image_size=32, width=8, blocks=3)
    widths = [m.out_channels for m in three if isinstance(m, torch.nn.Conv2d)]
    assert widths == [8, 8, 16, 16, 32, 32]
    assert three(torch.zeros(2, 3, 32, 32)).shape == (2, 10)


def test_nin_strided_blocks_use_tensorflow_same_padding():
    net = build("pgdl_nin", n_classes=5, in_channels=3, image_size=16, width=6, blocks=2, batch_norm=False)
    pads = [m for m in net if isinstance(m, torch.nn.ZeroPad2d)]
    assert len(pads) == 1 and tuple(pads[0].padding) == (0, 1, 0, 1)  # stride 2 on 16 pixels: 0 before, 1 after
    convs = [m for m in net if isinstance(m, torch.nn.Conv2d)]
    assert [c.kernel_size for c in convs] == [(3, 3), (1, 1), (1, 1), (3, 3), (1, 1), (1, 1), (1, 1)]
    assert [c.stride for c in convs][3] == (2, 2)
    x = torch.randn(2, 3, 16, 16)
    out = net[:13](x)  # through the second block's last ReLU
    assert out.shape == (2, 6, 8, 8)
    assert net(x).shape == (2, 5)
    assert isinstance(net[-2], torch.nn.AdaptiveAvgPool2d)
    odd = build("pgdl_nin", n_classes=5, in_channels=3, image_size=15, width=6, blocks=2)
    assert not any(isinstance(m, torch.nn.ZeroPad2d) for m in odd)  # 15 pixels: 1 before, 1 after
    assert odd(torch.randn(2, 3, 15, 15)).shape == (2, 5)


def test_allconv_with_and_without_batch_norm():
    with_bn = build("pgdl_allconv", n_classes=4, in_channels=1, image_size=8, width=4, depth=4, batch_norm=True)
    without = build("pgdl_allconv", n_classes=4, in_channels=1, image_size=8, width=4, depth=4, batch_norm=False)
    assert sum(isinstance(m, torch.nn.BatchNorm2d) for m in with_bn) == 4
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in without)
    assert [m.out_channels for m in without if isinstance(m, torch.nn.Conv2d)] == [4, 4, 8, 8, 4]
    assert with_bn(torch.zeros(2, 1, 8, 8)).shape == (2, 4)
    assert not any(isinstance(m, torch.nn.Linear) for m in without)  # fully convolutional


def test_bad_arguments():
    with pytest.raises(InputError, match="`width` must be a positive integer"):
        build("pgdl_vgg", n_classes=10, width=0)
    with pytest.raises(InputError, match=r"`dropout` must be in \[0, 1\); got 1"):
        build("pgdl_nin", n_classes=10, dropout=1.0)
    with pytest.raises(InputError, match="below 1 pixel"):
        build("pgdl_vgg", n_classes=10, image_size=4, blocks=3)
    with pytest.raises(InputError, match="`image_size`"):
        build("pgdl_allconv", n_classes=10, image_size=[8, 8, 8])
