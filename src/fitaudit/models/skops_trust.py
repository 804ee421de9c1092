"""What a ``.skops`` file may contain: trust by an explicit allowlist, never by module name.

skops [1]_ rebuilds an object from a JSON schema and refuses, by default, every
type outside its own trusted set: scikit-learn's public estimators
(``sklearn.utils.all_estimators``), numpy's and scipy.special's ufuncs (pure
element-wise arithmetic), numpy dtypes and bit generators, and the built-in
containers. :func:`skops.io.get_untrusted_types` lists what a file needs beyond
that set. fitaudit trusts, on top of it, exactly the names below and nothing
else:

* :data:`TRUSTED_TYPES` -- the private helper types that ordinary fitted
  models carry (a forest's ``Tree``, a histogram booster's ``TreePredictor``,
  a calibrated classifier's calibrators, a neighbours index, an MLP's
  optimiser); written out one by one;
* :data:`TRUSTED_FUNCTIONS` -- pure numeric functions that are not ufuncs
  (a ``FunctionTransformer``'s ``func``).

A module prefix cannot tell a safe name from a dangerous one: ``numpy`` and
``scipy`` also hold ``numpy.load`` (reads pickles), ``numpy.testing``'s
``runstring`` (``exec``), ``ctypeslib.load_library``, ``scipy.io.loadmat``;
scikit-learn holds private helpers that run scripts. A file that needs any
other name is refused before anything is built, naming it; a caller who trusts
the file's author passes ``trusted=[...]`` (the names) or ``trust_code=True``
(everything the file lists), as skops' own ``load(trusted=...)`` does.

Trusted types whose arrays scikit-learn indexes without bounds checks (tree
nodes, a KD-tree's index) are checked structurally after loading
(:func:`check_index_arrays`): a crafted file whose child or feature index
points outside its arrays is refused instead of reading out of bounds when
the model first predicts (skops leaves ``TreePredictor`` untrusted for this
reason [2]_).

References
----------
.. [1] skops, "Secure persistence with skops",
       https://skops.readthedocs.io/en/stable/persistence.html
.. [2] skops, ``skops/io/_trusted_types.py``: the note on ``TreePredictor``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from fitaudit._errors import InputError

#: private scikit-learn (and numpy) types of ordinary fitted models, beyond skops' default set
TRUSTED_TYPES: frozenset[str] = frozenset({
    "numpy.dtype",
    "sklearn.tree._tree.Tree",  # trees and forests, gradient boosting (nodes checked below)
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",  # HistGradientBoosting (checked)
    "sklearn.calibration._CalibratedClassifier",
    "sklearn.calibration._SigmoidCalibration",
    "sklearn.neighbors._kd_tree.KDTree",  # index arrays checked below
    "sklearn.neighbors._ball_tree.BallTree",
    "sklearn.metrics._dist_metrics.EuclideanDistance64",
    "sklearn.metrics._dist_metrics.EuclideanDistance32",
    "sklearn.metrics._dist_metrics.ManhattanDistance64",
    "sklearn.metrics._dist_metrics.ManhattanDistance32",
    "sklearn.metrics._dist_metrics.MinkowskiDistance64",
    "sklearn.metrics._dist_metrics.MinkowskiDistance32",
    "sklearn.metrics._dist_metrics.ChebyshevDistance64",
    "sklearn.metrics._dist_metrics.ChebyshevDistance32",
    "sklearn.neural_network._stochastic_optimizers.AdamOptimizer",
    "sklearn.neural_network._stochastic_optimizers.SGDOptimizer",
})

#: pure numeric functions that are not ufuncs (ufuncs such as ``numpy.log1p``,
#: ``numpy.exp`` and ``numpy.sqrt`` are in skops' default set already)
TRUSTED_FUNCTIONS: frozenset[str] = frozenset({
    "numpy.clip",
    "numpy.round",
    "numpy.around",
    "numpy.nan_to_num",
})

_HOW_TO_TRUST = (
    "they can run code or read files when the model is used. Load the file only if you trust its author: "
    "--trust-code on the command line, or trusted=[<the names>] (or trust_code=True) in Python"
)


def refused_names(untrusted: Iterable[str], trusted: Iterable[str] = ()) -> list[str]:
    """The names of ``untrusted`` (skops' list for a file) that neither fitaudit nor the caller trusts."""
    allowed = TRUSTED_TYPES | TRUSTED_FUNCTIONS | set(trusted)
    return sorted({name for name in untrusted if name not in allowed})


def refusal(path: str, name: str, refused: list[str]) -> InputError:
    """The error for a file that needs ``refused``: the names and how to trust them on purpose."""
    return InputError(
        f"`{name}`: {path!r} holds types or functions fitaudit does not trust: {', '.join(refused)}; "
        f"{_HOW_TO_TRUST}."
    )


def check_index_arrays(model: Any, *, path: str, name: str) -> None:
    """Refuse a loaded model whose tree or neighbours-index arrays point outside themselves.

    scikit-learn's Cython code follows these indices without bounds checks, so
    a crafted file would read out of bounds (or loop forever) at the first
    prediction. Checked: every internal node's children come after it and lie
    inside the node array, its feature index inside the model's features, a
    categorical split's bitset row inside the bitsets; a KD- or ball tree's
    index is a permutation of its rows and its nodes' ranges lie inside it.
    """
    for obj, n_features in _walk(model, None):
        problem = _problem(obj, n_features)
        if problem is not None:
            raise InputError(f"`{name}`: {path!r} is not a model scikit-learn can run safely: {problem}.")


def _walk(obj: Any, n_features: int | None, seen: set[int] | None = None) -> Iterator[tuple[Any, int | None]]:
    """Every object reachable from ``obj`` through containers and attributes, with the nearest ``n_features_in_``."""
    seen = set() if seen is None else seen
    if id(obj) in seen or isinstance(obj, (str, bytes, int, float, bool, type(None), np.ndarray, np.generic)):
        return
    seen.add(id(obj))
    yield obj, n_features
    if isinstance(obj, dict):
        children: Iterable[Any] = obj.values()
    elif isinstance(obj, (list, tuple, set, frozenset)):
        children = obj
    else:
        attributes = getattr(obj, "__dict__", None)
        if not isinstance(attributes, dict):
            return
        features = attributes.get("n_features_in_")
        n_features = int(features) if isinstance(features, (int, np.integer)) else n_features
        children = attributes.values()
    for child in children:
        yield from _walk(child, n_features, seen)


def _problem(obj: Any, n_features: int | None) -> str | None:
    kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
    if kind == "sklearn.tree._tree.Tree":
        state = obj.__getstate__()
        nodes = state["nodes"]
        return _tree_problem(nodes["left_child"], nodes["right_child"], nodes["feature"], int(obj.n_features),
                             leaf=-1, what="a tree", extra=_tree_size_problem(state, nodes))
    if kind == "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor":
        nodes = obj.nodes
        inner = ~nodes["is_leaf"].astype(bool)
        left, right, feature = (nodes[field].astype(np.int64) for field in ("left", "right", "feature_idx"))
        problem = _tree_problem(np.where(inner, left, -1), np.where(inner, right, -1), np.where(inner, feature, 0),
                                n_features, leaf=-1, what="a histogram booster's tree")
        if problem is None:
            categorical = inner & nodes["is_categorical"].astype(bool)
            rows = min(len(obj.raw_left_cat_bitsets), len(obj.binned_left_cat_bitsets))
            if np.any(nodes["bitset_idx"][categorical] >= rows):
                problem = "a histogram booster's categorical split names a bitset it does not hold"
        return problem
    if kind in ("sklearn.neighbors._kd_tree.KDTree", "sklearn.neighbors._ball_tree.BallTree"):
        return _neighbours_index_problem(obj)
    return None


def _tree_size_problem(state: dict[str, Any], nodes: np.ndarray) -> str | None:
    values = state.get("values")
    if int(state.get("node_count", len(nodes))) != len(nodes) or values is None or len(values) != len(nodes):
        return "a tree's node count disagrees with its arrays"
    return None


def _tree_problem(left: np.ndarray, right: np.ndarray, feature: np.ndarray, n_features: int | None, *,
                  leaf: int, what: str, extra: str | None = None) -> str | None:
    if extra is not None:
        return extra
    left, right, feature = (np.asarray(a, dtype=np.int64) for a in (left, right, feature))
    count = len(left)
    index = np.arange(count)
    inner = left != leaf
    if np.any((left == leaf) != (right == leaf)):
        return f"{what} has a node with one child"
    for child in (left[inner], right[inner]):
        if np.any(child <= index[inner]) or np.any(child >= count):
            return f"{what} has a child index outside its nodes (or before its parent)"
    if np.any(feature[inner] < 0) or (n_features is not None and np.any(feature[inner] >= n_features)):
        return f"{what} splits on a feature the model does not have"
    return None


def _neighbours_index_problem(tree: Any) -> str | None:
    data, idx_array, node_data, _ = tree.get_arrays()
    rows = len(data)
    if len(idx_array) != rows or not np.array_equal(np.sort(np.asarray(idx_array)), np.arange(rows)):
        return "a neighbours index whose row order is not a permutation of its rows"
    start, end = np.asarray(node_data["idx_start"]), np.asarray(node_data["idx_end"])
    if np.any(start < 0) or np.any(end > rows) or np.any(start > end):
        return "a neighbours index whose nodes point outside its rows"
    inner = np.flatnonzero(~np.asarray(node_data["is_leaf"]).astype(bool))
    if np.any(2 * inner + 2 >= len(node_data)):
        return "a neighbours index whose inner node has no children"
    return None
