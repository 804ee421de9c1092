"""``fitaudit reproduce NAME``: re-run one of the papers' experiments.

Every reproduction is a library function (``fitaudit.experiments.<instrument>``)
returning a result; this command runs it with its checkpoints in
``OUT/checkpoints`` (a rerun resumes), writes ``NAME-MODE.json``, ``.md``
and ``.png`` to ``OUT`` (:func:`fitaudit.report.save_reproduction`)
and prints the findings.

To add a reproduction: a library function in :mod:`fitaudit.experiments`
taking the shared :class:`~fitaudit.experiments.base.Options` (or
``ParallelOptions``, with ``n_jobs``) and its own, holding them in a
:class:`fitaudit.experiments.base.Run` (mode, clock, checkpoints), that
returns a :class:`~fitaudit.results.Result` with ``experiment``, ``mode``
and ``seconds`` fields; a ``"markdown"`` renderer (with a ``brief`` option)
and a ``"figure"`` renderer for it in :mod:`fitaudit.report` (in its module's
``RENDERERS``); the function in :data:`fitaudit.experiments.catalogue.FUNCTIONS`
and the command's help and modes in :data:`REPRODUCTIONS`, under one name.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fitaudit.cli._common import (
    USER_GUIDE,
    add_dask_option,
    add_device_option,
    add_seed,
    examples,
    option_help,
    out_folder,
)


def _synthetic_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repetitions", type=int, default=None, help="override the mode's repetitions")
    parser.add_argument("--steps", type=int, default=None, help="override the mode's RMSProp steps")


def _examiner_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--models-dir", default=str(Path("fitaudit-out") / "examiner-models"),
        help="cache of the reference models the examiner reproductions share (trained on first use)",
    )


@dataclasses.dataclass(frozen=True)
class Reproduction:
    """One ``fitaudit reproduce`` experiment.

    Attributes
    ----------
    name : str
        The command name (also the result's ``experiment``), the key of its
        library function in :data:`fitaudit.experiments.catalogue.FUNCTIONS`;
        the function takes ``mode``, ``checkpoint_dir``, ``random_state`` and
        ``progress`` (and ``n_jobs`` when :attr:`parallel`, ``device`` when
        :attr:`torch`).
    help, description : str
        Plain-text help.
    modes : dict
        Mode name -> help text of its flag (``--quick``, ``--full``); the
        default mode has no flag.
    default_mode : str
    parallel : bool
        Whether it takes ``--n-jobs``.
    torch : bool
        Whether it trains or runs torch models: then it takes ``--device``
        (passed as ``device``). The others (numpy logistic models,
        scikit-learn) run on the CPU and have no ``--device``.
    options : callable, optional
        Adds further options, passed by name to the function when given.
    option_names : tuple of str
    """

    name: str
    help: str
    description: str
    modes: dict[str, str]
    default_mode: str = "full"
    parallel: bool = True
    torch: bool = False
    options: Callable[[argparse.ArgumentParser], None] | None = None
    option_names: tuple[str, ...] = ()


REPRODUCTIONS: tuple[Reproduction, ...] = (
    Reproduction(
        name="overfit-synthetic",
        help="Fig. 4 of Werpachowski et al. (2019): N-model test p-values against eps",
        description=(
            "Average p-value of the N-model overfitting test against the adversarial step eps on the "
            "Gaussian-margin problem (d = 500, logistic models trained with RMSProp), for a model "
            "trained on half of its test set (dependent) and one trained on fresh data (independent). "
            "Default mode: 10 repetitions, 1,000 steps (about 3 minutes on 2 cores)."
        ),
        modes={
            "quick": "2 repetitions, N <= 10, 300 steps (seconds)",
            "full": "the paper's 100 repetitions x 50,000 steps (hours; use --n-jobs)",
        },
        default_mode="medium",
        options=_synthetic_options,
        option_names=("repetitions", "steps"),
    ),
    Reproduction(
        name="overfit-shapes",
        help="Fig. 5 of Werpachowski et al. (2019) on the Shapes world: p-value against sample size",
        description=(
            "Trains a Shapes CNN on free-position renders of 4 classes and runs the four translational "
            "AEGs on its training set and on held-out objects; reports the pairwise and "
            "confidence-interval tests' p-values against the sample size. Full mode: about 14 minutes "
            "on 2 cores."
        ),
        modes={"quick": "16x16 images, a narrow CNN, 128 training images (about 20 s)"},
        parallel=False,
        torch=True,
    ),
    Reproduction(
        name="overfit-imagefolder",
        help="Sec. 5 of Werpachowski et al. (2019) as a user runs it: image folders, ONNX, fitaudit overfit --images",
        description=(
            "Writes the Shapes world as image folders (JPEG and PNG renders twice the size of the "
            "resized images), trains a CNN on the training folder through the evaluation pipeline "
            "(resize, centre crop), exports it to ONNX with its classes and pipeline, and runs "
            "`fitaudit overfit --model cnn.onnx --images FOLDER` on the training folder (expected: "
            "rejected) and on a folder of unseen objects (expected: not rejected)."
        ),
        modes={"quick": "16x16 crops, a narrow CNN, 128 training images (under a minute)"},
        parallel=False,
        torch=True,
    ),
    Reproduction(
        name="pmv-comparison",
        help="PMV against 10-fold CV on scikit-learn's classifier comparison (Zhang et al. 2019)",
        description=(
            "The PMV score |k_S| and 10-fold cross-validation of the eight classifiers of "
            "scikit-learn's classifier-comparison example (plus an unbounded decision tree) on moons, "
            "circles and linearly separable data with 0, 10% and 20% injected label noise, and the "
            "classifier each method selects."
        ),
        modes={"quick": "moons without extra noise, 3 rates, 3 folds (seconds)"},
    ),
    Reproduction(
        name="pmv-tree-depth",
        help="a decision tree's max_depth chosen by PMV and by GridSearchCV (Zhang et al. 2019)",
        description=(
            "Five 70/30 splits of breast cancer and digits, on all training data and on a 5% "
            "subsample: max_depth in 1..15 or None chosen by PMV, by the mutation score and by "
            "10-fold GridSearchCV; the chosen depths, their spread and the held-out accuracy."
        ),
        modes={"quick": "breast cancer, 5 depths, 2 runs, 3 folds (seconds)"},
    ),
    Reproduction(
        name="pmv-mlp-width",
        help="an MLP's hidden width by PMV against a validation curve (Zhang et al. 2019)",
        description=(
            "One hidden layer of width 10..800 on scikit-learn's 8x8 digits 0 and 1: the PMV score "
            "of each width against its error on a 70/30 validation split."
        ),
        modes={"quick": "widths 5 and 20, 2 rates (seconds)"},
    ),
    *(
        Reproduction(
            name=f"examiner-{name}",
            help=help_text,
            description=description,
            modes={"quick": "tiny models and a few steps (seconds)"},
            torch=True,
            options=_examiner_options,
            option_names=("models_dir",),
        )
        for name, help_text, description in (
            ("table", "Table 2 of Shu et al. (2020) on Shapes: RL / BO / random at T = 0, 100, 300, 500",
             "Two Shapes CNN families examined by the RL, BO and random examiners over the paper's nine "
             "factors; mean true-class probability at T = 0, 100, 300, 500 next to the paper's numbers."),
            ("renders", "Shu et al. (2020): models trained with m = 1, 2, 5, 10 renders per object, T = 200",
             "Shapes CNNs trained with m renders per object, examined by RL and BO at T = 200."),
            ("planted", "Shu et al. (2020): the planted weakness (training elevation limited to [-30, 30])",
             "A Shapes CNN trained with camera elevation in [-30, 30] degrees, examined over the full range: "
             "where the failing queries of each examiner and of random sampling lie, and the weakness rules."),
            ("variants", "Shu et al. (2020): the RL examiner's factor order, and strength mode",
             "RL with two factor orders, and RL and BO minimising the loss (model strength)."),
        )
    ),
    Reproduction(
        name="examiner-images",
        help="image models on their own test images: examiners against the exact grid of Engstrom et al. (2019)",
        description=(
            "Two CNNs trained on image folders of upsampled digits, with and without rotation augmentation, "
            "examined on correctly classified test digits over rotation and translation: the exact worst "
            "case of the 775-point grid (31 rotations x 5 x 5 translations), every examiner at 78 queries "
            "per image against it, and the weakness rules. Known answer: the augmented model is more robust "
            "to rotation, and the rules of the other name rotation."
        ),
        modes={"quick": "16 px crops, 600 training digits, 10 images per model, bo and random (under a minute)"},
        torch=True,
        options=_examiner_options,
        option_names=("models_dir",),
    ),
)


def summary(result: Any, *, files: dict[str, str]) -> str:
    """The reproduction's findings and the files written."""
    from fitaudit.report import render

    return (
        render(result, "markdown", brief=True)
        + f"\n\n{result.seconds:.0f} s. Tables and figure: "
        + ", ".join(files.values())
    )


def run_reproduction(args: argparse.Namespace) -> Any:
    """Handler of ``fitaudit reproduce NAME``: run, save, return the result."""
    from fitaudit.experiments.catalogue import (
        FUNCTIONS,  # here: the experiments import scikit-learn and scipy
    )
    from fitaudit.report import save_reproduction

    spec: Reproduction = args.reproduction
    folder = out_folder(args.out)
    function = FUNCTIONS[spec.name]
    kwargs = {option: getattr(args, option) for option in spec.option_names}
    if spec.torch:  # checked with the other options, before any work
        kwargs["device"] = args.device
    if spec.parallel:
        kwargs["n_jobs"] = args.n_jobs
    result = function(
        mode=args.mode,
        checkpoint_dir=folder / "checkpoints",
        random_state=args.seed,
        progress=not args.quiet,
        **kwargs,
    )
    files = save_reproduction(result, folder)
    args.summary = functools.partial(summary, files=files)
    return result


def _add_reproduction(experiments: Any, spec: Reproduction, parents: list[argparse.ArgumentParser]) -> None:
    mode = next(iter(spec.modes))
    parser = experiments.add_parser(spec.name, parents=parents, help=spec.help, description=spec.description,
                                    **examples(f"fitaudit reproduce {spec.name} --{mode}",
                                               f"fitaudit reproduce {spec.name} --out results/{spec.name} --seed 1"))
    flags = parser.add_mutually_exclusive_group()
    for mode, text in spec.modes.items():
        flags.add_argument(f"--{mode}", dest="mode", action="store_const", const=mode, help=text)
    parser.add_argument(
        "--out",
        default=str(Path("fitaudit-out") / spec.name),
        help=option_help("--out", f"a folder: the JSON, markdown table, PNG and the checkpoints a rerun resumes "
                         f"from; default fitaudit-out/{spec.name}"),
    )
    add_seed(parser, "the whole experiment")
    if spec.parallel:
        parser.add_argument("--n-jobs", type=int, default=None, help="parallel units (joblib; -1: all cores)")
        add_dask_option(parser, "the parallel units")
    if spec.torch:
        add_device_option(parser)
    if spec.options is not None:
        spec.options(parser)
    parser.set_defaults(handler=run_reproduction, reproduction=spec, mode=spec.default_mode, out_is_folder=True)


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit reproduce`` and one subcommand per reproduction."""
    reproduce = subparsers.add_parser(
        "reproduce",
        **examples("fitaudit reproduce overfit-synthetic --quick", "fitaudit reproduce pmv-tree-depth --quick",
                   "fitaudit reproduce examiner-table --out results/examiner-table"),
        help="re-run a paper's experiment (JSON, markdown table, PNG)",
        description=(
            "Re-run one of the papers' experiments. Each writes NAME-MODE.json, .md and .png to --out "
            f"and prints its findings; the measured full-mode numbers are discussed in {USER_GUIDE}."
        ),
    )
    experiments = reproduce.add_subparsers(
        dest="experiment", metavar="EXPERIMENT", parser_class=type(reproduce), required=True
    )
    for spec in REPRODUCTIONS:
        _add_reproduction(experiments, spec, parents)
