"""``fitaudit reproduce overfit-shapes``: Fig. 5 of Werpachowski et al. (2019) on the Shapes world.

The paper (NeurIPS 2019, Sec. 5) runs the pairwise test with translational
AEGs on ImageNet models, on their training set and on the test set, and plots
the p-value against the sample size. This analogue:

1. renders Shapes objects (12 classes, random camera and lights) at
   ``OBJECT_SIDE`` pixels and pastes each at a uniformly random position in a
   plain-background canvas of side ``32 + 2P`` (free-position canvases; the
   image is the 32x32 centre crop, and P spare pixels make translations by up
   to 3 eps lossless). Position is uniform, so (G3) holds approximately (up
   to the objects the crop cuts at its border);
2. trains a small CNN (no augmentation) on the training crops;
3. runs the four translational AEGs on the training set and on a test set of
   new instances, once per example (checkpointed), and reports the mean
   p-value of the pairwise test and of the confidence-interval test over
   random subsets of sizes m, with the rejection rates at delta = 0.05.

``--quick`` (tests): 96 training images, eps = 1, a few seconds. The
full run (1,200 training and 1,200 test images, eps = 2, P = 6) takes about
5 minutes on one CPU core, most of it spent scoring translations; it resumes
from its checkpoints in ``--out``.

The Shapes data and the CNN here are minimal local stand-ins written before
the Shapes package offered free-position canvases and reference models.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fitaudit._optional import import_optional
from fitaudit.overfit.translation import DENSITY_WARNING, VARIANTS, centre_crop
from fitaudit.overfit.translation_curves import plot_curves, pvalue_curves
from fitaudit.random import check_random_state
from fitaudit.results import Result

IMAGE_SIDE = 32
OBJECT_SIDE = 20

#: the two modes of the experiment
SETTINGS: dict[str, dict[str, Any]] = {
    "quick": {
        "n_per_class": 8, "eps": 1, "epochs": 20, "sizes": [24, 48, 96],
        "repetitions": 3,
    },
    "full": {
        "n_per_class": 100, "eps": 2, "epochs": 40,
        "sizes": [50, 100, 200, 400, 800, 1200], "repetitions": 20,
    },
}


def free_position_canvases(
    n_per_class: int, *, split: str, margin: int, random_state: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Shapes objects at uniformly random positions in canvases of side 32 + 2 margin.

    Returns
    -------
    canvases : ndarray of float32, shape (n, 3, 32 + 2 margin, 32 + 2 margin)
    labels : ndarray of int64, shape (n,)
    """
    from fitaudit.data.shapes.factors import shapes_factor_space
    from fitaudit.data.shapes.instances import sample_instances
    from fitaudit.data.shapes.render import BACKGROUND, render

    rng = check_random_state(random_state)
    instances = sample_instances(n_per_class, split=split)
    factors = shapes_factor_space().sample(len(instances), random_state=rng)
    objects = render(instances, factors, image_size=OBJECT_SIDE)
    side = IMAGE_SIDE + 2 * margin
    canvases = np.empty((len(instances), 3, side, side), dtype=np.float32)
    canvases[:] = np.asarray(BACKGROUND, dtype=np.float32)[:, None, None]
    corners = rng.integers(0, side - OBJECT_SIDE + 1, size=(len(instances), 2))
    for canvas, obj, (row, col) in zip(canvases, objects, corners):
        canvas[:, row : row + OBJECT_SIDE, col : col + OBJECT_SIDE] = obj
    return canvases, instances.class_id.astype(np.int64)


def small_cnn(n_classes: int) -> Any:
    """Two conv blocks and two dense layers (no pooling to the end: position matters)."""
    nn = import_optional("torch.nn", "the overfit-shapes reproduction")
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * (IMAGE_SIDE // 4) ** 2, 128), nn.ReLU(),
        nn.Linear(128, n_classes),
    )


def train_cnn(
    images: np.ndarray, labels: np.ndarray, *, n_classes: int, epochs: int, seed: int,
    progress: bool, weights_path: Path,
) -> Any:
    """Train (or load from ``weights_path``, safetensors) the CNN with Adam, batch 32, lr 1e-3."""
    torch = import_optional("torch", "the overfit-shapes reproduction")
    safetensors_torch = import_optional("safetensors.torch", "the overfit-shapes reproduction")
    torch.manual_seed(seed)
    net = small_cnn(n_classes)
    if weights_path.is_file():
        safetensors_torch.load_model(net, str(weights_path))
        return net.eval()
    optimiser = torch.optim.Adam(net.parameters(), lr=1e-3)
    x, y = torch.from_numpy(images), torch.from_numpy(labels)
    generator = torch.Generator().manual_seed(seed)
    for _ in tqdm(range(epochs), desc="training the CNN", disable=not progress):
        net.train()
        for batch in torch.randperm(len(x), generator=generator).split(32):
            optimiser.zero_grad()
            torch.nn.functional.cross_entropy(net(x[batch]), y[batch]).backward()
            optimiser.step()
    weights_path.parent.mkdir(parents=True, exist_ok=True)
    safetensors_torch.save_model(net, str(weights_path))
    return net.eval()


