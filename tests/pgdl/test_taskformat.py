"""PGDL task format primitives: TensorProto bytes, TFRecord framing, Keras 2 HDF5 layout, layer configs."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from fitaudit._errors import InputError

h5py = pytest.importorskip("h5py")
torch = pytest.importorskip("torch")
pytest.importorskip("tfrecord")

from fitaudit.models.conversion import keras_layers  # noqa: E402
from fitaudit.pgdl import keras_hdf5, tfrecords  # noqa: E402


# ---------------------------------------------------------------- TensorProto
def test_serialize_tensor_matches_tensorflow_bytes():
    # tf.io.serialize_tensor(tf.constant(3, tf.int32)).numpy(): dtype 3, an empty
    # tensor_shape, 4 little-endian bytes of tensor_content
    assert tfrecords.serialize_tensor(np.int32(3)) == b'\x08\x03\x12\x00"\x04\x03\x00\x00\x00'
    # a float32 (2, 3) tensor: dtype 1, shape {dim {size 2} dim {size 3}}, 24 bytes
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    expected = b"\x08\x01" + b"\x12\x08" + b"\x12\x02\x08\x02" + b"\x12\x02\x08\x03" + b'"\x18' + values.tobytes()
    assert tfrecords.serialize_tensor(values) == expected


def test_parse_tensor_roundtrip_and_typed_fields():
    x = np.random.default_rng(0).normal(size=(4, 5, 3)).astype(np.float32)
    back = tfrecords.parse_tensor(tfrecords.serialize_tensor(x))
    assert back.dtype == np.float32 and np.array_equal(back, x)
    # packed float_val (field 5) instead of tensor_content, as TensorProto writers other than serialize_tensor use
    shape = b"\x12\x02\x08\x02"
    proto = b"\x08\x01" + b"\x12" + bytes([len(shape)]) + shape + b"\x2a\x08" + struct.pack("<2f", 1.5, -2.0)
    assert tfrecords.parse_tensor(proto).tolist() == [1.5, -2.0]
    # int_val (field 7) with one value fills the shape, as TensorFlow does
    proto = b"\x08\x03" + b"\x12\x04" + shape + b"\x38\x07"
    assert tfrecords.parse_tensor(proto).tolist() == [7, 7]


def test_parse_tensor_bad_bytes():
    with pytest.raises(InputError, match="tensor_content has 3 bytes"):
        tfrecords.parse_tensor(b"\x08\x03\x12\x00\x22\x03abc", where="x")
    with pytest.raises(InputError, match="dtype"):
        tfrecords.parse_tensor(b"\x08\x63\x12\x00", where="x")
    with pytest.raises(InputError, match="not a serialised TensorProto"):
        tfrecords.parse_tensor(b"\x08", where="x")


# ---------------------------------------------------------------- TFRecord
def test_tfrecord_written_is_read_by_the_tfrecord_package(tmp_path):
    from tfrecord.reader import tfrecord_loader

    rng = np.random.default_rng(1)
    x = rng.random((7, 4, 4, 3)).astype(np.float32)
    y = rng.integers(0, 10, size=7)
    path = tfrecords.write_examples(tmp_path / "shard_0.tfrecord", x, y)
    records = list(tfrecord_loader(str(path), None, {"inputs": "byte", "output": "byte"}))
    assert len(records) == 7
    for record, xi, yi in zip(records, x, y):
        assert np.array_equal(tfrecords.parse_tensor(bytes(record["inputs"])), xi)
        assert int(tfrecords.parse_tensor(bytes(record["output"]))) == yi
    x_back, y_back = tfrecords.read_examples(path)
    assert np.array_equal(x_back, x) and np.array_equal(y_back, y)


def test_corrupt_tfrecord_is_an_input_error(tmp_path):
    path = tfrecords.write_examples(tmp_path / "shard_0.tfrecord", np.zeros((2, 2, 2, 1), np.float32), [0, 1])
    data = bytearray(path.read_bytes())
    data[20] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"shard_0\.tfrecord.*record 0 .*checksum"):
        tfrecords.read_examples(path)
    clean = tfrecords.write_examples(tmp_path / "clean.tfrecord", np.zeros((2, 2, 2, 1), np.float32), [0, 1])
    clean.write_bytes(clean.read_bytes()[:-3])
    with pytest.raises(InputError, match=r"clean\.tfrecord'?: record 1 is truncated"):
        tfrecords.read_examples(clean)
    with pytest.raises(InputError, match="does not exist"):
        tfrecords.read_examples(tmp_path / "missing.tfrecord")


#: a record's frame: 8-byte length, 4-byte length checksum, the payload, 4-byte data checksum
FRAME = 12 + 4


@pytest.mark.parametrize("kept", [1, 8, 11, 12, 13, 12 + 12, 12 + 13, 12 + 13 + 3])
def test_truncated_tfrecord_names_the_cut_record(tmp_path, kept):
    """Two records, the second cut after ``kept`` of its 29 bytes (inside its length, its length checksum, its
    payload or its data checksum): the reader yields the first record, then says the second is truncated."""
    payloads = [b"first record", b"second record"]
    path = tfrecords.write_records(tmp_path / "shard_0.tfrecord", payloads)
    whole = path.read_bytes()
    first = FRAME + len(payloads[0])
    assert len(whole) == first + FRAME + len(payloads[1]) and kept < FRAME + len(payloads[1])
    path.write_bytes(whole[: first + kept])
    records = tfrecords.read_records(path)
    assert next(records) == payloads[0]
    with pytest.raises(InputError, match=r"shard_0\.tfrecord'?: record 1 is truncated \(a corrupt TFRecord file\)"):
        next(records)


def test_tfrecord_without_the_features_is_an_input_error(tmp_path):
    from tfrecord import example_pb2

    example = example_pb2.Example()
    example.features.feature["image"].bytes_list.value.append(b"x")
    path = tfrecords.write_records(tmp_path / "shard_0.tfrecord", [example.SerializeToString()])
    with pytest.raises(InputError, match="lacks the bytes feature 'inputs'"):
        tfrecords.read_examples(path)


# ---------------------------------------------------------------- HDF5
def _keras2_file(path, layers):
    """A file in Keras 2's save_weights layout, written with h5py only."""
    with h5py.File(path, "w") as f:
        f.attrs["layer_names"] = [name.encode() for name, _ in layers]
        f.attrs["backend"] = b"tensorflow"
        f.attrs["keras_version"] = b"2.3.0-tf"
        for name, weights in layers:
            g = f.create_group(name)
            g.attrs["weight_names"] = [f"{name}/{w}:0".encode() for w, _ in weights]
            for w, value in weights:
                g.create_dataset(f"{name}/{w}:0", data=value)


