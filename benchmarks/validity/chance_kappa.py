"""The chance stop on a lower confidence bound of Cohen's kappa: untrained networks vs weak real models.

:func:`fitaudit.models.labels.chance_check` reads a model as *shown above
chance* only when the one-sided 95% lower bound of Cohen's kappa (Fleiss,
Cohen and Everitt 1969 variance) is above 0; a verdict resting on the
model's predictions is otherwise ``inconclusive``. Its point estimate alone
(kappa > 0, the rule before) read an untrained 12-class network at accuracy
0.067 as above chance. A kappa at or below 0 still *refuses* (the labels or
the pipeline are likely wrong: :func:`fitaudit.models.labels.stop_at_chance`).

Models, each scored on scored samples of n examples drawn without
replacement from its held-out pool (:data:`REPEATS` draws per n):

* untrained (must not be shown above chance): ``mlp`` networks at their
  random initialisation on scikit-learn's digits (10 classes), and the
  ``shapes_alexnet`` CNN at its initialisation on Shapes renders (12
  classes; the issue's case), :data:`SEEDS` initialisations each;
* weak but honest (must not be refused; shown above chance once n allows):
  depth-1 and depth-2 decision trees on scikit-learn's digits (trained on
  the other half), and a logistic regression on the bill depth alone of
  palmerpenguins' penguins (3 classes).

Columns: the model's accuracy and kappa on its whole pool; per n, the share
of draws refused (kappa <= 0), not shown above chance (inconclusive,
refusals included) and shown above chance. The table is printed and
written to ``results/chance_kappa.txt``.

Run: ``python benchmarks/validity/chance_kappa.py`` (about a minute).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from fitaudit.models.labels import chance_check

RESULTS = Path(__file__).parent / "results"
SIZES, REPEATS, SEEDS = (20, 50, 100, 300, 800), 400, 5


def digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return bunch.data.astype(np.float32) / 16.0, bunch.target.astype(np.int64)


def untrained(architecture: str, kwargs: dict, x: np.ndarray, seed: int) -> np.ndarray:
    """Predictions of a registered architecture at its random initialisation (torch seeded with ``seed``)."""
    import torch

    from fitaudit.models import as_classifier
    from fitaudit.models.architectures import build_architecture

    torch.manual_seed(seed)
    model = build_architecture({"architecture": architecture, "kwargs": kwargs}).eval()
    return np.asarray(as_classifier(model, n_classes=kwargs["n_classes"], backend="torch").predict(x))


def models() -> Iterator[tuple[str, str, np.ndarray, np.ndarray]]:
    """(kind, name, labels of the pool, predictions on it) for every model."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier

    x, y = digits()
    half = len(y) // 2
    for seed in range(SEEDS):
        yield "untrained", f"MLP (64-128-10) on digits, init {seed}", y, untrained(
            "mlp", {"in_features": 64, "hidden_sizes": [128], "n_classes": 10}, x, seed)
    from fitaudit.data.shapes.datasets import FreePositionLayout, make_free_position_dataset
    from fitaudit.overfit.translation import centre_crop

    layout = FreePositionLayout(crop_size=32, margin=3, object_size=20)
    shapes = make_free_position_dataset(80, 1, layout=layout, split="test", random_state=0)
    crops = centre_crop(shapes.canvases, 3)
    for seed in range(SEEDS):
        yield "untrained", f"Shapes CNN (12 classes), init {seed}", shapes.labels, untrained(
            "shapes_alexnet", {"width": 12, "n_classes": 12}, crops, seed)
    for depth in (1, 2):
        tree = DecisionTreeClassifier(max_depth=depth, random_state=0).fit(x[:half], y[:half])
        yield "weak", f"depth-{depth} tree on digits", y[half:], tree.predict(x[half:])
    from palmerpenguins import load_penguins

    penguins = load_penguins().dropna(subset=["bill_depth_mm", "species"])
    feature = penguins[["bill_depth_mm"]].to_numpy()
    species = np.unique(penguins["species"], return_inverse=True)[1]
    order = np.random.default_rng(0).permutation(len(species))
    train, pool = order[: len(order) // 2], order[len(order) // 2:]
    logistic = LogisticRegression().fit(feature[train], species[train])
    yield "weak", "logistic on bill depth (penguins)", species[pool], logistic.predict(feature[pool])


def rates(labels: np.ndarray, predictions: np.ndarray, n: int, rng: np.random.Generator) -> tuple[float, float, float]:
    """Shares of ``REPEATS`` draws of n examples refused, not shown above chance, shown above chance."""
    refused = not_shown = 0
    for _ in range(REPEATS):
        rows = rng.choice(len(labels), size=n, replace=False)
        check = chance_check(labels[rows], predictions[rows], int(max(labels.max(), predictions.max())) + 1)
        refused += check.at_or_below
        not_shown += not check.shown_above
    return refused / REPEATS, not_shown / REPEATS, 1 - not_shown / REPEATS


def main() -> None:
    head = f"{'kind':<9} {'model':<40} {'pool':>5} {'acc':>6} {'kappa':>7} " + " ".join(
        f"{'n=' + str(n):>17}" for n in SIZES)
    lines = [head, " " * 71 + " ".join(f"{'ref/incl/shown':>17}" for _ in SIZES), "-" * len(head)]
    rng = np.random.default_rng(0)
    for kind, name, labels, predictions in models():
        check = chance_check(labels, predictions, int(max(labels.max(), predictions.max())) + 1)
        cells = []
        for n in SIZES:
            if n > len(labels):
                cells.append(f"{'-':>17}")
                continue
            refused, not_shown, shown = rates(labels, predictions, n, rng)
            cells.append(f"{refused:>5.2f}/{not_shown:>5.2f}/{shown:>5.2f}")
        lines.append(f"{kind:<9} {name:<40} {len(labels):>5} {check.accuracy:>6.3f} {check.kappa:>7.3f} "
                     + " ".join(cells))
        print(lines[-1], flush=True)
    text = (
        "The chance stop (fitaudit.models.labels.chance_check): shown above chance when the one-sided 95% lower "
        "bound of Cohen's kappa (Fleiss, Cohen, Everitt 1969 variance) is above 0; refused when kappa <= 0. "
        f"Per n, {REPEATS} scored samples drawn without replacement from each model's held-out pool: the share "
        "refused (ref), not shown above chance (incl: the verdicts that rest on the predictions are "
        "inconclusive; refusals included) and shown above chance. Untrained networks should not be shown "
        "above chance; weak honest models should not be refused. An untrained network is not always at chance: "
        "random features can carry some signal (the digits MLP at init 2: kappa 0.069 on its whole pool), and "
        "once n allows, the check rightly shows it above chance.\n\n" + "\n".join(lines)
    )
    print(text)
    (RESULTS / "chance_kappa.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
