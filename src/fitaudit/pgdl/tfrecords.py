"""TFRecord shards of serialised tensors, read and written without TensorFlow.

The PGDL competition stores each task's data as
``dataset_1/{train,test}/shard_*.tfrecord``: TFRecord files whose records
are ``tf.train.Example`` protocol buffers with two bytes features,
``inputs`` (``tf.io.serialize_tensor`` of a float32 image, height x width x
channels) and ``output`` (``tf.io.serialize_tensor`` of an int32 scalar
label); the competition's data manager reads them back with
``tf.io.parse_tensor``.

Three layers of encoding, each implemented here:

* TFRecord framing: per record ``uint64`` length (little endian), masked
  CRC-32C of the length, the payload, masked CRC-32C of the payload. Both
  checksums are verified, so a truncated or corrupted shard is an error
  naming the file and the record, never garbage data.
* ``tf.train.Example``: parsed and written with the ``tfrecord`` package's
  generated protobuf class.
* ``TensorProto`` (tensorflow/core/framework/tensor.proto): a tiny protobuf
  decoded and encoded by hand. ``tf.io.serialize_tensor`` writes ``dtype``
  (field 1), ``tensor_shape`` (field 2: repeated ``dim`` messages, field 2,
  each with ``size``, field 1) and the raw little-endian bytes in
  ``tensor_content`` (field 4); the typed repeated fields (``float_val``,
  ``int_val``, ...) that other writers use are read too.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional

#: TensorFlow DataType enum values (types.proto) and their numpy dtypes
_DTYPES: dict[int, np.dtype[Any]] = {
    1: np.dtype("<f4"),  # DT_FLOAT
    2: np.dtype("<f8"),  # DT_DOUBLE
    3: np.dtype("<i4"),  # DT_INT32
    4: np.dtype("u1"),  # DT_UINT8
    5: np.dtype("<i2"),  # DT_INT16
    6: np.dtype("i1"),  # DT_INT8
    9: np.dtype("<i8"),  # DT_INT64
    10: np.dtype("?"),  # DT_BOOL
    19: np.dtype("<f2"),  # DT_HALF
}
_CODES = {dtype: code for code, dtype in _DTYPES.items()}

_MASK_DELTA = 0xA282EAD8


# ----------------------------------------------------------------- protobuf wire format
def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _write_varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _fields(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of every field of one protobuf message."""
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _read_varint(data, pos)
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 2:
            length, pos = _read_varint(data, pos)
            value, pos = data[pos : pos + length], pos + length
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > len(data):
            raise ValueError("truncated field")
        yield number, wire, value


def _field(number: int, wire: int, payload: bytes | int) -> bytes:
    key = _write_varint(number << 3 | wire)
    if wire == 0:
        assert isinstance(payload, int)
        return key + _write_varint(payload)
    assert isinstance(payload, bytes)
    return key + _write_varint(len(payload)) + payload


# ----------------------------------------------------------------- TensorProto
def serialize_tensor(array: Any) -> bytes:
    """The bytes ``tf.io.serialize_tensor`` writes for ``array``.

    ``dtype``, ``tensor_shape`` (present even for a scalar) and the values
    as little-endian ``tensor_content``.
    """
    values = np.asarray(array)
    dtype = values.dtype.newbyteorder("<") if values.dtype.byteorder == ">" else values.dtype
    if dtype not in _CODES:
        raise InputError(f"`array` must have a numeric dtype TensorFlow knows; got {values.dtype}.")
    shape = b"".join(_field(2, 2, _field(1, 0, int(d)) if d else b"") for d in values.shape)
    content = np.ascontiguousarray(values, dtype=dtype).tobytes()
    return _field(1, 0, _CODES[dtype]) + _field(2, 2, shape) + (_field(4, 2, content) if content else b"")


