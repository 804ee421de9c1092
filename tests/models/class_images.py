"""Image folders for model-format tests: colour images whose brightness depends on the class."""

from __future__ import annotations

import numpy as np


def write_class_folders(root, classes, *, seed, per_class=4, sides=(20, 26), spread=50.0):
    """``root/<class>/<i>.png``: class ``k``'s pixels around ``60 + 60 k``, sides drawn in ``sides``; returns ``root``.

    A model that scores brightness then predicts several classes, so a wrong
    pipeline changes its predictions.
    """
    from PIL import Image

    rng = np.random.default_rng(seed)
    for k, name in enumerate(classes):
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            shape = (int(rng.integers(*sides)), int(rng.integers(*sides)), 3)
            pixels = np.clip(rng.normal(60 + 60 * k, spread, shape), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / name / f"{i}.png")
    return root
