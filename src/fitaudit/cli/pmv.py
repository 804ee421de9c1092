"""``fitaudit pmv``: the PMV score of a scikit-learn classifier on a data set.

Examples::

    fitaudit pmv --dataset breast_cancer --estimator decision_tree --param max_depth=3
    fitaudit pmv --data train.npz --estimator svc_rbf --scale --param C=10 --json
    fitaudit pmv --data train.npz --model my_estimator.skops
    fitaudit pmv --dataset wine --estimator logistic_regression --estimator decision_tree --compare-cv
    fitaudit pmv --list
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit._validation import check_int
from fitaudit.cli._common import (
    TRUST_CODE_HELP,
    USER_GUIDE,
    add_dask_option,
    add_seed,
    add_table_options,
    data_file,
    examples,
    option_help,
    out_folder,
    refuse_table_options,
)
from fitaudit.data.tables import is_table_file


def _rates(text: str) -> list[Any]:
    from fitaudit.pmv.catalogue import parse_param_value

    return [parse_param_value(part) for part in text.split(",") if part.strip()]


def user_estimator(path: str, *, trust_code: bool = False) -> tuple[Any, str]:
    """An unfitted clone of the scikit-learn estimator saved in ``path`` (.skops), and its class name."""
    from sklearn.base import clone

    from fitaudit.models.formats import FORMATS
    from fitaudit.models.formats.skops import load_skops

    if not FORMATS["skops"].recognises(Path(path)):
        raise InputError(f"`--model` must be a scikit-learn estimator saved with skops (.skops); got {path!r}.")
    loaded = load_skops(data_file(path, "--model"), name="--model", trust_code=trust_code)
    try:
        estimator = clone(loaded)
    except TypeError as exc:
        raise InputError(f"`--model`: {path!r} holds a {type(loaded).__name__}, not a scikit-learn estimator.") from exc
    return estimator, type(loaded).__name__


def run_pmv(args: argparse.Namespace) -> Any:
    """Handler of ``fitaudit pmv``."""
    from fitaudit.pmv.catalogue import DATASETS, ESTIMATORS, load_dataset
    from fitaudit.pmv.search import MAX_REPEATS

    if args.list:
        return {"estimators": sorted(ESTIMATORS), "datasets": sorted(DATASETS)}
    n_repeats = check_int(args.n_repeats, "--n-repeats", minimum=1, maximum=MAX_REPEATS)  # before any work
    if (not args.estimator) == (args.model is None):
        raise InputError(
            "give exactly one of `--estimator NAME` (see `fitaudit pmv --list`) and `--model FILE.skops`."
        )
    if (args.data is None) == (args.dataset is None):
        raise InputError("give exactly one of `--data FILE.npz` and `--dataset NAME`.")
    learners = _learners(args)
    if args.compare_cv and len(learners) < 2:
        raise InputError("`--compare-cv` compares PMV's choice among learners with 5-fold cross-validation's: give "
                         f"at least two `--estimator`; got {len(learners)} learner.")
    if args.data is not None and is_table_file(args.data):  # the learner takes the table as it is
        from fitaudit.data.tables import read_table, split_label

        X, y = split_label(read_table(data_file(args.data), name="--data"), args.label, args.features, name="--data",
                           label_option="--label", features_option="--features")
    elif args.data is not None:
        from fitaudit.data.io import read_npz, validate_dataset
        from fitaudit.models.labels import LabelSet

        refuse_table_options(args, "--data (.npz)")
        X, y = read_npz(data_file(args.data), name="--data")
        y = LabelSet(2, any_labels=True).encode(y, "--data['y']")  # PMV retrains: any labels do (strings too)
        X, y = validate_dataset(X, y, name_x="--data['x']", name_y="--data['y']")
        X = X.reshape(len(X), -1)
    else:
        refuse_table_options(args, "--dataset")
        X, y = load_dataset(args.dataset)
    checkpoint_dir = None if args.checkpoint_dir is None else out_folder(args.checkpoint_dir, "--checkpoint-dir")
    options = {"rates": _rates(args.rates) if args.rates else None, "n_repeats": n_repeats, "scheme": args.scheme,
               "criterion": args.criterion, "delta": args.delta, "random_state": args.seed, "n_jobs": args.n_jobs,
               "progress": not args.quiet, "checkpoint_dir": checkpoint_dir}
    try:
        if len(learners) > 1:
            from fitaudit.pmv.compare import compare_estimators

            return compare_estimators(learners, X, y, cv_check=args.compare_cv, **options)
        from fitaudit.pmv.score import pmv_score

        return pmv_score(next(iter(learners.values())), X, y, **options)
    except InputError:
        raise
    except ValueError as exc:  # the learner refused its parameters (scikit-learn's validation)
        raise InputError(f"{', '.join(learners)} could not be trained with these parameters: {exc}") from exc


def _learners(args: argparse.Namespace) -> dict[str, Any]:
    """Name -> unfitted learner: the catalogue's ``--estimator`` names (several to compare) or ``--model``."""
    from fitaudit.pmv.catalogue import make_estimator, parse_params

    if args.model is not None:
        estimator, name = user_estimator(args.model, trust_code=args.trust_code)
        named = {name: estimator}
    else:
        if len(set(args.estimator)) != len(args.estimator):
            raise InputError(f"`--estimator` names must differ; got {', '.join(args.estimator)}.")
        named = {name: make_estimator(name) for name in args.estimator}
    if args.param and len(named) > 1:
        raise InputError(f"`--param` sets the parameters of one learner; got {len(named)} `--estimator`.")
    for name, estimator in named.items():
        estimator.set_params(**parse_params(args.param, estimator, name))
    if args.scale:
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        named = {name: make_pipeline(StandardScaler(), estimator) for name, estimator in named.items()}
    return named


