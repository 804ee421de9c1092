"""Fig. 5 of Werpachowski et al. (2019) on the Shapes world (``fitaudit reproduce overfit-shapes``).

The paper (NeurIPS 2019, Sec. 5) runs the pairwise test with translational
AEGs on ImageNet models, on their training set and on the test set, and plots
the p-value against the sample size. This analogue:

1. renders free-position Shapes datasets
   (:func:`fitaudit.data.shapes.datasets.make_free_position_dataset`):
   solids under random camera and lights, several renders per object, each
   pasted at a uniform position of a periodic canvas (``wrap=True``, so
   (G3) holds exactly) with ``P = 3 eps`` spare pixels per side; the
   training and test sets hold disjoint object instances. The full mode
   uses 4 well-separated classes of the world's 12 (sphere, cube, torus,
   star): with 12 (or 6) classes the CPU-sized CNN below stayed under 60%
   held-out accuracy in the training budget, and a model that does not
   generalise makes a poor analogue of the paper's ImageNet models;
2. trains a Shapes reference CNN (``shapes_alexnet``) on the training crops
   with :func:`fitaudit.models.training.train_classifier` (random
   horizontal flips, no translation augmentation; per-epoch checkpoints,
   resumed when run again) and reports its training and held-out accuracy;
3. runs the four translational AEGs (strongest, nearest, random, random2)
   once per example on a random subset of the training set and of the test
   set (checkpointed) and reports, for random subsets of sizes m, the mean
   p-value of the pairwise test and of the confidence-interval test and
   their rejection rates at delta = 0.05 (CI test at level 2 delta), plus
   the p-value on the whole audited subset.

Mode ``"quick"`` (tests): 16x16 crops, a narrow CNN, 128 training images,
eps = 1; about 20 s. The full mode (3,200 training and 1,280 test images,
32x32 crops, eps = 2, P = 6, 30 epochs, AEGs on 1,200 images of each set)
took 14 minutes (842 s wall, of which 203 s training and about 10 minutes
of AEG runs) on a 2-core machine shared with about eight other jobs; it
resumes from its checkpoints. Its numbers are in
``benchmarks/results/overfit_shapes_full/``: training set rejected by the
strongest AEG (p = 0.003 on 1,200 images, in 95% of the subsets of 800),
held-out objects never (p = 1 for every variant).

Checkpoints live in :class:`~fitaudit.checkpoint.CheckpointStore` folders:
the CNN's epochs under the trainer's key (architecture, schedule, data and
seed; :func:`~fitaudit.models.training.train_classifier`), the AEG terms
under a key fingerprinting the trained weights, the audited canvases and the
curve settings. A changed setting, seed or data
set never reuses an old checkpoint. Figures: :mod:`fitaudit.report.reproductions`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from fitaudit._optional import import_optional
from fitaudit.experiments.base import Options, Run
from fitaudit.overfit.translation import DENSITY_WARNING, VARIANTS
from fitaudit.overfit.translation_curves import pvalue_curves
from fitaudit.random import spawn_seeds
from fitaudit.results import Result

if TYPE_CHECKING:
    from typing import Unpack

#: the two modes of the experiment (``layout``: FreePositionLayout fields; margin = 3 eps)
SETTINGS: dict[str, dict[str, Any]] = {
    "quick": {
        "layout": {"crop_size": 16, "object_size": 12, "wrap": True},
        "classes": ["sphere", "cube", "torus", "star"],
        "eps": 1, "train_objects": 8, "test_objects": 8, "renders_per_object": 4,
        "architecture": "shapes_alexnet", "kwargs": {"width": 6}, "epochs": 6,
        "learning_rate": 3e-3, "audited": 128, "sizes": [32, 64, 128], "repetitions": 3,
    },
    "full": {
        "layout": {"crop_size": 32, "object_size": 20, "wrap": True},
        "classes": ["sphere", "cube", "torus", "star"],
        "eps": 2, "train_objects": 100, "test_objects": 40, "renders_per_object": 8,
        "architecture": "shapes_alexnet", "kwargs": {"width": 16}, "epochs": 30,
        "learning_rate": 3e-3, "audited": 1200, "sizes": [50, 100, 200, 400, 800, 1200],
        "repetitions": 20,
    },
}


@dataclasses.dataclass(repr=False)
class OverfitShapesReproduction(Result):
    """Numbers of the overfit-shapes reproduction.

    Attributes
    ----------
    experiment : str
        ``"overfit-shapes"``.
    mode : {"quick", "full"}
    eps, margin : int
    layout : dict
        The free-position layout of the canvases.
    sizes : list of int
        Sample sizes m.
    train_accuracy, test_accuracy : float
        Accuracy of the CNN on all training and all test crops.
    n_train, n_test : int
        Images in the two sets (disjoint object instances).
    n_audited : int
        Images of each set the AEGs ran on (a random subset; sizes m <= it).
    training : dict
        Architecture, parameters, epochs, training seconds.
    curves : dict
        ``curves[dataset][variant]``: mean p-values (``pairwise``, ``ci``) and
        rejection rates per size, the error rate R_S (``risk_plain``),
        success rate, evaluations per example, and the p-value on the whole dataset (``full_pvalue``).
    seconds : float
        Wall time of this call (less when resumed from checkpoints).
    warning : str
    """

    experiment: str
    mode: str
    eps: int
    margin: int
    layout: dict[str, Any]
    sizes: list[int]
    train_accuracy: float
    test_accuracy: float
    n_train: int
    n_test: int
    n_audited: int
    training: dict[str, Any]
    curves: dict[str, Any]
    seconds: float
    warning: str

    def _summary_fields(self) -> list[str]:
        return [
            "mode", "eps", "margin", "n_train", "n_test", "n_audited", "train_accuracy", "test_accuracy",
            "seconds",
        ]


def audited_subset(data: Any, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Canvases and labels of ``size`` random examples of a free-position dataset, in its order."""
    rows = np.sort(rng.permutation(len(data))[:size])
    return np.asarray(data.canvases)[rows], data.labels[rows]


