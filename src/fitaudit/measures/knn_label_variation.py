"""Label variation on a k-NN graph of mixed-up representations (Lassance et al., PGDL third place)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit._validation import check_int
from fitaudit.measures import _torch as T
from fitaudit.measures._winners import knn_laplacian, label_variation
from fitaudit.measures.base import Measure, ModelRecord
from fitaudit.random import check_random_state


class KNNLabelVariation(Measure):
    """Median over graphs of trace(Y^T L Y) / (4 n) on mixed-up penultimate representations.

    Third place of the PGDL competition (Lassance, Béthune, Bontonou,
    Hamidouche, Gripon, "Ranking deep learning generalization using label
    variation in latent geometry graphs", 2021; submission
    ``M_smoothness_penultimate_80``). For each of ``n_graphs`` graphs:
    ``per_class`` random training examples of every class (with replacement
    when a class has fewer), mixed up with a random partner from the whole
    batch, ``x' = l x + (1 - l) x_partner``, ``l ~ Beta(2, 2)`` per example,
    ``Y`` the mixed one-hot labels; the penultimate representation (input of
    the last computing layer) builds the 1-nearest-neighbour graph and its
    normalised Laplacian ``L`` (:func:`fitaudit.measures._winners.knn_laplacian`);
    value ``trace(Y^T L Y) / (4 n)``, clipped to [0, 1000]. Labels that vary
    between neighbours (a rough latent geometry) = larger value = larger
    predicted gap. The drawn examples go to the model's device once and are
    mixed there (in float64, then float32: the numbers numpy would give);
    the draws come from a CPU numpy generator.
    """

    name: ClassVar[str] = "knn_label_variation"
    cost: ClassVar[str] = "moderate"
    family: ClassVar[str] = "winners"
    reference: ClassVar[str] = (
        "Lassance et al., label variation in latent geometry graphs (PGDL 3rd place), 2021"
    )

    def __init__(self, *, random_state: Any = 0, n_graphs: int = 80, per_class: int = 50) -> None:
        super().__init__(random_state=random_state)
        self.n_graphs = check_int(n_graphs, "n_graphs", minimum=1)
        self.per_class = check_int(per_class, "per_class", minimum=1)

    def compute(self, record: ModelRecord) -> float:
        torch = T.torch_()
        x, y = T.check_record_data(record, self.name)
        rng = check_random_state(self.random_state)
        model = T.eval_copy(record.model)
        module = T.last_layer(model)
        k = max(T.n_outputs(model, x), int(y.max()) + 1)
        classes = np.unique(y)
        values = []
        for _ in range(self.n_graphs):
            idx = np.concatenate(
                [
                    rng.choice(
                        np.flatnonzero(y == c),
                        size=self.per_class,
                        replace=bool((y == c).sum() < self.per_class),
                    )
                    for c in classes
                ]
            )
            lam = rng.beta(2.0, 2.0, size=len(idx))
            partner = rng.permutation(len(idx))
            shape = (-1,) + (1,) * (x.ndim - 1)
            picked = T.on_model_device(model, x[idx]).double()  # one trip; mixed there in float64, as numpy would
            weight = torch.as_tensor(lam, device=picked.device).reshape(shape)
            mixed = (weight * picked + (1 - weight) * picked[torch.as_tensor(partner, device=picked.device)]).float()
            onehot = np.eye(k)[y[idx]]
            targets = lam[:, None] * onehot + (1 - lam[:, None]) * onehot[partner]
            _, h = T.capture(model, module, mixed, output=False)
            values.append(
                label_variation(knn_laplacian(T.host(h.reshape(len(idx), -1))), targets)
            )
        return float(np.median(values))
