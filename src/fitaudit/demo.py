"""``fitaudit demo``: the instruments end to end on built-in data.

Three audits whose right answers are known in advance, so a reader can see
what each instrument says when a score can and cannot be trusted:

1. **Overfitting test, synthetic** (Werpachowski et al. 2019, Appendix A):
   on the Gaussian-margin problem, a logistic model trained on independent
   data and one trained on half of the very test set it is scored on (with
   the informative coordinate penalised), each tested on that test set with
   the linear-gradient AEG. Expected: only the second is rejected.
2. **Overfitting test, Shapes world** (Sec. 5): a Shapes CNN trained on
   free-position renders, tested with the strongest translational AEG on a
   sample of its own training set and on held-out objects. Expected: the
   training sample is rejected, the held-out sample is not.
3. **Perturbed model validation** (Zhang et al. 2019): scikit-learn
   learners on ``make_moons`` ranked by |k_S|. Expected: the unbounded
   decision tree, which memorises flipped labels, scores near 0.

Everything is written to ``--out`` (``demo.json``); the CNN is checkpointed
there, so a second run resumes instead of retraining.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit.random import spawn_seeds
from fitaudit.results import Result

#: sizes of the demo (``quick`` is used by the tests)
SETTINGS: dict[str, dict[str, Any]] = {
    "quick": {"dim": 50, "n_test": 400, "steps": 300, "shapes_objects": 6, "renders": 4,
              "epochs": 3, "audited": 96, "pmv_samples": 120},
    "default": {"dim": 500, "n_test": 2000, "steps": 5000, "shapes_objects": 30, "renders": 4,
                "epochs": 40, "audited": 480, "pmv_samples": 300},
}

SHAPES_CLASSES = ["sphere", "cube", "torus", "star"]


@dataclasses.dataclass(repr=False)
class DemoResult(Result):
    """The three audits of ``fitaudit demo``; each entry holds p-values or scores."""

    mode: str
    overfit_synthetic: dict[str, Any]
    overfit_shapes: dict[str, Any]
    pmv: dict[str, Any]
    seconds: float

    def __repr__(self) -> str:
        lines = [f"fitaudit demo ({self.mode}, {self.seconds:.0f} s)", "", "Overfitting test, synthetic:"]
        for name, entry in self.overfit_synthetic["models"].items():
            lines.append(f"  {name:12s} error {entry['error_rate']:.3f}  p = {entry['pvalue']:.3g}")
        shapes = self.overfit_shapes
        lines += ["", f"Overfitting test, Shapes CNN (train acc {shapes['train_accuracy']:.3f}, "
                  f"held-out acc {shapes['test_accuracy']:.3f}):"]
        for name, entry in shapes["samples"].items():
            lines.append(f"  {name:12s} error {entry['error_rate']:.3f}  p = {entry['pvalue']:.3g}")
        lines += ["", "Perturbed model validation on make_moons (larger |k_S| = better fit):"]
        for name, score in self.pmv["scores"].items():
            mark = "  <- selected" if name == self.pmv["best"] else ""
            lines.append(f"  {name:22s} |k_S| = {score:.3f}{mark}")
        return "\n".join(lines)


def _summary(test: Any) -> dict[str, Any]:
    return {"error_rate": test.error_rate, "adversarial_risk": test.risk_adversarial,
            "pvalue": test.pvalue, "reject": test.reject, "n_success": test.n_success,
            "m": test.m, "warnings": test.warnings}


def synthetic_audit(setting: dict[str, Any], seed: int) -> dict[str, Any]:
    """Independent vs test-set-trained logistic models on the Gaussian-margin data."""
    from fitaudit.data import GaussianMargin
    from fitaudit.overfit import LinearGradientAEG, overfit_test, train_logistic_models

    data_seed, fresh_seed, fit_seed = spawn_seeds(seed, 3)
    dist = GaussianMargin(d=setting["dim"])
    x_test, y_test = dist.sample(setting["n_test"], random_state=data_seed)
    x_fresh, y_fresh = dist.sample(500, random_state=fresh_seed)
    half = setting["n_test"] // 2
    independent = train_logistic_models(x_fresh, y_fresh, steps=setting["steps"], random_state=fit_seed)[0]
    dependent = train_logistic_models(
        x_test[:half], y_test[:half], steps=setting["steps"], first_coordinate_penalty=1e4,
        random_state=fit_seed,
    )[0]
    eps = 10.0
    models = {"independent": independent, "dependent": dependent}
    return {
        "eps": eps, "dim": setting["dim"], "m": setting["n_test"],
        "models": {
            name: _summary(overfit_test(model, x_test, y_test, LinearGradientAEG(eps, dist)))
            for name, model in models.items()
        },
    }


def shapes_audit(setting: dict[str, Any], seed: int, out: Path, progress: bool) -> dict[str, Any]:
    """A Shapes CNN tested on a sample of its training set and on held-out objects."""
    from fitaudit.data.shapes import FreePositionLayout, make_free_position_dataset
    from fitaudit.models import as_classifier
    from fitaudit.models.training import accuracy, train_classifier
    from fitaudit.overfit import TranslationAEG, overfit_test

    eps = 2
    layout = FreePositionLayout(crop_size=32, object_size=20, margin=3 * eps, wrap=True)
    train_seed, test_seed, audit_seed, fit_seed = spawn_seeds(seed, 4)
    train, test = (
        make_free_position_dataset(
            setting["shapes_objects"], setting["renders"], layout=layout, split=split,
            classes=SHAPES_CLASSES, random_state=split_seed, progress=progress,
        )
        for split, split_seed in (("train", train_seed), ("test", test_seed))
    )
    net, _ = train_classifier(
        train.images, train.labels, architecture="shapes_alexnet",
        kwargs={"n_classes": len(SHAPES_CLASSES), "width": 16}, epochs=setting["epochs"],
        learning_rate=3e-3, checkpoint_dir=out / "shapes-cnn", random_state=fit_seed,
        progress=progress, metadata={"class_names": SHAPES_CLASSES},
    )
    model = as_classifier(net, n_classes=len(SHAPES_CLASSES), batch_size=1024)
    rng = np.random.default_rng(audit_seed)
    samples = {}
    for name, data in (("training set", train), ("held-out set", test)):
        rows = np.sort(rng.permutation(len(data))[: setting["audited"]])
        aeg = TranslationAEG(eps=eps, margin=layout.margin, variant="strongest", random_state=audit_seed)
        canvases = np.asarray(data.canvases)[rows]
        samples[name] = _summary(overfit_test(model, canvases, data.labels[rows], aeg))
    return {
        "eps": eps, "variant": "strongest", "classes": SHAPES_CLASSES,
        "train_accuracy": accuracy(net, train.images, train.labels),
        "test_accuracy": accuracy(net, test.images, test.labels), "samples": samples,
    }


def pmv_audit(setting: dict[str, Any], seed: int) -> dict[str, Any]:
    """PMV scores of four learners on make_moons(noise=0.3)."""
    from sklearn.datasets import make_moons
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    from fitaudit.pmv import compare_estimators

    x, y = make_moons(n_samples=setting["pmv_samples"], noise=0.3, random_state=seed)
    candidates = {
        "logistic regression": LogisticRegression(),
        "RBF SVM": SVC(gamma=2, C=1),
        "tree, max_depth=4": DecisionTreeClassifier(max_depth=4, random_state=seed),
        "tree, unbounded": DecisionTreeClassifier(random_state=seed),
    }
    comparison = compare_estimators(candidates, x, y, random_state=seed)
    return {
        "dataset": "make_moons(noise=0.3)", "n_samples": setting["pmv_samples"],
        "scores": dict(zip(comparison.names, (float(s) for s in comparison.scores))),
        "best": comparison.best,
    }


def run_demo(*, quick: bool = False, out: str | Path = "fitaudit-out/demo", seed: int = 0,
             progress: bool = True) -> DemoResult:
    """Run the three audits (see the module docstring) and write ``demo.json`` to ``out``."""
    start = time.perf_counter()
    mode = "quick" if quick else "default"
    setting = SETTINGS[mode]
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    result = DemoResult(
        mode=mode,
        overfit_synthetic=synthetic_audit(setting, seed),
        overfit_shapes=shapes_audit(setting, seed, folder, progress),
        pmv=pmv_audit(setting, seed),
        seconds=0.0,
    )
    result.seconds = time.perf_counter() - start
    (folder / "demo.json").write_text(json.dumps(result.to_dict(), indent=2))
    return result


def _handler(args: argparse.Namespace) -> DemoResult:
    return run_demo(quick=args.quick, out=args.out, seed=args.seed, progress=not args.quiet)


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit demo``."""
    parser = subparsers.add_parser(
        "demo", parents=parents, help="run the instruments on built-in data (a few minutes)",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument("--quick", action="store_true", help="a small run (seconds)")
    parser.add_argument("--out", default="fitaudit-out/demo", help="folder for demo.json and the CNN")
    parser.add_argument("--seed", type=int, default=0)
    parser.set_defaults(handler=_handler)
