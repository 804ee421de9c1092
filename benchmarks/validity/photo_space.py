"""Calibration of the image examination's default space on real photographs (issue 50).

An ordinary CNN, trained with the usual augmentation, should keep most of
its clean accuracy under the default space's random factors: otherwise
every examination of a user's image model reads ``foreign_space``
(:mod:`fitaudit.examine.scenarios`). On the photo world
(:mod:`benchmarks.validity.photo_world`: crops of scikit-image's bundled
photographs, 8 classes, training crops from the top halves, unseen crops
from the bottom halves), a small CNN (:func:`photo_world.cnn`) is trained with
random crops (+-3 px, reflection padding), horizontal flips and brightness
(+-0.1) and contrast (x 0.8-1.2) jitter. On the unseen crops it prints:

* the clean accuracy;
* per space (the former default, the new default): the accuracy under
  uniform random factors (4 draws per crop), the space check's drop as an
  audit computes it (the crops classified correctly untouched, 1.00 by
  choice, against their accuracy under the random factors; foreign above
  :data:`fitaudit.examine.scenarios.FOREIGN_DROP`), and the accuracy under
  each factor alone (the others at their identity);
* per space, the per-factor near/far drops of the random queries
  (:func:`fitaudit.examine.scenarios.factor_drops`), largest first.

Run: ``python benchmarks/validity/photo_space.py [--quick]``; output in
``benchmarks/validity/results/photo_space.txt``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from photo_world import cnn, fit, photo_world  # noqa: E402

#: the default space before issue 50 (every factor's former default range)
FORMER = {"rotation": (-30, 30), "translation_x": (-0.1, 0.1), "translation_y": (-0.1, 0.1), "scale": (0.8, 1.2),
          "brightness": (-0.3, 0.3), "contrast": (0.6, 1.4), "blur": (0, 1.5), "noise": (0, 0.08),
          "occlusion": (0, 0.25)}
#: a narrower alternative, measured beside the new default to show what narrowing the geometry and blur buys
NARROWER = {"rotation": (-5, 5), "translation_x": (-0.03, 0.03), "translation_y": (-0.03, 0.03), "scale": (0.95, 1.05),
            "blur": (0, 0.5)}
DRAWS = 4
EPOCHS = 30
SIZE = 32


def augment(rng: np.random.Generator, x: np.ndarray, brightness: tuple[float, float] = (-0.1, 0.1),
            flip: bool = True) -> np.ndarray:
    """Random crops (+-3 px, reflection padding), horizontal flips (unless not ``flip``: digits), brightness
    (uniform in ``brightness``) and contrast jitter."""
    n, _, h, w = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (3, 3), (3, 3)), mode="reflect")
    dy, dx = rng.integers(0, 7, n), rng.integers(0, 7, n)
    out = np.stack([padded[i, :, dy[i]:dy[i] + h, dx[i]:dx[i] + w] for i in range(n)])
    flipped = rng.random(n) < (0.5 if flip else 0.0)
    out[flipped] = out[flipped][..., ::-1]
    mean = out.mean(axis=(1, 2, 3), keepdims=True)
    c = rng.uniform(0.8, 1.2, (n, 1, 1, 1))
    b = rng.uniform(*brightness, (n, 1, 1, 1))
    return np.clip(c * out + (1 - c) * mean + b, 0, 1).astype(np.float32)


def train(x: np.ndarray, y: np.ndarray, epochs: int, seed: int, affine: bool = False):
    """The small CNN, trained with :func:`augment` (and, with ``affine``, a random affine warp before it:
    rotation +-10 degrees, scale 0.9-1.1, torchvision's RandomAffine-style, through the image transforms)."""
    import torch

    from fitaudit.data.transforms import ImageTransformGenerator

    warp = ImageTransformGenerator(x, y, random_state=seed, factors={
        "rotation": (-10, 10), "scale": (0.9, 1.1), "translation_x": 0.0, "translation_y": 0.0, "brightness": 0.0,
        "contrast": 1.0, "blur": 0.0, "noise": 0.0, "occlusion": 0.0, "flip": 0.0, "jpeg_quality": 100.0}) if affine else None

    torch.manual_seed(seed)
    net = cnn(int(y.max()) + 1)
    rng = np.random.default_rng(seed)

    def batch(rows: np.ndarray) -> np.ndarray:
        drawn = x[rows] if warp is None else warp.generate(rows, warp.factor_space.sample(len(rows), random_state=rng))
        return augment(rng, np.asarray(drawn, dtype=np.float32))

    return fit(net, y, batch, epochs=epochs, rng=rng)


def predict(net, x: np.ndarray) -> np.ndarray:
    import torch

    with torch.no_grad():
        return np.concatenate([net(torch.from_numpy(np.ascontiguousarray(x[s:s + 512], dtype=np.float32))).argmax(1).numpy()
                               for s in range(0, len(x), 512)])


def measure(net, x: np.ndarray, y: np.ndarray, factors, label: str) -> list[str]:
    from fitaudit.data.transforms import ImageTransformGenerator, identity_factors
    from fitaudit.examine.scenarios import factor_drops

    gen = ImageTransformGenerator(x, y, factors=factors, random_state=0)
    space = gen.factor_space
    rng = np.random.default_rng(1)
    idx = np.repeat(np.arange(len(y)), DRAWS)
    values = space.sample(len(idx), random_state=rng)
    right = predict(net, gen.generate(idx, values)) == y[idx]
    clean = predict(net, x) == y
    on_correct = right[clean[idx]]
    lines = [f"{label}: {space.describe() if hasattr(space, 'describe') else ''}".rstrip(": "),
             f"  accuracy under random factors {right.mean():.3f} (all {len(y)} unseen crops, {len(idx)} queries); "
             f"space check: the {int(clean.sum())} crops right untouched keep {on_correct.mean():.3f} "
             f"(drop {1 - on_correct.mean():.3f})"]
    alone = []
    base = identity_factors(space)
    for c, factor in enumerate(space.factors):
        if factor.low == factor.high or factor.name.startswith("occlusion_"):
            continue
        one = np.tile(base, (len(idx), 1))
        one[:, c] = values[:, c]
        if factor.name == "occlusion":
            for centre in ("occlusion_u", "occlusion_v"):
                k = space.names.index(centre)
                one[:, k] = values[:, k]
        alone.append(f"{factor.name} [{factor.low:g}, {factor.high:g}] {predict(net, gen.generate(idx, one)).__eq__(y[idx]).mean():.3f}")
    lines.append("  each factor alone (accuracy): " + "; ".join(alone))
    reference = {"label": y[idx], "predicted": np.where(right, y[idx], -1), **{n: values[:, c] for c, n in enumerate(space.names)}}
    rows = factor_drops(reference, space.to_dict())
    lines.append("  near/far drops: " + "; ".join(f"{r['factor']} {r['near_accuracy']:.2f} -> {r['far_accuracy']:.2f}"
                                                    for r in rows[:5]))
    return lines


def main() -> None:
    quick = "--quick" in sys.argv
    start = time.perf_counter()
    world = photo_world(SIZE, rgb=False, seed=0, n_train=400 if quick else 1600, n_unseen=240 if quick else 800)
    out = [f"photo world: {SIZE} px grey crops, 8 classes, {len(world.train_labels)} training crops (top halves), "
           f"{len(world.unseen_labels)} unseen crops (bottom halves); CNN 3 conv layers, {EPOCHS if not quick else 3} "
           "epochs of Adam"]
    for affine in (False, True):
        net = train(world.train, world.train_labels, 3 if quick else EPOCHS, seed=0, affine=affine)
        clean = predict(net, world.unseen) == world.unseen_labels
        out += ["", "CNN trained with random crops +-3 px, flips, brightness +-0.1, contrast x0.8-1.2"
                + (" and a random affine warp (rotation +-10 deg, scale 0.9-1.1)" if affine else ""),
                f"clean accuracy on the unseen crops: {clean.mean():.3f}; training crops: "
                f"{np.mean(predict(net, world.train) == world.train_labels):.3f}"]
        out += measure(net, world.unseen, world.unseen_labels, FORMER, "former default space")
        out += measure(net, world.unseen, world.unseen_labels, None, "new default space")
        out += measure(net, world.unseen, world.unseen_labels, NARROWER, "narrower alternative (not the default)")
    out.append(f"({time.perf_counter() - start:.0f} s)")
    text = "\n".join(out)
    print(text)
    if not quick:
        Path(__file__).resolve().parent.joinpath("results", "photo_space.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
