"""The pixel residual e (fitaudit.leakage.residual) as a plain loop: the tests' reference."""

from __future__ import annotations

import numpy as np


def naive_residuals(queries: np.ndarray, reference: np.ndarray, candidates: np.ndarray, lag: int,
                    max_gain: float) -> np.ndarray:
    """e of each query to its candidates (-1: none, ``inf``), one shift at a time, straight from the formula:
    the least-squares gain (clipped to [1/G, G]) and offset over the overlap, root mean square residual."""
    out = np.full(candidates.shape, np.inf)
    height, width = queries.shape[-2:]
    for i, row in enumerate(candidates):
        for j, c in enumerate(row):
            if c < 0:
                continue
            best = np.inf
            for dy in range(-lag, lag + 1):
                for dx in range(-lag, lag + 1):
                    x = queries[i, max(dy, 0) : height + min(dy, 0), max(dx, 0) : width + min(dx, 0)]
                    y = reference[c, max(-dy, 0) : height + min(-dy, 0), max(-dx, 0) : width + min(-dx, 0)]
                    x, y = x.astype(np.float64).ravel(), y.astype(np.float64).ravel()
                    xc, yc = x - x.mean(), y - y.mean()
                    gain = np.clip(xc @ yc / (yc @ yc) if yc @ yc > 0 else 1.0, 1 / max_gain, max_gain)
                    best = min(best, float(np.sqrt(np.mean((xc - gain * yc) ** 2))))
            out[i, j] = best
    return out