def test_read_weights_follows_the_keras2_layout(tmp_path):
    kernel = np.ones((3, 3, 1, 2), np.float32)
    _keras2_file(tmp_path / "w.hdf5", [("conv2d", [("kernel", kernel), ("bias", np.zeros(2, np.float32))]), ("max_pooling2d", []), ("dense", [("kernel", np.ones((4, 3), np.float32))])])
    layers = keras_hdf5.read_weights(tmp_path / "w.hdf5")
    assert [name for name, _ in layers] == ["conv2d", "dense"]  # layers without weights left out
    assert [w for w, _ in layers[0][1]] == ["conv2d/kernel:0", "conv2d/bias:0"]
    assert np.array_equal(layers[0][1][0][1], kernel)


def test_write_weights_layout(tmp_path):
    keras_hdf5.write_weights(tmp_path / "w.hdf5", [("dense", [("dense/kernel:0", np.eye(2, dtype=np.float32))]), ("dropout", [])])
    with h5py.File(tmp_path / "w.hdf5", "r") as f:
        assert [n.decode() for n in f.attrs["layer_names"]] == ["dense", "dropout"]
        assert [n.decode() for n in f["dense"].attrs["weight_names"]] == ["dense/kernel:0"]
        assert np.array_equal(f["dense/dense/kernel:0"][()], np.eye(2))
        assert len(f["dropout"].attrs["weight_names"]) == 0


def test_write_weights_is_atomic_with_a_private_temporary(tmp_path):
    target = tmp_path / "w.hdf5"
    keras_hdf5.write_weights(target, [("dense", [("dense/kernel:0", np.eye(2, dtype=np.float32))])])
    stale = tmp_path / ".w.hdf5.tmp"  # what an older writer (or another process) may have left
    stale.write_bytes(b"someone else's temporary")
    with pytest.raises(TypeError):  # fails while writing: the old file stays whole, no temporary left
        keras_hdf5.write_weights(target, [("dense", [("dense/kernel:0", np.array([object()]))])])
    assert sorted(p.name for p in tmp_path.iterdir()) == [".w.hdf5.tmp", "w.hdf5"]
    assert stale.read_bytes() == b"someone else's temporary"
    assert np.array_equal(keras_hdf5.read_weights(target)[0][1][0][1], np.eye(2))


