"""Where the classifier fails: factor ranges that concentrate its failures.

Shu, Liu, Qiu, Yuille (AAAI 2020, Sec. 5; docs/examiner.md#the-papers-experiments) show where
an examined model is weak by comparing examiner-found inputs with randomly
sampled ones (t-SNE pictures) and by planting a weakness (training with
camera elevation limited to [-30, 30] degrees) that the examiner must find.
This module turns an examination's query log into:

* per-factor histograms of the failing queries (examiner and random ones)
  against the uniform random reference queries, and a concentration score
  per factor (total variation distance between the two distributions);
* short rules such as ``"camera_elevation > 62 and light_energy <= 0.4: 81%
  wrong (n = 412) vs 9% of random queries (n = 1,800); random queries in
  the region: 30 of 41 wrong, lift 8.1 (95% interval 5.6-9.9 over 4
  regions)"`` (:func:`rule_sentence`), read off the leaves of a shallow
  scikit-learn decision tree whose share of failures is above the baseline
  (a weakness need not fail most of its queries: 25% wrong where 2% is
  usual is one), fitted to "is this query wrong?" over
  the examiner's queries, each with its support and precision, and the
  failure rate of the uniform random reference queries inside the same
  region. A second tree is fitted to half of the reference queries (every
  second one of each instance's, :func:`fitting_half`): an examiner piles
  its queries on the edges of the space, and its tree alone cuts regions
  of almost no volume there, which few random queries fall in; the random
  queries' tree cuts regions as wide as the failures are. The other half of
  the reference queries is held out of both fits, so the
  regions are chosen without them and their failures inside are an
  unbiased sample: the rule's *lift* (that failure rate over the random
  queries' overall one) gets an honest interval (:func:`lift_interval`,
  Katz's log interval of the risk ratio inside vs outside the region,
  widened to hold a bootstrap over the examined instances, whose queries
  fail together (:func:`grouped_lift_interval`); Bonferroni-adjusted over
  the candidate regions). A rule is *confirmed*
  when its region holds at least :data:`MIN_REFERENCE_SUPPORT` random
  queries and the lower end of its lift interval is above 1; only a
  confirmed rule can be the headline (:attr:`WeaknessReport.headline`).
  Rules are ranked: confirmed ones by lift, then the other supported ones
  by lift, then the rest by precision (an examiner that dug into one
  corner makes the precision there high whatever the corner's real weight);
and the t-SNE pictures of random vs examiner-found inputs are in
:mod:`fitaudit.examine.embedding`.

A query "fails" when the predicted class is not the instance's label.
Pictures are drawn by :mod:`fitaudit.report.examine`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_int
from fitaudit.examine.decision import weakness_verdict
from fitaudit.results import Result
from fitaudit.verdict import Verdict

#: rules are read off leaves with at least this many queries (or 2% of the pool)
MIN_LEAF = 20

#: random reference queries a rule's region must hold for its lift to rank it (and to be a headline)
MIN_REFERENCE_SUPPORT = 20

#: joint confidence level of the rules' lift intervals (Bonferroni over the candidate regions)
LIFT_CONFIDENCE = 0.95


@dataclasses.dataclass(repr=False)
class WeaknessReport(Result):
    """Factor ranges that concentrate the failures of an examination.

    Attributes
    ----------
    factor_names : list of str
    n_examined, n_reference : int
        Examiner queries and uniform random reference queries analysed.
    failure_rate_examined, failure_rate_reference : float
        Fractions wrong (``None`` when there are no reference queries).
    histograms : dict
        Per factor: ``edges`` (n_bins + 1), ``failing`` (counts of failing
        queries, examiner and reference pooled), ``reference`` (counts of
        all reference queries) and ``reference_failing``.
    concentration : dict
        Per factor: total variation distance between the distribution of
        failing queries and that of the reference queries (0: failures are
        spread like random queries; 1: disjoint), sorted high to low.
    rules : list of dict
        ``conditions`` (``[factor, "<=" or ">", threshold]``), ``text``,
        ``tree`` (the tree that cut the region: ``"examiner"`` or
        ``"random"``), ``support`` (examiner queries in the region), ``support_fraction``,
        ``precision`` (fraction of them wrong), ``reference_support`` and
        ``reference_precision`` (the confirming half of the random reference
        queries in the region), ``lift`` (``reference_precision`` over the random
        queries' overall failure rate) with ``lift_low``, ``lift_high``
        (:func:`lift_interval` at the joint level ``lift_level``, over
        ``n_candidates`` regions), ``supported`` (at least
        :data:`MIN_REFERENCE_SUPPORT` random queries in the region) and
        ``confirmed`` (supported and ``lift_low > 1``); confirmed rules
        first, by lift, then the other supported ones by lift, then the
        rest by precision.
    tree : dict
        Settings of the decision tree (max_depth, min_samples_leaf, pool size).
    """

    factor_names: list[str]
    n_examined: int
    n_reference: int
    failure_rate_examined: float
    failure_rate_reference: float | None
    histograms: dict[str, Any]
    concentration: dict[str, float]
    rules: list[dict[str, Any]]
    tree: dict[str, Any]

    @property
    def n_confirming(self) -> int:
        """Random reference queries that confirm the rules: those the second tree did not learn from.

        The rules' sentences state the random queries' failure rate over
        these (:func:`rule_sentence`); without a second tree, all of them.
        """
        return self.n_reference - int(self.tree.get("n_random_pool", 0))

    @property
    def headline(self) -> dict[str, Any] | None:
        """The rule that can be said to concentrate the failures: the first, when it is confirmed.

        Confirmed: its region holds at least :data:`MIN_REFERENCE_SUPPORT`
        random reference queries and its lift interval lies above 1. None
        when no rule is (a rule whose lift interval includes 1 is never
        the headline).
        """
        return self.rules[0] if self.rules and self.rules[0].get("confirmed") else None

    def _summary_fields(self) -> list[str]:
        return ["n_examined", "n_reference", "failure_rate_examined", "failure_rate_reference"]

    def __repr__(self) -> str:
        lines = [super().__repr__()]
        lines += [f"  rule: {rule['text']}" for rule in self.rules]
        return "\n".join(lines)

    def verdict(self, **context: Any) -> Verdict:
        """Where the failures concentrate, a measurement (:func:`fitaudit.examine.decision.weakness_verdict`)."""
        return weakness_verdict(self, min_reference_support=MIN_REFERENCE_SUPPORT, **context)


def _fmt(value: float) -> str:
    return f"{value:.3g}"


def _conditions_text(conditions: list[list[Any]], bounds: dict[str, tuple[float, float]] | None = None) -> str:
    """Merge the path's tests per factor: ``3 < a <= 7 and b > 0.4``.

    With the factors' ``bounds``, a test that is vacuous once rounded
    (``a <= 90`` when a's maximum is 90) is dropped, and one that leaves
    only the end of the range reads ``a = 90 (its maximum)``.
    """
    parts = []
    for name in dict.fromkeys(c[0] for c in conditions):
        lows = [c[2] for c in conditions if c[0] == name and c[1] == ">"]
        highs = [c[2] for c in conditions if c[0] == name and c[1] == "<="]
        low, high = (max(lows) if lows else None), (min(highs) if highs else None)
        if bounds is not None and name in bounds:
            lo, hi = bounds[name]
            if high is not None and _fmt(high) == _fmt(hi):
                high = None
            if low is not None and _fmt(low) == _fmt(lo):
                low = None
            if low is not None and _fmt(low) == _fmt(hi):
                parts.append(f"{name} = {_fmt(hi)} (its maximum)")
                continue
            if high is not None and _fmt(high) == _fmt(lo):
                parts.append(f"{name} = {_fmt(lo)} (its minimum)")
                continue
        if low is not None and high is not None:
            parts.append(f"{_fmt(low)} < {name} <= {_fmt(high)}")
        elif low is not None:
            parts.append(f"{name} > {_fmt(low)}")
        elif high is not None:
            parts.append(f"{name} <= {_fmt(high)}")
    return " and ".join(parts)


def _in_region(x: np.ndarray, conditions: list[list[Any]], names: list[str]) -> np.ndarray:
    inside = np.ones(len(x), dtype=bool)
    for name, op, threshold in conditions:
        column = x[:, names.index(name)]
        inside &= column > threshold if op == ">" else column <= threshold
    return inside


def failure_rules(
    x: np.ndarray,
    failing: np.ndarray,
    names: list[str],
    *,
    reference_x: np.ndarray | None = None,
    reference_failing: np.ndarray | None = None,
    reference_groups: np.ndarray | None = None,
    bounds: dict[str, tuple[float, float]] | None = None,
    random_fit: tuple[np.ndarray, np.ndarray] | None = None,
    max_depth: int = 2,
    max_rules: int = 5,
    random_state: int = 0,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rules from the leaves of shallow decision trees on ``(x, failing)`` (and ``random_fit``) that fail more often
    than the baseline.

    Parameters
    ----------
    x : ndarray (n, n_factors)
        Factors of the queries the tree learns from (the examiner's; keep
        the reference queries out, so that their numbers stay unbiased).
    failing : ndarray of bool (n,)
    names : list of str
        Factor names (columns of ``x``).
    reference_x, reference_failing : optional
        Uniform random queries: their failure rate inside each region is
        reported next to the precision, and their overall rate is
        the baseline of the rule's text.
    reference_groups : ndarray (n_reference,), optional
        The instance of every reference query. Queries of one instance fail
        together (an image that breaks at one rotation breaks at its
        neighbours), so with at least :data:`MIN_GROUPS` instances the lift
        interval is widened to hold a bootstrap over instances too
        (:func:`grouped_lift_interval`).
    bounds : dict, optional
        ``{factor: (low, high)}``: ranges, to word tests at their ends.
    random_fit : (ndarray (m, n_factors), ndarray of bool (m,)), optional
        Uniform random queries held out of ``reference_x`` (:func:`weakness_report` splits the reference
        queries in two): a second tree is fitted to them and its leaves join the candidate regions. An
        examiner piles its queries on the edges of the space (a BO examiner on a photo CNN put 193 of its
        360 queries at blur's maximum, ``benchmarks/validity/photo_examine.py``), and the examiner's
        tree then cuts regions of almost no volume, which few random queries can confirm; the random
        queries' tree cuts regions as wide as the failures are.
    max_depth : int
        Depth of the tree (conditions per rule).
    max_rules : int
    random_state : int

    Returns
    -------
    (rules, tree settings)
    """
    max_depth = check_int(max_depth, "max_depth", minimum=1)
    max_rules = check_int(max_rules, "max_rules", minimum=1)
    min_leaf = max(MIN_LEAF, int(0.02 * len(x)))
    settings = {"max_depth": max_depth, "min_samples_leaf": min_leaf, "n_pool": int(len(x))}
    ref = None
    if reference_x is not None and reference_failing is not None and len(reference_x) > 0:
        ref = (reference_x, reference_failing, reference_groups)
    base = float(np.mean(ref[1] if ref is not None else failing))
    paths = [(path, "examiner") for path in _leaf_paths(x, failing, names, max_depth, min_leaf, base, random_state)]
    if random_fit is not None:
        settings["n_random_pool"] = int(len(random_fit[0]))
        seen = {str(path) for path, _ in paths}
        paths += [(path, "random") for path in _leaf_paths(*random_fit, names, max_depth, MIN_LEAF, base, random_state)
                  if str(path) not in seen]
    rules: list[dict[str, Any]] = []
    for path, source in paths:
        inside = _in_region(x, path, names)
        rules.append({
            "conditions": path,
            "tree": source,
            "support": int(inside.sum()),
            "support_fraction": float(inside.mean()),
            "precision": float(np.mean(failing[inside])) if inside.any() else 0.0,
            "reference_support": None,
            "reference_precision": None,
            "lift": None, "lift_low": None, "lift_high": None, "lift_level": LIFT_CONFIDENCE,
            "n_candidates": 0, "supported": False, "confirmed": False,
        })
    for rule in rules:
        if ref is not None:
            _reference_numbers(rule, ref, names, len(rules), random_state)
        rule["text"] = rule_sentence(
            _conditions_text(rule["conditions"], bounds) or "anywhere", rule, base=base,
            n_base=len(ref[1]) if ref is not None else len(x), base_is_random=ref is not None)
    rules.sort(key=_rank)
    return rules[:max_rules], settings


def _leaf_paths(x: np.ndarray, failing: np.ndarray, names: list[str], max_depth: int, min_leaf: int, base: float,
                random_state: int) -> list[list[list[Any]]]:
    """The root-to-leaf tests of a decision tree on ``(x, failing)`` whose leaf fails more often than ``base``."""
    from sklearn.tree import DecisionTreeClassifier

    if len(x) < 2 * min_leaf or failing.all() or not failing.any():
        return []
    tree = DecisionTreeClassifier(max_depth=max_depth, min_samples_leaf=min_leaf, random_state=random_state)
    tree.fit(x, failing.astype(int))
    t = tree.tree_
    found: list[list[list[Any]]] = []
    stack: list[tuple[int, list[list[Any]]]] = [(0, [])]
    while stack:
        node, path = stack.pop()
        if t.children_left[node] != -1:
            name, threshold = names[t.feature[node]], float(t.threshold[node])
            stack.append((t.children_left[node], [*path, [name, "<=", threshold]]))
            stack.append((t.children_right[node], [*path, [name, ">", threshold]]))
            continue
        inside = _in_region(x, path, names)
        if path and inside.any() and float(np.mean(failing[inside])) > base:
            found.append(path)
    return found


def _reference_numbers(rule: dict[str, Any], ref: tuple[np.ndarray, np.ndarray, np.ndarray | None],
                       names: list[str], n_candidates: int, random_state: int) -> None:
    """The random reference queries in the rule's region: count, failures, lift and its interval."""
    inside = _in_region(ref[0], rule["conditions"], names)
    count, wrong = int(inside.sum()), int(ref[1][inside].sum())
    total, total_wrong = len(ref[1]), int(ref[1].sum())
    rule["reference_support"] = count
    rule["reference_precision"] = wrong / count if count else None
    rule["n_candidates"] = n_candidates
    if count and total_wrong:
        rule["lift"] = wrong / count / (total_wrong / total)
        level = 1.0 - (1.0 - LIFT_CONFIDENCE) / n_candidates
        low, high = lift_interval(wrong, count, total_wrong, total, level)
        groups = ref[2]
        if groups is not None and len(np.unique(groups)) >= MIN_GROUPS:
            boot = grouped_lift_interval(inside, ref[1], groups, level, random_state=random_state)
            low, high = (0.0, high) if boot is None else (min(low, boot[0]), max(high, boot[1]))
        rule["lift_low"], rule["lift_high"] = low, high
    rule["supported"] = count >= MIN_REFERENCE_SUPPORT
    rule["confirmed"] = bool(rule["supported"] and rule["lift_low"] is not None and rule["lift_low"] > 1.0)


#: fewest instances for the bootstrap over instances (below it, the lift interval is Katz's alone)
MIN_GROUPS = 10

#: bootstrap resamples of the instances
N_BOOTSTRAP = 2000


def grouped_lift_interval(inside: np.ndarray, failing: np.ndarray, groups: np.ndarray, confidence_level: float,
                          *, n_boot: int = N_BOOTSTRAP, random_state: int = 0) -> tuple[float, float] | None:
    """Percentile interval of the lift over bootstrap resamples of the instances (a cluster bootstrap).

    Each resample draws the instances with replacement and keeps all their
    reference queries; the lift is recomputed from the resample's counts
    (a resample without a failure, or without a query in the region, is
    dropped; None when every one is). Katz's interval (:func:`lift_interval`) treats the queries as
    independent, which they are not when they share an instance.
    """
    labels, index = np.unique(np.asarray(groups), return_inverse=True)
    wrong_in = np.bincount(index, weights=(inside & failing).astype(float), minlength=len(labels))
    n_in = np.bincount(index, weights=inside.astype(float), minlength=len(labels))
    wrong_all = np.bincount(index, weights=failing.astype(float), minlength=len(labels))
    n_all = np.bincount(index, minlength=len(labels)).astype(float)
    rng = np.random.default_rng(random_state)
    weights = rng.multinomial(len(labels), np.full(len(labels), 1.0 / len(labels)), size=n_boot).astype(float)
    a, b, c, d = weights @ wrong_in, weights @ n_in, weights @ wrong_all, weights @ n_all
    keep = (b > 0) & (c > 0)
    lifts = (a[keep] / b[keep]) / (c[keep] / d[keep])
    if not len(lifts):
        return None
    alpha = 1.0 - confidence_level
    low, high = np.quantile(lifts, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def lift_interval(wrong_in: int, n_in: int, wrong_all: int, n_all: int,
                  confidence_level: float = LIFT_CONFIDENCE) -> tuple[float, float]:
    """Interval of a region's lift ``(wrong_in / n_in) / (wrong_all / n_all)`` among random queries.

    The region's ``n_in`` queries are part of all ``n_all``; with ``w =
    n_in / n_all`` and the risk ratio ``RR`` of failing inside vs outside
    the region, ``lift = RR / (w RR + 1 - w)``, increasing in RR, so
    Katz's log interval of RR (Katz, Baptista, Azen, Pike, Biometrics 1978;
    scipy's ``relative_risk``), with Haldane's 0.5 added to every cell when
    a count is zero, maps to an interval of the lift. A region holding
    every query has lift 1 exactly.
    """
    from scipy import stats

    n_out, wrong_out = n_all - n_in, wrong_all - wrong_in
    if n_out <= 0:
        return 1.0, 1.0
    a, b, c, d = float(wrong_in), float(n_in), float(wrong_out), float(n_out)
    if a == 0 or c == 0:
        a, b, c, d = a + 0.5, b + 1.0, c + 0.5, d + 1.0
    z = float(stats.norm.ppf(0.5 + confidence_level / 2))
    log_rr = np.log(a / b) - np.log(c / d)
    se = float(np.sqrt(1 / a - 1 / b + 1 / c - 1 / d))
    w = n_in / n_all
    ends = np.exp([log_rr - z * se, log_rr + z * se])
    low, high = ends / (w * ends + 1.0 - w)
    return float(low), float(high)


def rule_sentence(region: str, rule: dict[str, Any], *, base: float, n_base: int, base_is_random: bool) -> str:
    """The one sentence of a weakness rule, with every count behind it.

    ``"rotation > 21 and contrast <= 0.7: 64% wrong (n = 212) vs 8% of random
    queries (n = 1,800); random queries in the region: 20 of 50 wrong, lift
    5.0 (95% interval 2.9-7.6 over 3 regions)"``: the share of the
    examiner queries in the region that are wrong,
    against the failure rate ``base`` of the ``n_base`` uniform random
    reference queries (or, without them, of all examiner queries), then the
    random queries inside the region, their failures and the lift.
    """
    text = f"{region}: {rule['precision']:.0%} wrong (n = {int(rule['support']):,})"
    if not base_is_random:
        return text + f" vs {base:.0%} of all examiner queries (n = {n_base:,})"
    text += f" vs {base:.0%} of random queries (n = {n_base:,})"
    count, share = rule.get("reference_support"), rule.get("reference_precision")
    if count and share is not None:
        lift = ""
        if rule.get("lift") is not None:
            lift = f", lift {float(rule['lift']):.1f}"
            if rule.get("lift_low") is not None:
                regions = int(rule.get("n_candidates") or 1)
                lift += (f" ({float(rule.get('lift_level', LIFT_CONFIDENCE)):.0%} interval "
                         f"{float(rule['lift_low']):.2g}-{float(rule['lift_high']):.2g}"
                         + (f" over {regions} regions)" if regions > 1 else ")"))
        text += f"; random queries in the region: {round(float(share) * int(count)):,} of {int(count):,} wrong{lift}"
    elif count is not None:
        text += "; no random query falls in the region"
    return text


def _rank(rule: dict[str, Any]) -> tuple[float, ...]:
    """Confirmed rules first, then the other supported ones, each by lift; the rest by precision."""
    if rule["supported"]:
        group = 0.0 if rule["confirmed"] else 1.0
        return (group, -(rule["lift"] or 0.0), -float(rule["reference_support"]), -rule["precision"])
    return (2.0, -rule["precision"], -float(rule["support"]), 0.0)


def factor_histograms(
    space: Any, failing_x: np.ndarray, reference_x: np.ndarray, reference_failing: np.ndarray, n_bins: int = 10
) -> tuple[dict[str, Any], dict[str, float]]:
    """Per-factor histograms of failing vs reference queries, and the concentration (TV distance) per factor."""
    histograms: dict[str, Any] = {}
    concentration: dict[str, float] = {}
    for c, factor in enumerate(space.factors):
        high = factor.high if factor.high > factor.low else factor.low + 1.0
        edges = np.linspace(factor.low, high, n_bins + 1)
        fail, _ = np.histogram(failing_x[:, c], bins=edges)
        ref, _ = np.histogram(reference_x[:, c], bins=edges)
        ref_fail, _ = np.histogram(reference_x[reference_failing, c], bins=edges)
        histograms[factor.name] = {
            "edges": edges, "failing": fail, "reference": ref, "reference_failing": ref_fail,
        }
        if fail.sum() and ref.sum():
            concentration[factor.name] = float(0.5 * np.abs(fail / fail.sum() - ref / ref.sum()).sum())
    concentration = dict(sorted(concentration.items(), key=lambda kv: -kv[1]))
    return histograms, concentration


def weakness_report(
    result: Any,
    *,
    max_depth: int = 2,
    max_rules: int = 5,
    n_bins: int = 10,
    max_pool: int = 20000,
    random_state: int = 0,
) -> WeaknessReport:
    """The weakness report of an :class:`~fitaudit.examine.result.ExaminationResult`.

    Parameters
    ----------
    result : ExaminationResult
        With its query logs (``queries`` and ``reference_queries``).
    max_depth : int
        Depth of the decision tree (at most this many conditions per rule).
    max_rules : int
    n_bins : int
        Bins per factor of the histograms.
    max_pool : int
        The tree is fitted on at most this many examiner queries (a random
        subset); half of the reference queries teach the second tree, the
        other half are held out of both fits and confirm the rules.
    random_state : int
    """
    if not result.queries:
        raise InputError("`result` has no query log (it was saved without queries); re-run the examination.")
    n_bins = check_int(n_bins, "n_bins", minimum=1)
    max_pool = check_int(max_pool, "max_pool", minimum=1)
    names = list(result.factor_names)
    space = result.space()
    q, r = result.queries, result.reference_queries
    x = np.column_stack([q[name] for name in names])
    failing = q["predicted"] != q["label"]
    ref_x = np.column_stack([r[name] for name in names]) if r and len(r["label"]) else np.zeros((0, len(names)))
    ref_failing = (r["predicted"] != r["label"]) if len(ref_x) else np.zeros(0, dtype=bool)
    rng = np.random.default_rng(random_state)
    keep = rng.permutation(len(x))[:max_pool] if len(x) > max_pool else slice(None)
    ref_groups = np.asarray(r["instance"]) if len(ref_x) else np.zeros(0, dtype=np.int64)
    fit = fitting_half(ref_groups)
    rules, tree = failure_rules(
        x[keep], failing[keep], names, reference_x=ref_x[~fit], reference_failing=ref_failing[~fit],
        reference_groups=ref_groups[~fit] if len(ref_x) else None, random_fit=(ref_x[fit], ref_failing[fit]),
        bounds={f.name: (f.low, f.high) for f in space.factors}, max_depth=max_depth, max_rules=max_rules, random_state=random_state,
    )
    histograms, concentration = factor_histograms(
        space, np.concatenate([x[failing], ref_x[ref_failing]]), ref_x, ref_failing, n_bins
    )
    return WeaknessReport(
        factor_names=names,
        n_examined=int(len(x)),
        n_reference=int(len(ref_x)),
        failure_rate_examined=float(failing.mean()),
        failure_rate_reference=float(ref_failing.mean()) if len(ref_x) else None,
        histograms=histograms,
        concentration=concentration,
        rules=rules,
        tree=tree,
    )


def fitting_half(groups: np.ndarray) -> np.ndarray:
    """Which reference queries the random queries' tree learns from: every second one of each instance's.

    The reference queries draw their factors independently and uniformly, so
    the split is a random one; each instance keeps half its queries on either
    side (the first, third, ... confirm), so the confirming half still holds
    every instance for the bootstrap over instances.
    """
    groups = np.asarray(groups)
    rank = np.zeros(len(groups), dtype=np.int64)
    for group in np.unique(groups):
        rows = np.flatnonzero(groups == group)
        rank[rows] = np.arange(len(rows))
    return rank % 2 == 1
