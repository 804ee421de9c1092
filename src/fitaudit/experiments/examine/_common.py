"""What the examiner reproductions share: the examined factors, the instances, the paper's numbers."""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit.data.generators import generate_checked
from fitaudit.random import check_random_state

#: the paper's nine examined factors (docs/examiner.md#the-papers-factor-space) in this world's names
EXAMINED_FACTORS = (
    "light_energy", "light_distance", "light_azimuth", "light_elevation",
    "camera_distance", "camera_azimuth", "camera_elevation", "camera_roll", "sun_energy",
)

#: the paper's Table 2 (ShapeNet; average true-class probability in %, T = 0/100/300/500)
PAPER_TABLE = {
    "alexnet": {"rl": [63.98, 65.91, 18.92, 2.27], "bo": [60.05, 43.58, 29.98, 25.43]},
    "resnet": {"rl": [69.03, 68.58, 38.86, 13.13], "bo": [64.19, 54.89, 48.07, 45.55]},
}
PAPER_STEPS = [0, 100, 300, 500]

#: the paper's renders-per-object experiment (T = 200; average true-class probability in %)
PAPER_RENDERS = {"rl": {10: 63.81, 5: 57.43, 2: 35.05, 1: 18.92}, "bo": {10: 49.79, 5: 43.06, 2: 22.19, 1: 10.92}}


def fixed_factors(random_state: Any) -> dict[str, float]:
    """The factors the paper does not examine, fixed: the sun's direction at random, the rest at defaults.

    The paper fixes the sun's rotation at random during an examination;
    here ``object_rotation`` (redundant with ``camera_azimuth``) stays at 0
    and ``ambient_energy`` at its default.
    """
    rng = check_random_state(random_state)
    return {
        "object_rotation": 0.0,
        "sun_azimuth": float(rng.uniform(0.0, 360.0)),
        "sun_elevation": float(rng.uniform(-90.0, 90.0)),
        "ambient_energy": 0.6,
    }


def true_class_probability(model: Any, generator: Any, instances: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """p_y of every (instance, factor row) pair."""
    from fitaudit.models.base import softmax

    x = generate_checked(generator, instances, factors)
    proba = softmax(model.logits(x))
    return proba[np.arange(len(instances)), np.asarray(generator.labels)[instances]]


def choose_instances(model: Any, generator: Any, *, n_views: int, n_random: int, random_state: Any) -> dict[str, list[int]]:
    """The paper's instances (per class, the one with the highest mean true-class probability) and a random sample.

    Every object is rendered ``n_views`` times under uniform random factors
    of the generator's space; ``"best_per_class"`` holds, for every class,
    the object whose renders the model scores highest on average (the paper
    picks the validation instance with the highest true-class probability);
    ``"random"`` holds ``n_random`` objects drawn at random.
    """
    rng = check_random_state(random_state)
    n = len(generator.labels)
    idx = np.repeat(np.arange(n), n_views)
    factors = generator.factor_space.sample(len(idx), random_state=rng)
    mean_prob = true_class_probability(model, generator, idx, factors).reshape(n, n_views).mean(axis=1)
    labels = np.asarray(generator.labels)
    best = [int(np.flatnonzero(labels == c)[np.argmax(mean_prob[labels == c])]) for c in np.unique(labels)]
    sample = sorted(int(i) for i in rng.choice(n, size=min(n_random, n), replace=False))
    return {"best_per_class": best, "random": sample}
