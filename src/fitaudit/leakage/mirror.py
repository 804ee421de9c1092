"""Whether training images are mirror-symmetric by nature, so that flips are not searched.

The augmented-copy search (:mod:`fitaudit.leakage.image_search`) looks for
twins under a horizontal flip only where the data is not symmetric by
nature: :func:`mirror_share` measures how many training images are twins of
their own mirror image, and at :data:`fitaudit.leakage.edits.MIRROR_SHARE`
or more flips are left out (a class that looks the same mirrored would
otherwise pair every image with its own flipped neighbours).
"""

from __future__ import annotations

import numpy as np

from fitaudit.leakage import edits
from fitaudit.leakage.image_search import RELATIVE_THRESHOLD, nearest_twins, relative_distances
from fitaudit.leakage.image_space import ImageFeatures, pair_distances, shifted_views


def mirror_share(train: ImageFeatures, rows: np.ndarray, floor: float) -> float:
    """Share of the training images ``rows`` that are twins of their own mirror image (:mod:`fitaudit.leakage.edits`).

    Image i is a twin of its mirror image when d of the flipped image to
    itself is at most :data:`RELATIVE_THRESHOLD` times d to its nearest
    other training image (the ratio test of :func:`~fitaudit.leakage.image_search.relative_distances`,
    its own mirror image in the place of the nearest). On mirror-symmetric
    data (a class that looks the same mirrored) the share is high and flips
    are not searched (:data:`fitaudit.leakage.edits.MIRROR_SHARE`).
    """
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) == 0:
        return 0.0
    subset = ImageFeatures(train.hashes[rows], train.work[rows], train.shape)  # d only: no fine images, no blocks
    native = (train.shape[-2], train.shape[-1])
    flipped = shifted_views(edits.apply(subset.work, edits.FLIP), native)
    own = pair_distances(flipped, subset.raw_views[:, None], floor, native)[:, 0]
    other, _ = nearest_twins(subset, train, floor=floor, query_index=rows, step="mirror")
    return float(np.mean(relative_distances(own, other) <= RELATIVE_THRESHOLD))