def test_corrupt_or_foreign_hdf5_is_an_input_error(tmp_path):
    (tmp_path / "junk.hdf5").write_bytes(b"not an hdf5 file at all")
    with pytest.raises(InputError, match=r"junk\.hdf5.*not a readable HDF5 file"):
        keras_hdf5.read_weights(tmp_path / "junk.hdf5")
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f.create_dataset("x", data=[1])
    with pytest.raises(InputError, match=r"other\.h5.*'layer_names' is missing"):
        keras_hdf5.read_weights(tmp_path / "other.h5")
    with pytest.raises(InputError, match="does not exist"):
        keras_hdf5.read_weights(tmp_path / "missing.hdf5")


# ---------------------------------------------------------------- layer configs
def test_layer_names_follow_keras2_defaults():
    config = [
        {"layer_name": "Conv2D", "filters": 2, "kernel_size": 3},
        {"layer_name": "ReLU"},
        {"layer_name": "Conv2D", "filters": 2, "kernel_size": 3},
        {"layer_name": "MaxPooling2D"},
        {"layer_name": "GlobalAveragePooling2D"},
        {"layer_name": "BatchNormalization"},
        {"layer_name": "Dense", "units": 3.0},  # integral floats become ints, as the competition's loader does
    ]
    net = keras_layers.build_torch(config, [9, 9, 1])
    assert net.layer_names == ["conv2d", "re_lu", "conv2d_1", "max_pooling2d", "global_average_pooling2d", "batch_normalization", "dense"]
    assert net.input_shape == (1, 9, 9)
    assert net.module(torch.zeros(2, 1, 9, 9)).shape == (2, 3)


def test_same_padding_follows_tensorflow():
    # stride 2 on an even size: TensorFlow pads 0 before and 1 after
    net = keras_layers.build_torch([{"layer_name": "Conv2D", "filters": 1, "kernel_size": [3, 3], "strides": [2, 2], "padding": "same"}], [8, 8, 1])
    pad, conv = list(net.module)
    assert isinstance(pad, torch.nn.ZeroPad2d) and tuple(pad.padding) == (0, 1, 0, 1)
    assert conv.padding == (0, 0)
    # stride 1 with an odd kernel: symmetric, kept inside the convolution
    net = keras_layers.build_torch([{"layer_name": "Conv2D", "filters": 1, "kernel_size": 5, "padding": "same"}], [8, 8, 1])
    assert len(net.module) == 1 and net.module[0].padding == (2, 2)


def test_activations_become_layers():
    config = [{"layer_name": "Flatten"}, {"layer_name": "Dense", "units": 4, "activation": "relu"}, {"layer_name": "Dense", "units": 2, "activation": "softmax"}]
    net = keras_layers.build_torch(config, [6])
    kinds = [type(m).__name__ for m in net.module]
    assert kinds == ["Flatten", "Linear", "ReLU", "Linear", "Softmax"]


def test_unknown_layer_type_is_refused_by_name():
    with pytest.raises(InputError, match=r"layer 1 has layer_name 'LSTM', a layer type fitaudit cannot load"):
        keras_layers.build_torch([{"layer_name": "Flatten"}, {"layer_name": "LSTM", "units": 3}], [4])
    with pytest.raises(InputError, match=r"layer 0 \(Conv2D\) has arguments fitaudit does not support: depth_multiplier"):
        keras_layers.build_torch([{"layer_name": "Conv2D", "filters": 2, "kernel_size": 3, "depth_multiplier": 2}], [5, 5, 1])
    with pytest.raises(InputError, match="activation 'mish'"):
        keras_layers.build_torch([{"layer_name": "Dense", "units": 2, "activation": "mish"}], [4])
    with pytest.raises(InputError, match="needs a flat input"):
        keras_layers.build_torch([{"layer_name": "Dense", "units": 2}], [4, 4, 1])
    with pytest.raises(InputError, match="'input_shape'"):
        keras_layers.build_torch([{"layer_name": "Flatten"}], [4, 4])


