"""``fitaudit pmv``: the PMV score of a catalogue classifier on a data set.

Examples::

    fitaudit pmv --dataset breast_cancer --estimator decision_tree --param max_depth=3
    fitaudit pmv --data train.npz --estimator svc_rbf --scale --param C=10 --json
    fitaudit pmv --list
"""

from __future__ import annotations

import argparse
from typing import Any

from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fitaudit._errors import InputError
from fitaudit.pmv.catalogue import (
    DATASETS,
    ESTIMATORS,
    load_dataset,
    make_estimator,
    parse_param_value,
    parse_params,
)
from fitaudit.pmv.score import pmv_score


def _rates(text: str) -> list[Any]:
    return [parse_param_value(part) for part in text.split(",") if part.strip()]


def _handler(args: argparse.Namespace) -> Any:
    if args.list:
        return {"estimators": sorted(ESTIMATORS), "datasets": sorted(DATASETS)}
    if args.estimator is None:
        raise InputError("`--estimator` is required (see `fitaudit pmv --list`).")
    if (args.data is None) == (args.dataset is None):
        raise InputError("give exactly one of `--data FILE.npz` and `--dataset NAME`.")
    estimator = make_estimator(args.estimator)
    estimator.set_params(**parse_params(args.param, estimator, args.estimator))
    if args.scale:
        estimator = make_pipeline(StandardScaler(), estimator)
    if args.data is not None:
        from fitaudit.data.io import load_npz

        X, y = load_npz(args.data, name="--data")
        X = X.reshape(len(X), -1)
    else:
        X, y = load_dataset(args.dataset)
    try:
        return pmv_score(
            estimator,
            X,
            y,
            rates=_rates(args.rates) if args.rates else None,
            n_repeats=args.n_repeats,
            scheme=args.scheme,
            criterion=args.criterion,
            random_state=args.seed,
            n_jobs=args.n_jobs,
            progress=not args.quiet,
            checkpoint_dir=args.checkpoint_dir,
        )
    except InputError:
        raise
    except ValueError as exc:  # the learner refused its parameters (scikit-learn's validation)
        raise InputError(
            f"{args.estimator} could not be trained with these parameters: {exc}"
        ) from exc


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit pmv``."""
    parser = subparsers.add_parser(
        "pmv",
        parents=parents,
        help="perturbed model validation score of a scikit-learn classifier",
        description=(
            "Retrain a classifier on copies of the data with 0..50% of each class's labels "
            "flipped; the score |k_S| is how fast training accuracy falls (Zhang et al. 2019). "
            "Large = good fit; near 0 = memorises noise or cannot fit."
        ),
    )
    source = parser.add_argument_group("data (one of)")
    source.add_argument("--data", help=".npz file with arrays x (features) and y (integer labels)")
    source.add_argument("--dataset", help=f"built-in data: {', '.join(DATASETS)}")
    parser.add_argument("--estimator", help="catalogue classifier (see --list)")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="estimator parameter (repeatable)",
    )
    parser.add_argument(
        "--scale", action="store_true", help="standardise features first (a Pipeline)"
    )
    parser.add_argument(
        "--rates", help="comma-separated noise rates in (0, 0.5] (default 0.05..0.5)"
    )
    parser.add_argument("--n-repeats", type=int, default=1, help="perturbations per rate")
    parser.add_argument("--scheme", default="next", help="multi-class relabelling: next or random")
    parser.add_argument(
        "--criterion", default="pmv", help="pmv (|k_S|) or mutation (single rate, eta 0.2)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the label perturbations")
    parser.add_argument("--n-jobs", type=int, default=None, help="parallel fits (joblib)")
    parser.add_argument("--checkpoint-dir", default=None, help="resume folder for finished fits")
    parser.add_argument(
        "--list", action="store_true", help="list catalogue estimators and data sets"
    )
    parser.set_defaults(handler=_handler)
