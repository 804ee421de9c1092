"""The overfitting test's adversarial-minus-plain risk on the training set, as a complexity measure (fitaudit)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit._validation import check_int
from fitaudit.measures import _torch as T
from fitaudit.measures._winners import require_images
from fitaudit.measures.base import Measure, ModelRecord
from fitaudit.models.torch_ops import device_of
from fitaudit.random import check_random_state


def aeg_crop(canvases: np.ndarray, pad: int) -> np.ndarray:
    """The centre crops of the canvases (what the model scores)."""
    return canvases[..., pad : canvases.shape[-2] - pad, pad : canvases.shape[-1] - pad]


def rescaled(model: Any, channels: int, lo: float, span: float) -> Any:
    """``u -> model(lo + span * u)``: a per-channel 1x1 affine convolution in front of ``model``."""
    torch = T.torch_()
    affine = torch.nn.Conv2d(channels, channels, 1, groups=channels)
    with torch.no_grad():
        affine.weight.fill_(span)
        affine.bias.fill_(lo)
    return torch.nn.Sequential(affine.to(device_of(model)), model).eval()


class AdversarialGap(Measure):
    """R_g - R_S on the training set with the translational AEG (strongest, shifts up to ``eps``).

    Werpachowski, Gyorgy & Szepesvari, "Detecting overfitting via
    adversarial examples" (NeurIPS 2019, Sec. 2-3; docs/overfit.md#two-estimates-of-the-risk): the
    importance-weighted adversarial risk ``R_g = (1/m) sum_i L(f, g(X_i))
    h_g(g(X_i))`` is unbiased for the true risk when the model does not
    depend on the sample, while the plain risk ``R_S`` is not; on the
    *training* set their difference estimates how much the training error
    understates the risk -- the generalization gap. Larger = larger gap.

    The PGDL models take their images without spare margin, so the
    training images are zero-padded by ``3 eps`` pixels into canvases (the
    AEG needs predictions at shifts up to ``3 eps``); shifted crops then
    bring in zeros. Canvases are mapped affinely to [0, 1] for the AEG (the
    model sees the original values). That breaks the test's (G3) (translation must preserve
    the density), so this is a measure, not a valid test: its p-value would
    mean nothing. Vector inputs have no translations: refused.

    Parameters
    ----------
    eps : int
        Largest shift per axis.
    max_examples : int or None
        Random training subset evaluated (None: all).
    """

    name: ClassVar[str] = "adversarial_gap"
    cost: ClassVar[str] = "moderate"
    family: ClassVar[str] = "fitaudit"
    reference: ClassVar[str] = (
        "Werpachowski, Gyorgy & Szepesvari, Detecting overfitting via adversarial examples, NeurIPS 2019 (fitaudit.overfit)"
    )

    def __init__(
        self, *, random_state: Any = 0, eps: int = 1, max_examples: int | None = 2000
    ) -> None:
        super().__init__(random_state=random_state)
        self.eps = check_int(eps, "eps", minimum=1)
        self.max_examples = (
            None if max_examples is None else check_int(max_examples, "max_examples", minimum=2)
        )

    def compute(self, record: ModelRecord) -> float:
        # imported here: listing the measures must not depend on the other instruments
        from fitaudit.models import as_classifier
        from fitaudit.overfit.estimators import adversarial_risk, plain_risk
        from fitaudit.overfit.translation import TranslationAEG

        x, y = T.check_record_data(record, self.name)
        require_images(x, self.name)
        x, y = T.subsample(x, y, self.max_examples, check_random_state(self.random_state))
        model = T.eval_copy(record.model)
        k = max(T.n_outputs(model, x), int(y.max()) + 1)
        pad = 3 * self.eps
        canvases = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        # the AEG takes canvases in [0, 1]: rescale them, and let the model undo it
        lo, hi = float(canvases.min()), float(canvases.max())
        span = hi - lo if hi > lo else 1.0
        clf = as_classifier(rescaled(model, x.shape[1], lo, span), n_classes=k, device=device_of(model))
        canvases = ((canvases - lo) / span).astype(np.float32)
        loss = (np.asarray(clf.predict(aeg_crop(canvases, pad))) != y).astype(np.float64)
        aeg = TranslationAEG(eps=self.eps, margin=pad, variant="strongest")
        out = aeg.generate(clf, canvases, y, loss=loss)
        return adversarial_risk(out.adv_loss, out.weight) - plain_risk(loss)
