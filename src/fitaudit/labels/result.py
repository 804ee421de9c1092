"""Are the scored labels right? Rows whose label the model and the data say is likely wrong.

:func:`find_label_problems` flags two kinds of rows:

* confident learning [1]_ on the model's probabilities of the scored rows,
  by cleanlab's ``cleanlab.filter.find_label_issues`` [2]_ (its default,
  ``filter_by="prune_by_noise_rate"``): the confident joint of given and
  suggested labels estimates how many rows of each class carry each other
  label, and that many rows, those with the largest margin of the other
  class's probability over their own, are flagged. The probabilities must be
  out-of-sample: a model's own ``predict_proba`` on the scored rows is, since
  it was not fit on them (on its training rows it has seen every label and
  agrees with them);
* exact conflicting labels: rows equal in every column (or every pixel) that
  carry different labels; of each such group, the rows whose label is not
  the model's suggestion (the same for equal rows) are flagged.

The model's suggestion for a row is its most probable class. What correcting
the flagged rows would do: their labels replaced by the suggestion, the
accuracy becomes ``(correct + flagged rows the model disagrees with) / n``;
the check compares that with the exact (Clopper-Pearson) interval of the
measured accuracy.

Confident learning flags the rows where a confident model disagrees with the
label, and a model whose classes overlap (a hard table) is confidently wrong
on honest labels too. So the flags are weighed against the model's own
uncertainty (:func:`uncertainty_test`): if the labels were drawn from the
model's probabilities, a row the model gives its suggestion with probability
``p`` would carry another label with probability ``1 - p``; among the
*confident* rows (the suggestion's probability at least its class's
threshold, the mean probability of that class over the rows labelled with it:
the thresholds of the confident joint [1]_), the number carrying another
label is then Poisson-binomial. Its upper tail at the observed number is the
p-value that the labels disagree with the model more than its probabilities
explain. Northcutt, Athalye and Mueller [3]_ found 3.3% label
errors on average in ten common test sets, enough to reorder models.

References
----------
.. [1] C. G. Northcutt, L. Jiang and I. L. Chuang, "Confident learning:
       estimating uncertainty in dataset labels", JAIR 70, 2021.
.. [2] cleanlab, https://github.com/cleanlab/cleanlab (``cleanlab.filter``).
.. [3] C. G. Northcutt, A. Athalye and J. Mueller, "Pervasive label errors in
       test sets destabilize machine learning benchmarks", NeurIPS 2021
       Datasets and Benchmarks.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> y = rng.integers(0, 3, 600)
>>> probabilities = np.full((600, 3), 0.005); probabilities[np.arange(600), y] = 0.99
>>> wrong = y.copy(); wrong[:40] = (y[:40] + 1) % 3          # 40 labels changed
>>> result = find_label_problems(None, wrong, probabilities)
>>> result.n_flagged, result.verdict().status
(40, 'fail')
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit._validation import check_int
from fitaudit.labels.decision import label_contradiction, label_verdict
from fitaudit.results import Result
from fitaudit.stats.intervals import DEFAULT_CONFIDENCE, binomial_interval, check_confidence_level
from fitaudit.verdict import Verdict

#: cleanlab's filter used (its default)
FILTER_BY = "prune_by_noise_rate"

#: columns of a flagged row listed with its values (a wider table lists the first ones)
LISTED_COLUMNS = 30


@dataclasses.dataclass(repr=False)
class LabelResult(Result):
    """Scored rows whose label is likely wrong, and what correcting them does to the accuracy.

    Attributes
    ----------
    n, correct : int
        Scored rows and those whose label is the model's suggestion.
    accuracy, low, high : float
        The measured accuracy and its exact interval at :attr:`confidence_level`.
    confidence_level : float
    n_classes : int
    class_names : list of str or None
    flagged : ndarray of int
        Positions (0-based rows) of every flagged row, worst label first
        (cleanlab's self-confidence: the probability of the given label).
    by_confident_learning, by_conflict : int
        Flagged rows found by confident learning and by exact conflicting labels (a row can be both).
    conflict_groups : int
        Groups of equal rows with different labels (``None`` when the rows were not compared).
    rows : list of dict
        The first ``max_listed`` flagged rows: ``position``, ``index`` (the
        table's row label, else the position), ``label``, ``suggested``,
        ``label_probability``, ``suggested_probability``, ``found_by``
        (``"confident learning"``, ``"conflicting labels"`` or both) and
        ``values`` (``{column: value}`` of a table, else None).
    confident_errors : int
        Confident rows (see the module docstring) whose label is not the suggestion.
    expected_confident_errors : float
        Their expected number were the labels drawn from the model's probabilities.
    explained_confident_errors : int
        The most of them that draw explains: its 95% quantile (the smallest
        count exceeded with probability at most :data:`UNCERTAINTY_LEVEL`).
    uncertainty_pvalue : float
        The chance of ``confident_errors`` or more under that draw (:func:`uncertainty_test`).
    corrected_correct : int
        Correct rows once the flagged rows carry the suggested label.
    corrected_accuracy, corrected_low, corrected_high : float
        That accuracy and its exact interval.
    settings : dict
        ``filter_by``, ``cleanlab`` (its version), ``max_listed``.
    """

    n: int
    correct: int
    accuracy: float
    low: float
    high: float
    confidence_level: float
    n_classes: int
    class_names: list[str] | None
    flagged: np.ndarray
    by_confident_learning: int
    by_conflict: int
    conflict_groups: int | None
    rows: list[dict[str, Any]]
    confident_errors: int
    expected_confident_errors: float
    explained_confident_errors: int
    uncertainty_pvalue: float
    corrected_correct: int
    corrected_accuracy: float
    corrected_low: float
    corrected_high: float
    settings: dict[str, Any]

    def __post_init__(self) -> None:
        self.flagged = np.asarray(self.flagged, dtype=np.int64).reshape(-1)

    @property
    def unexplained(self) -> int:
        """Confident disagreements beyond what the model's uncertainty explains, at most the flagged rows the model
        disagrees with (those a correction changes)."""
        return max(0, min(self.confident_errors - self.explained_confident_errors,
                          self.corrected_correct - self.correct))

    @property
    def n_flagged(self) -> int:
        """Rows flagged (by either kind)."""
        return int(self.flagged.size)

    def class_name(self, label: int) -> str:
        """The name of class ``label`` (its index when the classes are not named)."""
        if self.class_names is not None and 0 <= label < len(self.class_names):
            return str(self.class_names[label])
        return str(label)

    def _summary_fields(self) -> list[str]:
        return ["n", "accuracy", "n_flagged", "corrected_accuracy"]

    def __repr__(self) -> str:
        lines = [super().__repr__()]
        lines += [f"  row {r['index']}: label {self.class_name(r['label'])}, suggested "
                  f"{self.class_name(r['suggested'])} ({r['found_by']})" for r in self.rows[:10]]
        return "\n".join(lines)

    def verdict(self, **context: Any) -> Verdict:
        """``fail`` when correcting the flagged rows moves the accuracy out of its interval
        (:func:`fitaudit.labels.decision.label_verdict`)."""
        return label_verdict(self, **context)

    def contradiction(self) -> str | None:
        return label_contradiction(self)


def _check_probabilities(probabilities: Any, n: int) -> np.ndarray:
    try:
        p = np.asarray(probabilities, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"`probabilities` must be an array of numbers (n, n_classes); ({exc}).") from exc
    if p.ndim != 2 or p.shape[0] != n or p.shape[1] < 2:
        raise InputError(f"`probabilities` must have shape ({n}, n_classes >= 2), one row per label; "
                         f"got shape {p.shape}.")
    if not np.isfinite(p).all() or p.min() < 0 or p.max() > 1:
        raise InputError("`probabilities` must be probabilities in [0, 1] (the model's predict_proba), "
                         "not logits or scores.")
    if not np.allclose(p.sum(axis=1), 1.0, atol=1e-3):
        bad = int(np.argmax(np.abs(p.sum(axis=1) - 1.0)))
        raise InputError(f"`probabilities` rows must sum to 1 (the model's predict_proba); row {bad} sums to "
                         f"{p[bad].sum():.4g}.")
    return p / p.sum(axis=1, keepdims=True)


def _check_labels(y_true: Any, n_classes: int) -> np.ndarray:
    labels = np.asarray(y_true)
    if labels.ndim != 1 or labels.size == 0:
        raise InputError(f"`y_true` must be a non-empty 1-D array of labels; got shape {labels.shape}.")
    if not np.issubdtype(labels.dtype, np.integer):
        if not (np.issubdtype(labels.dtype, np.floating) and np.all(np.mod(labels, 1) == 0)):
            raise InputError("`y_true` must hold class indices 0 .. n_classes - 1 (the columns of "
                             f"`probabilities`); got dtype {labels.dtype}.")
    labels = labels.astype(np.int64)
    outside = labels[(labels < 0) | (labels >= n_classes)]
    if outside.size:
        raise InputError(f"`y_true` holds the label {int(outside[0])}, which the model never saw: `probabilities` "
                         f"has {n_classes} columns (classes 0 .. {n_classes - 1}).")
    return labels


def conflicting_groups(X: Any) -> np.ndarray | None:
    """For every row, the group of rows equal to it in every column (or pixel), ``-1`` for a row without
    an equal one; ``None`` when ``X`` is None. Missing values count as equal to each other."""
    from fitaudit.data.tables import as_frame, is_frame

    if X is None:
        return None
    if is_frame(X):
        frame = as_frame(X, "X")
        import pandas as pd  # a frame was given, so pandas is there

        hashes = pd.util.hash_pandas_object(frame, index=False).to_numpy()
        repeated = frame.duplicated(keep=False).to_numpy()
        _, groups = np.unique(hashes, return_inverse=True)
    else:
        try:
            values = np.ascontiguousarray(np.asarray(X))
        except Exception as exc:  # ragged rows
            raise InputError(f"`X` must be a table (DataFrame) or an array of rows; ({exc}).") from exc
        if values.ndim < 2:
            raise InputError(f"`X` must have one row per label; got shape {values.shape}.")
        rows = values.reshape(len(values), -1)
        keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
        _, groups, counts = np.unique(keys, return_inverse=True, return_counts=True)
        repeated = counts[groups] > 1
    return np.where(repeated, groups.ravel(), -1)


#: level of the test that the labels disagree with the model more than its probabilities explain
UNCERTAINTY_LEVEL = 0.05

#: confident rows up to which the Poisson-binomial tail is exact (scipy's poisson_binom); above, the refined
#: normal approximation (Volkova 1996; Hong 2013 measures its error below 1e-3 from a few hundred terms)
EXACT_TAIL = 5000


def poisson_binomial_sf(count: int, probabilities: np.ndarray) -> float:
    """P(C >= count) for C a sum of independent Bernoulli(``probabilities``)."""
    from scipy import stats

    q = np.asarray(probabilities, dtype=np.float64)
    if count <= 0:
        return 1.0
    if count > q.size:
        return 0.0
    if q.size <= EXACT_TAIL and hasattr(stats, "poisson_binom"):
        return float(np.clip(stats.poisson_binom(q).sf(count - 1), 0.0, 1.0))
    mean, sd = float(q.sum()), float(np.sqrt(np.sum(q * (1 - q))))
    if sd == 0:
        return float(count <= mean)
    skew = float(np.sum(q * (1 - q) * (1 - 2 * q))) / sd ** 3
    x = (count - 0.5 - mean) / sd
    below = stats.norm.cdf(x) + skew * (1 - x * x) * stats.norm.pdf(x) / 6
    return float(np.clip(1.0 - below, 0.0, 1.0))


def uncertainty_test(labels: np.ndarray, probabilities: np.ndarray,
                     level: float = UNCERTAINTY_LEVEL) -> tuple[int, float, int, float]:
    """Confident rows whose label is not the model's suggestion: their number, its expectation, the most the
    model's uncertainty explains (the ``1 - level`` quantile) and the p-value of that many or more, were the
    labels drawn from the model's probabilities (module docstring)."""
    n_classes = probabilities.shape[1]
    suggested = np.argmax(probabilities, axis=1)
    top = probabilities[np.arange(len(labels)), suggested]
    labelled = np.bincount(labels, minlength=n_classes)
    sums = np.bincount(labels, weights=probabilities[np.arange(len(labels)), labels], minlength=n_classes)
    with np.errstate(invalid="ignore", divide="ignore"):
        thresholds = np.where(labelled > 0, sums / np.maximum(labelled, 1), np.inf)
    confident = top >= thresholds[suggested] - 1e-9  # a mean of equal values may round above them
    errors = int(np.sum(confident & (labels != suggested)))
    chances = 1.0 - top[confident]
    low, high = -1, int(chances.size)  # P(C > low) > level; P(C > high) = 0 <= level
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if poisson_binomial_sf(middle + 1, chances) > level else (low, middle)
    return errors, float(chances.sum()), high, poisson_binomial_sf(errors, chances)


def _row_values(X: Any, position: int) -> dict[str, Any] | None:
    from fitaudit.data.tables import is_frame
    from fitaudit.results import to_jsonable

    if X is None or not is_frame(X):
        return None
    row = X.iloc[position]
    return {str(k): to_jsonable(v) for k, v in list(row.items())[:LISTED_COLUMNS]}


def find_label_problems(
    X: Any,
    y_true: Any,
    probabilities: Any,
    *,
    class_names: Any = None,
    confidence_level: float = DEFAULT_CONFIDENCE,
    max_listed: int = 100,
) -> LabelResult:
    """Scored rows whose label is likely wrong (see the module docstring).

    Parameters
    ----------
    X : DataFrame, array or None
        The scored rows (a table, 2-D rows or images): compared for exact
        conflicting labels, and a table's values are listed. ``None``: no
        comparison of rows (confident learning only).
    y_true : array-like of int (n,)
        The labels, as class indices (the columns of ``probabilities``).
    probabilities : array-like (n, n_classes)
        The model's out-of-sample probabilities of the scored rows (its
        ``predict_proba``: it was not fit on them).
    class_names : sequence of str, optional
        Names of the classes, in column order.
    confidence_level : float
        Level of the accuracy intervals.
    max_listed : int
        Flagged rows listed with their values (all are in ``flagged``).

    Returns
    -------
    LabelResult
    """
    confidence_level = check_confidence_level(confidence_level)
    max_listed = check_int(max_listed, "max_listed", minimum=0)
    n = len(np.asarray(y_true).reshape(-1))
    p = _check_probabilities(probabilities, n)
    n_classes = p.shape[1]
    labels = _check_labels(y_true, n_classes)
    names = None if class_names is None else [str(c) for c in class_names]
    if names is not None and len(names) != n_classes:
        raise InputError(f"`class_names` has {len(names)} names for the {n_classes} columns of `probabilities`.")
    if X is not None and len(X) != n:
        raise InputError(f"`X` has {len(X)} rows but `y_true` has {n} labels.")
    cleanlab = import_optional("cleanlab.filter", "finding label problems")
    with warnings.catch_warnings():  # "may not flag all label issues in class k, it has too few examples"
        warnings.simplefilter("ignore")
        confident = np.asarray(cleanlab.find_label_issues(labels, p, filter_by=FILTER_BY, n_jobs=1), dtype=bool)
    suggested = np.argmax(p, axis=1)
    groups = conflicting_groups(X)
    conflict = np.zeros(n, dtype=bool)
    n_groups = None
    if groups is not None:
        in_group = np.flatnonzero(groups >= 0)
        ids, inverse = np.unique(groups[in_group], return_inverse=True)
        pairs = np.unique(np.column_stack([inverse, labels[in_group]]), axis=0)
        kinds = np.bincount(pairs[:, 0], minlength=len(ids))  # distinct labels in each group of equal rows
        conflict[in_group] = (kinds[inverse] > 1) & (labels[in_group] != suggested[in_group])
        n_groups = int(np.sum(kinds > 1))
    flagged_mask = confident | conflict
    own = p[np.arange(n), labels]
    flagged = np.flatnonzero(flagged_mask)
    flagged = flagged[np.argsort(own[flagged], kind="stable")]
    index = X.index if X is not None and hasattr(X, "index") and hasattr(X, "iloc") else None
    rows = []
    for position in flagged[:max_listed]:
        found = [w for w, on in (("confident learning", confident[position]),
                                 ("conflicting labels", conflict[position])) if on]
        rows.append({"position": int(position),
                     "index": int(position) if index is None else index[position],
                     "label": int(labels[position]), "suggested": int(suggested[position]),
                     "label_probability": float(own[position]),
                     "suggested_probability": float(p[position, suggested[position]]),
                     "found_by": " and ".join(found), "values": _row_values(X, int(position))})
    confident_errors, expected, explained, pvalue = uncertainty_test(labels, p)
    correct = int(np.sum(labels == suggested))
    corrected = correct + int(np.sum(flagged_mask & (labels != suggested)))
    measured = binomial_interval(correct, n, confidence_level)
    after = binomial_interval(corrected, n, confidence_level)
    import cleanlab as cleanlab_package

    return LabelResult(
        n=n, correct=correct, accuracy=correct / n, low=measured.low, high=measured.high,
        confidence_level=confidence_level, n_classes=n_classes, class_names=names, flagged=flagged,
        by_confident_learning=int(confident.sum()), by_conflict=int(conflict.sum()), conflict_groups=n_groups,
        rows=rows, confident_errors=confident_errors, expected_confident_errors=expected,
        explained_confident_errors=explained,
        uncertainty_pvalue=pvalue, corrected_correct=corrected, corrected_accuracy=corrected / n, corrected_low=after.low,
        corrected_high=after.high,
        settings={"filter_by": FILTER_BY, "cleanlab": str(getattr(cleanlab_package, "__version__", "unknown")),
                  "max_listed": max_listed})


__all__ = ["FILTER_BY", "LabelResult", "conflicting_groups", "find_label_problems", "poisson_binomial_sf",
           "uncertainty_test"]