def test_weights_of_the_wrong_shape_or_count_are_named(tmp_path):
    config = [{"layer_name": "Conv2D", "filters": 2, "kernel_size": 3}, {"layer_name": "Flatten"}, {"layer_name": "Dense", "units": 3}]
    net = keras_layers.build_torch(config, [5, 5, 1])
    _keras2_file(tmp_path / "w.hdf5", [("conv2d", [("kernel", np.zeros((3, 3, 1, 4), np.float32)), ("bias", np.zeros(4, np.float32))]), ("dense", [("kernel", np.zeros((18, 3), np.float32)), ("bias", np.zeros(3, np.float32))])])
    with pytest.raises(InputError, match=r"layer 'conv2d' weight 'kernel' has shape \(3, 3, 1, 4\); config layer 0 \(Conv2D\) needs \(3, 3, 1, 2\)"):
        keras_layers.assign_keras_weights(net, keras_hdf5.read_weights(tmp_path / "w.hdf5"), where="w.hdf5")
    _keras2_file(tmp_path / "w.hdf5", [("dense", [("kernel", np.zeros((18, 3), np.float32))])])
    with pytest.raises(InputError, match="holds weights for 1 layers; the model config has 2"):
        keras_layers.assign_keras_weights(net, keras_hdf5.read_weights(tmp_path / "w.hdf5"), where="w.hdf5")


def test_full_model_save_layout_is_read(tmp_path):
    """``model.save('x.h5')`` keeps the same tree under ``model_weights``."""
    with h5py.File(tmp_path / "model.h5", "w") as f:
        group = f.create_group("model_weights")
        group.attrs["layer_names"] = [b"dense"]
        layer = group.create_group("dense")
        layer.attrs["weight_names"] = [b"dense/kernel:0", b"dense/bias:0"]
        layer.create_dataset("dense/kernel:0", data=np.full((2, 3), 0.5, np.float32))
        layer.create_dataset("dense/bias:0", data=np.arange(3, dtype=np.float32))
    net = keras_layers.build_torch([{"layer_name": "Dense", "units": 3}], [2])
    keras_layers.assign_keras_weights(net, keras_hdf5.read_weights(tmp_path / "model.h5"), where="model.h5")
    assert net.module(torch.ones(1, 2)).tolist() == [[1.0, 2.0, 3.0]]


def test_writer_refuses_what_keras_cannot_express(tmp_path):
    from fitaudit.pgdl import TaskModel, write_task

    data = (np.zeros((4, 3), np.float32), np.array([0, 1, 0, 1]))
    odd = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Hardswish())
    member = TaskModel("1", odd, {"a": 1, "b": 2, "c": 3}, {"train_acc": 1.0, "test_acc": 0.5})
    with pytest.raises(InputError, match="layer 1 is a Hardswish, which fitaudit cannot express as a Keras layer config"):
        write_task(tmp_path / "t", [member], data)
    good = TaskModel("1", torch.nn.Sequential(torch.nn.Linear(3, 2)), {"a": 1, "b": 2}, {"train_acc": 1.0, "test_acc": 0.5})
    other = TaskModel("2", torch.nn.Sequential(torch.nn.Linear(3, 2)), {"a": 1, "c": 2}, {"train_acc": 1.0, "test_acc": 0.5})
    with pytest.raises(InputError, match=r"model '2' has hyperparameters \['a', 'c'\]; the first has \['a', 'b'\]"):
        write_task(tmp_path / "t", [good, other], data)
    with pytest.raises(InputError, match="distinct model ids"):
        write_task(tmp_path / "t", [good, good], data)
    with pytest.raises(InputError, match="`train` must be x of shape"):
        write_task(tmp_path / "t", [good], (np.zeros((4, 3)), np.zeros(5, int)))


def test_rewriting_a_task_replaces_its_data_and_refuses_foreign_models(tmp_path):
    from fitaudit.pgdl import TaskModel, load_task, write_task

    member = TaskModel("1", torch.nn.Sequential(torch.nn.Linear(3, 2)), {"a": 1}, {"train_acc": 1.0, "test_acc": 0.5})
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    write_task(tmp_path / "t", [member], (x, np.arange(10) % 2), shard_size=2)
    write_task(tmp_path / "t", [member], (x[:3], np.arange(3) % 2), shard_size=2)
    assert np.array_equal(load_task(tmp_path / "t").train_data()[0], x[:3])  # no stale shards from the first write
    (tmp_path / "t" / "model_7").mkdir()
    with pytest.raises(InputError, match=r"already holds other models \(model_7\)"):
        write_task(tmp_path / "t", [member], (x, np.arange(10) % 2))
