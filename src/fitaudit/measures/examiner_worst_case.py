"""The adversarial examiner's worst case over image transformations of training images (fitaudit)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit._validation import check_int
from fitaudit.data.factors import Factor, FactorSpace
from fitaudit.measures import _torch as T
from fitaudit.measures._winners import require_images
from fitaudit.measures.base import Measure, ModelRecord
from fitaudit.models.torch_ops import as_tensor, device_of
from fitaudit.random import check_random_state

#: the examined factors: shifts in pixels, brightness in units of the data's range, contrast factor
FACTORS = FactorSpace(
    [
        Factor(
            "shift_x", -2.0, 2.0, 0.0, "px", description="horizontal shift (bilinear, zeros enter)"
        ),
        Factor(
            "shift_y", -2.0, 2.0, 0.0, "px", description="vertical shift (bilinear, zeros enter)"
        ),
        Factor(
            "brightness", -0.2, 0.2, 0.0, "range", description="added, times the data's value range"
        ),
        Factor(
            "contrast", 0.7, 1.3, 1.0, "factor", description="(x - image mean) * c + image mean"
        ),
    ]
)


def transform(images: Any, factors: np.ndarray, value_range: float) -> Any:
    """Apply each row of ``factors`` (shift_x, shift_y, brightness, contrast) to its image, where ``images`` lie.

    ``images``: a tensor (or an array, taken to the CPU) ``(n, C, H, W)``;
    returns a float32 tensor on its device.
    """
    torch = T.torch_()
    x = as_tensor(images)
    n, _, h, w = x.shape
    f = torch.as_tensor(np.asarray(factors, dtype=np.float32), device=x.device)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    x = (
        (x - mean) * f[:, 3].reshape(-1, 1, 1, 1)
        + mean
        + value_range * f[:, 2].reshape(-1, 1, 1, 1)
    )
    theta = torch.zeros(n, 2, 3, device=x.device)
    theta[:, 0, 0] = 1.0
    theta[:, 1, 1] = 1.0
    theta[:, 0, 2] = -2.0 * f[:, 0] / w  # a positive shift moves the content right
    theta[:, 1, 2] = -2.0 * f[:, 1] / h
    grid = torch.nn.functional.affine_grid(theta, list(x.shape), align_corners=False)
    return torch.nn.functional.grid_sample(
        x, grid, mode="bilinear", padding_mode="zeros", align_corners=False
    )


class TransformedImages:
    """The examined training images under :data:`FACTORS`, a generator (:mod:`fitaudit.data.generators`) on a device.

    The images go to ``device`` once; :meth:`generate_tensor` transforms
    them there, and the examiner hands the result to a model on the same
    device as it is (as it does for :class:`~fitaudit.data.transforms.ImageTransformGenerator`),
    so a query moves no image between host and device; only the logits come back.
    """

    factor_space = FACTORS

    def __init__(self, images: np.ndarray, labels: np.ndarray, value_range: float, device: Any) -> None:
        self.labels = labels
        self.value_range = value_range
        self.device = str(device)
        self._images = as_tensor(images, device)

    def generate_tensor(self, instances: np.ndarray, factors: np.ndarray) -> Any:
        """The transformed images of queries, a float32 tensor on the device."""
        torch = T.torch_()
        idx = torch.as_tensor(np.asarray(instances, dtype=np.int64), device=self._images.device)
        with torch.no_grad():
            return transform(self._images[idx], factors, self.value_range)

    def generate(self, instances: np.ndarray, factors: np.ndarray) -> np.ndarray:
        """:meth:`generate_tensor` on the host (for a model elsewhere)."""
        return np.asarray(self.generate_tensor(instances, factors).cpu().numpy())


class ExaminerWorstCase(Measure):
    """Mean over training images of the examiner's worst true-class probability loss.

    The adversarial examiner (Shu, Liu, Qiu & Yuille, AAAI 2020, Algorithm 1;
    docs/examiner.md; :func:`fitaudit.examine.examine`) searches, for each of
    ``n_instances`` random training images, the factors of a small image
    transformation -- shift of up to 2 pixels per axis, brightness +-0.2 of
    the data's value range, contrast 0.7-1.3 -- that minimise the network's
    probability of the true class, for ``steps`` steps. The measure is the
    mean over images of the worst loss found, ``-p_y`` in [-1, 0]: a
    network whose fit of its own training images breaks under small
    nuisance changes scores higher (larger predicted gap). Images only.
    The images are transformed on the model's device and scored there
    (:class:`TransformedImages`); only the logits come back.

    Parameters
    ----------
    examiner : str
        A registered examiner (``"random"``: uniform search, the cheapest;
        ``"bo"``, ``"rl"``, ...).
    steps, n_instances : int
    """

    name: ClassVar[str] = "examiner_worst_case"
    cost: ClassVar[str] = "moderate"
    family: ClassVar[str] = "fitaudit"
    reference: ClassVar[str] = (
        "Shu, Liu, Qiu & Yuille, Identifying model weakness with adversarial examiner, AAAI 2020 (fitaudit.examine)"
    )

    def __init__(
        self,
        *,
        random_state: Any = 0,
        examiner: str = "random",
        steps: int = 20,
        n_instances: int = 64,
    ) -> None:
        super().__init__(random_state=random_state)
        self.examiner = examiner
        self.steps = check_int(steps, "steps", minimum=1)
        self.n_instances = check_int(n_instances, "n_instances", minimum=1)

    def compute(self, record: ModelRecord) -> float:
        from fitaudit.examine import examine

        x, y = T.check_record_data(record, self.name)
        require_images(x, self.name)
        rng = check_random_state(self.random_state)
        idx = np.sort(rng.choice(len(x), size=min(self.n_instances, len(x)), replace=False))
        device = device_of(record.model)
        images = TransformedImages(x[idx], y[idx], float(x.max() - x.min()) or 1.0, device)
        result = examine(
            T.eval_copy(record.model),
            images,
            examiner=self.examiner,
            steps=self.steps,
            weakness=False,
            n_reference=0,
            chunk_size=None,
            random_state=int(rng.integers(0, 2**31 - 1)),
            device=str(device),  # the examiner would move its copy to the CPU
        )
        return float(np.mean(result.worst_loss))