@dataclasses.dataclass(repr=False)
class OverfitShapesReproduction(Result):
    """Numbers of the overfit-shapes reproduction.

    Attributes
    ----------
    mode : {"quick", "full"}
    eps, margin : int
    sizes : list of int
        Sample sizes m.
    train_error, test_error : float
        Error rates of the CNN on all training and test images.
    curves : dict
        ``curves[dataset][variant]``: mean p-values (``pairwise``, ``ci``) and
        rejection rates per size, error and success rates, evaluations per example,
        and the p-value on the whole dataset (``full_pvalue``).
    seconds : float
    figure : str
        The PNG written.
    warning : str
    """

    mode: str
    eps: int
    margin: int
    sizes: list[int]
    train_error: float
    test_error: float
    curves: dict[str, Any]
    seconds: float
    figure: str
    warning: str

    def _summary_fields(self) -> list[str]:
        return ["mode", "eps", "margin", "train_error", "test_error", "seconds", "figure"]

    def __repr__(self) -> str:
        lines = [super().__repr__(), f"  sizes m: {self.sizes}"]
        for name, per_variant in self.curves.items():
            for variant, entry in per_variant.items():
                pair = ", ".join(f"{p:.3g}" for p in entry["pairwise"])
                ci = ", ".join(f"{p:.3g}" for p in entry["ci"])
                lines.append(
                    f"  {name:5s} {variant:9s} success {entry['success_rate']:.3f}  "
                    f"pairwise p [{pair}]  CI p [{ci}]  all-data p {entry['full_pvalue']:.3g}"
                )
        return "\n".join(lines)


def reproduce_overfit_shapes(
    *, quick: bool, out: str | Path, seed: int = 0, progress: bool = True
) -> OverfitShapesReproduction:
    """Run the experiment (see the module docstring) and write JSON + PNG to ``out``."""
    torch = import_optional("torch", "the overfit-shapes reproduction")
    start = time.perf_counter()
    mode = "quick" if quick else "full"
    setting = SETTINGS[mode]
    eps = setting["eps"]
    margin = 3 * eps
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    rng = check_random_state(seed)
    train = free_position_canvases(
        setting["n_per_class"], split="train", margin=margin, random_state=int(rng.integers(2**31))
    )
    test = free_position_canvases(
        setting["n_per_class"], split="test", margin=margin, random_state=int(rng.integers(2**31))
    )
    n_classes = int(max(train[1].max(), test[1].max())) + 1
    net = train_cnn(
        np.ascontiguousarray(centre_crop(train[0], margin)), train[1], n_classes=n_classes,
        epochs=setting["epochs"], seed=seed, progress=progress,
        weights_path=folder / f"cnn-{mode}-seed{seed}.safetensors",
    )
    from fitaudit.models import as_classifier

    model = as_classifier(net, n_classes=n_classes, batch_size=1024)
    with torch.inference_mode():
        errors = {
            name: float(np.mean(model.predict(centre_crop(c, margin)) != y))
            for name, (c, y) in (("train", train), ("test", test))
        }
        result = pvalue_curves(
            model, {"train": train, "test": test}, eps=eps, margin=margin, variants=VARIANTS,
            sizes=setting["sizes"], repetitions=setting["repetitions"], progress=progress,
            checkpoint_dir=folder / f"terms-{mode}-seed{seed}", random_state=seed,
        )
    figure = plot_curves(result, folder / f"overfit-shapes-{mode}.png", title=f"Shapes CNN, eps={eps}")
    report = OverfitShapesReproduction(
        mode=mode, eps=eps, margin=margin, sizes=list(setting["sizes"]),
        train_error=errors["train"], test_error=errors["test"], curves=result["curves"],
        seconds=time.perf_counter() - start, figure=str(figure), warning=DENSITY_WARNING,
    )
    (folder / f"overfit-shapes-{mode}.json").write_text(json.dumps(report.to_dict(), indent=2))
    return report


def _handler(args: argparse.Namespace) -> OverfitShapesReproduction:
    return reproduce_overfit_shapes(
        quick=args.quick, out=args.out, seed=args.seed, progress=not args.quiet
    )


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit reproduce overfit-shapes``."""
    parser = subparsers.add_parser(
        "overfit-shapes",
        parents=parents,
        help="Fig. 5 of Werpachowski et al. 2019 on the Shapes world",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument("--quick", action="store_true", help="small run for tests (seconds)")
    parser.add_argument("--out", default="overfit-shapes-output", help="folder for JSON, PNG, checkpoints")
    parser.add_argument("--seed", type=int, default=0)
    parser.set_defaults(handler=_handler)
