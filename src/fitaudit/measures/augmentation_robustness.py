"""Inconsistency under augmentations (Aithal, Kashyap & Subramanyam, PGDL second place)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit._validation import check_int
from fitaudit.measures import _torch as T
from fitaudit.measures import _winners as W
from fitaudit.measures.base import Measure, ModelRecord
from fitaudit.random import check_random_state

#: (augmentation, penalty when the predicted class changes), in the entry's order
PENALTIES: tuple[tuple[str, float], ...] = (
    ("flip", 6.0),
    ("saturation", 1.0),
    ("crop", 2.0),
    ("sobel", 3.0),
    ("brightness", 1.0),
    ("flip_saturation", 12.0),
    ("erase", 2.0),
)


def augmentations(x: Any, rng: np.random.Generator) -> dict[str, Any]:
    """The seven augmented copies of batch ``x`` (one saturation factor U[0.6, 1.6) per call, as TF)."""
    flipped = W.flip_left_right(x)
    return {
        "flip": flipped,
        "saturation": W.scale_saturation(x, float(rng.uniform(0.6, 1.6))),
        "crop": W.central_crop_resize(x, 0.9),
        "sobel": W.sobel_dx(x),
        "brightness": W.adjust_brightness(x, 0.5),
        "flip_saturation": W.scale_saturation(flipped, float(rng.uniform(0.6, 1.6))),
        "erase": W.random_erase(x, rng),
    }


def inconsistency(p_orig: Any, p_aug: Any, penalty: float) -> Any:
    """Per example (float64, where the softmaxes are): |p_max - p_max(aug)| when the predicted class is kept, else ``penalty``."""
    torch = T.torch_()
    same = p_orig.argmax(1) == p_aug.argmax(1)
    gap = (p_orig.max(1).values - p_aug.max(1).values).abs().double()
    return torch.where(same, gap, torch.full_like(gap, penalty))


class AugmentationRobustness(Measure):
    """Mean per-example inconsistency of the softmax under seven augmentations.

    Second place of the PGDL competition (Aithal, Kashyap & Subramanyam,
    "Robustness to augmentations as a generalization metric", 2021). For
    each training example (in order, batches of 64, at most 201 batches) and
    each augmentation -- horizontal flip, saturation x U[0.6, 1.6), 0.9
    centre crop resized back, horizontal Sobel edges / 4 + 0.5, brightness
    + 0.5, flip + saturation, one random erased rectangle -- add
    ``|p_max(x) - p_max(aug x)|`` if the predicted class is unchanged, else
    the augmentation's penalty (6, 1, 2, 3, 1, 12, 2). We report the mean
    over examples (the entry sums, which differs only by the constant
    number of examples within a task). Orientation: the entry's submission
    returned minus the sum; the paper's claim is that robust networks
    generalize better, so we keep the sign in which a less robust network
    scores higher (larger = larger predicted gap); the competition's CMI
    barely depends on the sign. Saturation leaves one-channel images
    unchanged (the entry converts grayscale to RGB and back).

    Each batch goes to the model's device once; the augmentations, the
    model and the softmax reductions run there, and only the per-example
    inconsistencies come back. The random draws (saturation factors,
    erased rectangles) are made by a CPU numpy generator, so a seed gives
    the same numbers on every device.
    """

    name: ClassVar[str] = "augmentation_robustness"
    formats: ClassVar[tuple[str, ...]] = ("torch", "onnx")  # reads only outputs
    cost: ClassVar[str] = "moderate"
    family: ClassVar[str] = "winners"
    reference: ClassVar[str] = (
        "Aithal, Kashyap & Subramanyam, Robustness to augmentations (PGDL 2nd place), 2021"
    )

    def __init__(
        self, *, random_state: Any = 0, batch_size: int = 64, max_batches: int = 201
    ) -> None:
        super().__init__(random_state=random_state)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.max_batches = check_int(max_batches, "max_batches", minimum=1)

    def compute(self, record: ModelRecord) -> float:
        torch = T.torch_()
        x, _ = T.check_record_data(record, self.name)
        W.require_images(x, self.name)
        rng = check_random_state(self.random_state)
        run = T.device_output_function(T.eval_copy(record.model))  # outputs only: the one inference path

        def softmax(batch: Any) -> Any:
            return torch.softmax(run(batch), dim=1)

        scores = []
        with torch.no_grad():
            for b, sl in enumerate(T.iterate_batches(len(x), self.batch_size)):
                if b == self.max_batches:
                    break
                xb = T.on_model_device(record.model, x[sl])  # the batch's one trip to the device
                p_orig = softmax(xb)
                total = torch.zeros(len(xb), dtype=torch.float64, device=xb.device)
                augmented = augmentations(xb, rng)
                for key, penalty in PENALTIES:
                    total += inconsistency(p_orig, softmax(augmented[key]), penalty)
                scores.append(T.host(total))  # only the per-example numbers come back
        return float(np.mean(np.concatenate(scores)))
