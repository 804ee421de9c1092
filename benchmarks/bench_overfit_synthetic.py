"""Cost of the synthetic overfitting experiment (Werpachowski et al. 2019, Fig. 4).

Prints (1) RMSProp training time per step for pools of 1, 10 and 100 models,
(2) the linear-gradient AEG through the public class (one model, one eps at a
time) against the vectorised projections used by the reproduction (100
models, all 17 eps), and (3) the extrapolated wall-clock time of
``fitaudit reproduce overfit-synthetic`` in each mode on this machine, one job.

Run: ``python benchmarks/bench_overfit_synthetic.py``
"""

from __future__ import annotations

import time

import numpy as np

from fitaudit.data.gaussian_margin import GaussianMargin
from fitaudit.experiments.overfit.synthetic import MODES, PROTOCOL
from fitaudit.overfit import LinearGradientAEG, LinearModel, train_logistic_models
from fitaudit.overfit.linear_gradient import LinearProjections, linear_gradient_step


def seconds(func, repeat: int = 1) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        func()
    return (time.perf_counter() - start) / repeat


def main() -> None:
    dist = GaussianMargin(PROTOCOL["d"])
    x_train, y_train = dist.sample(PROTOCOL["n_train"], random_state=0)
    steps = 200
    per_step = {}
    print("training (RMSProp, 500 points, d = 500, batch 100)")
    for pool in (1, 10, 100):
        t = seconds(lambda pool=pool: train_logistic_models(x_train, y_train, n_models=pool, steps=steps, random_state=1))
        per_step[pool] = t / steps
        print(f"  pool of {pool:3d} models: {1e3 * per_step[pool]:7.2f} ms/step")

    x, y = dist.sample(PROTOCOL["m_independent"], random_state=2)
    rng = np.random.default_rng(3)
    models = [LinearModel(rng.normal(size=PROTOCOL["d"]), 0.0) for _ in range(100)]
    eps_grid = np.logspace(-2, 2, 17)
    one = models[0]
    loss = (one.predict(x) != y).astype(float)
    t_class = seconds(lambda: LinearGradientAEG(1.0, dist).generate(one, x, y, loss=loss), repeat=3)

    def vectorised() -> None:
        proj = LinearProjections.compute(
            np.array([m.coef_ for m in models]), np.zeros(100), x, y
        )
        for eps in eps_grid:
            linear_gradient_step(dist, proj, eps)

    t_vec = seconds(vectorised)
    print(f"AEG on m = {len(y)} points, 100 models x 17 eps")
    print(f"  LinearGradientAEG class: {t_class * 1700:7.2f} s (extrapolated from one call, {t_class:.3f} s)")
    print(f"  vectorised projections : {t_vec:7.2f} s  (speed-up {t_class * 1700 / t_vec:.0f}x)")

    print("extrapolated run time of `fitaudit reproduce overfit-synthetic`, one job")
    for mode, settings in MODES.items():
        pool = max(settings["n_values"])
        nearest = min(per_step, key=lambda k: abs(k - pool))
        unit = per_step[nearest] * settings["steps"] + t_vec * settings["n_eps"] / 17
        total = 2 * settings["repetitions"] * unit
        print(f"  {mode:6s}: {2 * settings['repetitions']:3d} units x {unit:8.1f} s = {total / 3600:6.2f} h")


if __name__ == "__main__":
    main()
