"""Loading and validating .npz datasets: round trip and every failure message."""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.data.io import load_npz, read_npz, save_npz, validate_dataset


@pytest.fixture
def images() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.uniform(size=(6, 3, 4, 4)).astype(np.float32), np.array([0, 1, 2, 0, 1, 2])


def test_round_trip(tmp_path, images):
    x, y = images
    path = save_npz(tmp_path / "d", x, y)
    assert path.name == "d.npz"
    loaded_x, loaded_y = load_npz(path, n_classes=3, image=True)
    np.testing.assert_array_equal(loaded_x, x)
    assert loaded_x.dtype == np.float32
    np.testing.assert_array_equal(loaded_y, y)
    assert loaded_y.dtype == np.int64


def test_integer_features_become_float_and_float_labels_are_accepted():
    x, y = validate_dataset(np.arange(6).reshape(3, 2), np.array([0.0, 1.0, 1.0]))
    assert x.dtype == np.float64 and y.dtype == np.int64
    np.testing.assert_array_equal(y, [0, 1, 1])


def test_class_count_bounds_the_labels(tmp_path):
    path = save_npz(tmp_path / "d.npz", np.zeros((3, 2)), [0, 1, 2])
    with pytest.raises(InputError, match=r"`data\['y'\]` holds label 2 but the model has 2 classes"):
        load_npz(path, n_classes=2)
    assert load_npz(path, n_classes=3)[1].tolist() == [0, 1, 2]


@pytest.mark.parametrize(
    ("x", "y", "kwargs", "message"),
    [
        (np.zeros((0, 2)), np.zeros(0, int), {}, "`x` is empty: it has 0 examples"),
        (np.zeros(4), np.zeros(4, int), {}, r"`x` must have one row per example, shape \(m, d\)"),
        (np.array([["a", "b"]]), [0], {}, "`x` must hold real numbers; got dtype <U1"),
        (np.ones((2, 2), complex), [0, 1], {}, "`x` must hold real numbers; got dtype complex128"),
        (np.array([[0.0, np.nan], [1.0, 1.0], [np.inf, 0.0]]), [0, 1, 0], {},
         "`x` must be finite; 2 example\\(s\\) hold NaN or infinite values"),
        (np.zeros((3, 2)), [0, 1], {}, "`x` has 3 examples but `y` has 2 labels"),
        (np.zeros((2, 2)), [[0], [1]], {}, r"`y` must be a 1-d array of labels; got shape \(2, 1\)"),
        (np.zeros((2, 2)), [0.5, 1.0], {}, "`y` must hold integer class labels; got non-integer values"),
        (np.zeros((2, 2)), ["a", "b"], {}, "`y` must hold integer class labels; got dtype <U1"),
        (np.zeros((2, 2)), [0, -1], {}, "`y` must be non-negative class indices; got -1"),
        (np.zeros((2, 2)), [0, 5], {"n_classes": 3},
         r"`y` holds label 5 but the model has 3 classes \(labels must be in \[0, 2\]\)"),
        (np.zeros((2, 2)), [0, 1], {"n_classes": 1}, "`n_classes` must be an integer >= 2; got 1"),
        (np.zeros((2, 4, 4)), [0, 1], {"image": True}, r"`x` must be a batch of images of shape \(m, C, H, W\)"),
        (np.zeros((2, 8, 8, 3)), [0, 1], {"image": True}, "`x` looks channels-last"),
        (np.zeros((2, 1, 4, 4), np.uint8), [0, 1], {"image": True}, "for 8-bit images use x / 255"),
        (np.full((2, 1, 4, 4), 2.0), [0, 1], {"image": True}, r"image values in \[0, 1\]; got values in \[2, 2\]"),
    ],
)
def test_validation_messages(x, y, kwargs, message):
    with pytest.raises(InputError, match=message):
        validate_dataset(x, y, **kwargs)


def test_file_errors(tmp_path):
    with pytest.raises(InputError, match="`data`: file '.*missing.npz' does not exist"):
        load_npz(tmp_path / "missing.npz")
    np.savez(tmp_path / "only_x.npz", x=np.zeros((2, 2)), labels=np.zeros(2))
    with pytest.raises(InputError, match="`--data`: file 'only_x.npz' has no array 'y' \\(it has: x, labels\\)"):
        load_npz(tmp_path / "only_x.npz", name="--data")
    np.save(tmp_path / "single.npy", np.zeros(3))
    with pytest.raises(InputError, match="holds a single array; save x and y together"):
        read_npz(tmp_path / "single.npy")
    np.savez(tmp_path / "objects.npz", x=np.array([{"a": 1}, None], dtype=object), y=np.zeros(2))
    with pytest.raises(InputError, match="array 'x' in 'objects.npz' is an object array"):
        load_npz(tmp_path / "objects.npz")
    (tmp_path / "junk.npz").write_bytes(b"this is not a zip file at all")
    with pytest.raises(InputError, match="`data`: '.*junk.npz' is not a .npz archive \\(it does not start with the zip"):
        load_npz(tmp_path / "junk.npz")
    (tmp_path / "random.npz").write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(InputError, match="'.*random.npz' is not a .npz archive") as caught:
        load_npz(tmp_path / "random.npz")
    assert "pickle" not in str(caught.value)
    (tmp_path / "empty.npz").write_bytes(b"")
    with pytest.raises(InputError, match=r"`--data`: '.*empty.npz' is empty \(0 bytes\); expected a .npz archive"):
        load_npz(tmp_path / "empty.npz", name="--data")
    (tmp_path / "cut.npz").write_bytes(b"PK\x03\x04" + b"\x00" * 10)
    with pytest.raises(InputError, match="'.*cut.npz' is not a readable .npz archive"):
        load_npz(tmp_path / "cut.npz")
    with pytest.raises(InputError, match="`data`: '.*' is a folder; expected a .npz file"):
        load_npz(tmp_path)
    np.savez(tmp_path / "nan.npz", x=np.array([[np.nan, 0.0]]), y=np.array([0]))
    with pytest.raises(InputError, match=r"`data\['x'\]` must be finite"):
        load_npz(tmp_path / "nan.npz")


def test_read_margin_and_centre_crop(tmp_path):
    from fitaudit.data.io import centre_crop, read_margin

    x, y = np.zeros((2, 1, 8, 10), dtype=np.float32), np.array([0, 1])
    np.savez(tmp_path / "plain.npz", x=x, y=y)
    np.savez(tmp_path / "canvas.npz", x=x, y=y, margin=np.int64(2))
    np.savez(tmp_path / "bad.npz", x=x, y=y, margin=np.array([1, 2]))
    assert read_margin(tmp_path / "plain.npz") == 0 and read_margin(tmp_path / "canvas.npz") == 2
    with pytest.raises(InputError, match=r"`--data`: array 'margin' must be one integer >= 0"):
        read_margin(tmp_path / "bad.npz", name="--data")
    x[:, :, 2:6, 2:8] = 1.0
    assert centre_crop(x, 2).shape == (2, 1, 4, 6) and centre_crop(x, 2).min() == 1.0