def verdict(result: Any) -> str:
    """The reading of the score (:func:`fitaudit.report.pmv_words.say_pmv`) after the learner: its headline, then
    its details on the next line."""
    from fitaudit.report.pmv import pmv_reading

    return pmv_reading(result, lines=True)


def summary(result: Any) -> str:
    """The verdict and the numbers behind it (or the catalogue for ``--list``)."""
    if isinstance(result, dict):
        return (
            "Estimators: " + ", ".join(result["estimators"]) + "\nData sets: " + ", ".join(result["datasets"])
        )
    if not hasattr(result, "rates"):  # several learners: PMV's choice, the table and one reading each
        from fitaudit.report.pmv import comparison_markdown

        return f"{comparison_markdown(result)}\n\nHow to read the scores: {USER_GUIDE}."
    rates = ", ".join(f"{r:g}" for r in result.rates)
    accuracies = ", ".join(f"{a:.3f}" for a in result.mean_accuracy)
    return "\n".join(
        [
            verdict(result),
            "",
            f"  noise rates r      {rates}",
            f"  training accuracy  {accuracies}",
            f"  slope k_S {result.slope:.4f}, risk bound {result.bound:.4f} at delta = {result.delta:g} "
            f"(m = {result.n_train}, {result.n_repeats} perturbation(s) per rate, {result.fit_seconds:.1f} s of fits)",
            "",
            f"Scores compare learners on the same data; how to read them: {USER_GUIDE}.",
        ]
    )


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit pmv``."""
    parser = subparsers.add_parser(
        "pmv",
        parents=parents,
        **examples("fitaudit pmv --dataset breast_cancer --estimator decision_tree --param max_depth=3",
                   "fitaudit pmv --data train.csv --label target --model my_estimator.skops",
                   "fitaudit pmv --list"),
        help="perturbed model validation score of a scikit-learn classifier",
        description=(
            "Retrain a classifier on copies of the data with 0..50% of each class's labels "
            "flipped; the score |k_S| is how fast training accuracy falls (Zhang et al. 2019). "
            "Large = good fit; near 0 = memorises noise or cannot fit. The learner is a catalogue "
            "classifier (--estimator, see --list) or your own scikit-learn estimator saved with skops "
            f"(--model; retrained as a clone with its parameters). How to read |k_S|: {USER_GUIDE}."
        ),
    )
    source = parser.add_argument_group("data (one of)")
    source.add_argument("--data", help=option_help("--data", "the data the learner is fitted on"))
    source.add_argument("--dataset", help="built-in data set (see --list)")
    add_table_options(parser)
    learner = parser.add_argument_group("learner (one of)")
    learner.add_argument("--estimator", action="append", default=[],
                         help="catalogue classifier (see --list); repeat it to compare learners on the same "
                              "perturbed sets")
    learner.add_argument(
        "--model", help="your scikit-learn estimator saved with skops (.skops); refitted as a clone"
    )
    learner.add_argument("--trust-code", action="store_true", help=TRUST_CODE_HELP)
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set an estimator parameter (repeatable); VALUE is None, True, False, a JSON value "
        "(3, 0.5, null, [10, 20]) or else a string",
    )
    parser.add_argument("--scale", action="store_true", help="standardise features first (a Pipeline)")
    parser.add_argument("--compare-cv", action="store_true",
                        help="with several --estimator: also score each by 5-fold cross-validation on the same data "
                             "and report cross-validation's choice beside PMV's (5 more fits per learner)")
    parser.add_argument("--rates", help="comma-separated noise rates in (0, 0.5] (default 0.05, 0.1, ..., 0.5)")
    parser.add_argument("--n-repeats", type=int, default=1, help="perturbations per rate (default 1, at most 1000)")
    parser.add_argument(
        "--scheme", default="next", help="multi-class relabelling: next (default) or random"
    )
    parser.add_argument(
        "--criterion",
        default="pmv",
        help="pmv (|k_S|, default) or mutation (the single-rate mutation score, eta 0.2)",
    )
    parser.add_argument("--delta", type=float, default=0.05, help="confidence of the risk bound (default 0.05)")
    add_seed(parser, "the label perturbations and of unseeded estimators")
    parser.add_argument("--n-jobs", type=int, default=None, help="parallel fits (joblib; -1: all cores)")
    add_dask_option(parser, "the fits")
    parser.add_argument(
        "--checkpoint-dir", default=None, help="folder of finished fits: a rerun resumes from it"
    )
    parser.add_argument("--list", action="store_true", help="list catalogue estimators and data sets")
    parser.set_defaults(handler=run_pmv, summary=summary)