def _typed_values(number: int, wire: int, value: Any) -> list[float | int]:
    """Values of the repeated typed fields of a TensorProto (packed or not)."""
    if number in (5, 6):  # float_val, double_val
        fmt, size = ("<f", 4) if number == 5 else ("<d", 8)
        raw = value if wire == 2 else bytes(value)
        return [v[0] for v in struct.iter_unpack(fmt, raw[: len(raw) // size * size])]
    # int_val (7), int64_val (10), bool_val (11), half_val (13): varints
    if wire == 0:
        return [value]
    out: list[float | int] = []
    pos = 0
    while pos < len(value):
        item, pos = _read_varint(value, pos)
        out.append(item)
    return out


def parse_tensor(data: bytes, *, where: str = "tensor") -> np.ndarray:
    """Decode a serialised ``TensorProto`` (``tf.io.parse_tensor`` without TensorFlow).

    Parameters
    ----------
    data : bytes
    where : str
        Named in error messages (the file and the feature).
    """
    dtype_code, dims, content = None, [], None
    values: list[float | int] = []
    try:
        for number, wire, value in _fields(bytes(data)):
            if number == 1 and wire == 0:
                dtype_code = value
            elif number == 2 and wire == 2:
                for dim_number, dim_wire, dim in _fields(value):
                    if dim_number == 2 and dim_wire == 2:
                        size = [v for n, w, v in _fields(dim) if n == 1 and w == 0]
                        dims.append(size[0] if size else 0)
                    elif dim_number == 3 and dim != 0:
                        raise ValueError("a tensor of unknown rank")
            elif number == 4 and wire == 2:
                content = value
            elif number in (5, 6, 7, 10, 11, 13):
                values.extend(_typed_values(number, wire, value))
    except (ValueError, IndexError) as exc:
        raise InputError(f"{where}: not a serialised TensorProto ({exc}).") from exc
    if dtype_code not in _DTYPES:
        raise InputError(f"{where}: unsupported or missing TensorProto dtype {dtype_code!r}.")
    dtype = _DTYPES[dtype_code]
    count = int(np.prod(dims)) if dims else 1
    if content is not None:
        if len(content) != count * dtype.itemsize:
            raise InputError(
                f"{where}: tensor_content has {len(content)} bytes; shape {tuple(dims)} of {dtype} "
                f"needs {count * dtype.itemsize}."
            )
        return np.frombuffer(content, dtype=dtype).reshape(dims).astype(dtype.newbyteorder("="))
    if dtype_code == 19:  # half_val holds the float16 bit patterns
        typed = np.asarray(values, dtype=np.uint16).view(np.float16)
    else:
        typed = np.asarray(values, dtype=dtype.newbyteorder("="))
    if typed.size == count:
        return typed.reshape(dims)
    if typed.size == 1 or (typed.size == 0 and count == 0):  # TF fills with the one value given
        return np.full(dims, typed[0] if typed.size else 0, dtype=typed.dtype)
    raise InputError(f"{where}: {typed.size} values for a tensor of shape {tuple(dims)}.")


# ----------------------------------------------------------------- TFRecord framing
def _masked_crc(data: bytes) -> int:
    crc32c = import_optional("crc32c", "reading or writing TFRecord files")
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def read_records(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """Payloads of the TFRecord file ``path``, checksums verified."""
    target = Path(path)
    if not target.is_file():
        raise InputError(f"TFRecord file {str(target)!r} does not exist.")
    data = target.read_bytes()
    pos, index = 0, 0
    while pos < len(data):
        if pos + 12 > len(data):
            raise InputError(f"{str(target)!r}: record {index} is truncated (a corrupt TFRecord file).")
        header = data[pos : pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8 : pos + 12])
        if _masked_crc(header) != length_crc:
            raise InputError(f"{str(target)!r}: record {index} has a bad length checksum (a corrupt TFRecord file).")
        start, end = pos + 12, pos + 12 + length
        if end + 4 > len(data):
            raise InputError(f"{str(target)!r}: record {index} is truncated (a corrupt TFRecord file).")
        payload = data[start:end]
        (payload_crc,) = struct.unpack("<I", data[end : end + 4])
        if _masked_crc(payload) != payload_crc:
            raise InputError(f"{str(target)!r}: record {index} has a bad data checksum (a corrupt TFRecord file).")
        yield payload
        pos, index = end + 4, index + 1


def write_records(path: str | os.PathLike[str], payloads: list[bytes]) -> Path:
    """Write ``payloads`` as a TFRecord file (atomically)."""
    from fitaudit.checkpoint import atomic_write_bytes

    chunks = []
    for payload in payloads:
        header = struct.pack("<Q", len(payload))
        chunks += [header, struct.pack("<I", _masked_crc(header)), payload, struct.pack("<I", _masked_crc(payload))]
    return atomic_write_bytes(path, b"".join(chunks))


# ----------------------------------------------------------------- PGDL examples
def _example_class() -> Any:
    return import_optional("tfrecord.example_pb2", "reading or writing PGDL data").Example


def read_examples(path: str | os.PathLike[str]) -> tuple[np.ndarray, np.ndarray]:
    """The (inputs, outputs) of one PGDL shard, as stored (inputs channels-last).

    Returns
    -------
    x : ndarray of float32, shape (n, ...)
    y : ndarray of int64, shape (n,)
    """
    example_cls = _example_class()
    xs: list[np.ndarray] = []
    ys: list[int] = []
    for index, payload in enumerate(read_records(path)):
        example = example_cls()
        try:
            example.ParseFromString(payload)
        except Exception as exc:  # protobuf's DecodeError
            raise InputError(f"{os.fspath(path)!r}: record {index} is not a tf.train.Example ({exc}).") from exc
        features = example.features.feature
        for name in ("inputs", "output"):
            if name not in features or len(features[name].bytes_list.value) != 1:
                raise InputError(
                    f"{os.fspath(path)!r}: record {index} lacks the bytes feature {name!r} "
                    f"(found {sorted(features)})."
                )
        where = f"{os.fspath(path)!r} record {index}"
        x = parse_tensor(features["inputs"].bytes_list.value[0], where=f"{where}, feature 'inputs'")
        y = parse_tensor(features["output"].bytes_list.value[0], where=f"{where}, feature 'output'")
        if y.size != 1 or y.dtype.kind not in "iu":
            raise InputError(f"{where}, feature 'output': expected one integer label; got {y.dtype} of shape {y.shape}.")
        if xs and x.shape != xs[0].shape:
            raise InputError(f"{where}, feature 'inputs': shape {x.shape} differs from the first record's {xs[0].shape}.")
        xs.append(x.astype(np.float32, copy=False))
        ys.append(int(y.reshape(())))
    if not xs:
        return np.zeros((0,), dtype=np.float32), np.zeros((0,), dtype=np.int64)
    return np.stack(xs), np.asarray(ys, dtype=np.int64)


def write_examples(path: str | os.PathLike[str], x: np.ndarray, y: np.ndarray) -> Path:
    """Write one PGDL shard: ``inputs`` float32 tensors (as given), ``output`` int32 labels."""
    example_cls = _example_class()
    payloads = []
    for inputs, label in zip(x, y):
        example = example_cls()
        features = example.features.feature
        features["inputs"].bytes_list.value.append(serialize_tensor(np.asarray(inputs, dtype=np.float32)))
        features["output"].bytes_list.value.append(serialize_tensor(np.int32(label)))
        payloads.append(example.SerializeToString())
    return write_records(path, payloads)