def reproduce_overfit_shapes(**options: Unpack[Options]) -> OverfitShapesReproduction:
    """Run the experiment (see the module docstring).

    ``options``: :class:`~fitaudit.experiments.base.Options`; the modes are
    the sizes of :data:`SETTINGS`, ``checkpoint_dir`` keeps the CNN's
    per-epoch checkpoints and the AEG terms, ``random_state`` seeds the data
    sets, the training and the AEG draws.
    """
    torch = import_optional("torch", "the overfit-shapes reproduction")
    from fitaudit.data.shapes.datasets import FreePositionLayout, make_free_position_dataset
    from fitaudit.models import as_classifier
    from fitaudit.models.torch_ops import accuracy
    from fitaudit.models.training import train_classifier

    run = Run(SETTINGS, parallel=False, runs_torch=True, **options)
    mode, setting, random_state, progress, device = run.mode, run.settings, run.random_state, run.progress, run.device
    eps = setting["eps"]
    layout = FreePositionLayout(margin=3 * eps, **setting["layout"])
    store = run.store
    train_seed, test_seed, audit_seed, curve_seed = spawn_seeds(random_state, 4)
    train, test = (
        make_free_position_dataset(
            setting[f"{split}_objects"], setting["renders_per_object"], layout=layout,
            split=split, classes=setting["classes"], random_state=split_seed, progress=progress,
        )
        for split, split_seed in (("train", train_seed), ("test", test_seed))
    )
    net, training = train_classifier(
        train.images, train.labels, architecture=setting["architecture"],
        kwargs={"n_classes": len(train.class_names), **setting["kwargs"]},
        learning_rate=setting["learning_rate"],
        x_val=test.images, y_val=test.labels, epochs=setting["epochs"],
        checkpoint_dir=None if store is None else store.subfolder("cnn"),
        random_state=random_state, progress=progress,
        metadata={"class_names": train.class_names, "layout": dataclasses.asdict(layout)}, device=device,
    )
    model = as_classifier(net, n_classes=len(train.class_names), batch_size=1024, device=device)
    rng = np.random.default_rng(audit_seed)
    audited = {
        "train": audited_subset(train, setting["audited"], rng),
        "test": audited_subset(test, setting["audited"], rng),
    }
    curve_settings = {
        key: setting[key] for key in ("sizes", "repetitions")
    } | {"eps": eps, "margin": layout.margin, "variants": list(VARIANTS), "seed": curve_seed} | (
        {} if device == "cpu" else {"device": device})  # a GPU's terms apart; the CPU's keep their keys
    with torch.inference_mode():
        result = pvalue_curves(
            model, audited,
            eps=eps, margin=layout.margin, variants=VARIANTS, sizes=setting["sizes"],
            repetitions=setting["repetitions"], batch_size=1024, progress=progress,
            checkpoint_dir=None if store is None else store.subfolder(
                "terms-" + store.key(curve_settings, net, audited)
            ),
            random_state=curve_seed,
        )
    return OverfitShapesReproduction(
        experiment="overfit-shapes",
        mode=mode, eps=eps, margin=layout.margin, layout=dataclasses.asdict(layout),
        sizes=list(setting["sizes"]),
        train_accuracy=accuracy(net, train.images, train.labels),
        test_accuracy=accuracy(net, test.images, test.labels),
        n_train=len(train), n_test=len(test), n_audited=len(audited["train"][1]),
        training={
            "architecture": training.architecture, "kwargs": training.kwargs,
            "n_parameters": training.n_parameters, "epochs": training.epochs,
            "train_seconds": training.train_seconds, "model_dir": training.model_dir,
        },
        curves=result["curves"], seconds=run.seconds(),
        warning=DENSITY_WARNING,
    )
