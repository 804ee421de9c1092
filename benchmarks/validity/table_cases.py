"""The real tables of the validity benchmarks and the scaled logistic regression they fit.

Eleven tables that ship with packages (scikit-learn's breast_cancer, wine,
digits, iris; palmerpenguins; vega_datasets' seattle-weather and cars;
statsmodels' modechoice, grunfeld, anes96, star98), as (X, y) with integer
labels. A module of its own, importing nothing of fitaudit, so that a cached
benchmark run keyed by the code it loads (``table_checks_clean.py``) is not
invalidated by edits to the scripts that report on these tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


def _codes(values: Any) -> np.ndarray:
    return np.unique(np.asarray(values), return_inverse=True)[1]


def package_tables() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The nine tables of ``pmv_heldout.py`` (breast_cancer and wine with seven from other packages)."""
    import palmerpenguins
    import statsmodels.api as sm
    import vega_datasets

    data = sm.datasets
    mode = data.modechoice.load_pandas().data
    grunfeld = data.grunfeld.load_pandas().data
    anes = data.anes96.load_pandas().data
    star = data.star98.load_pandas().data
    weather = vega_datasets.data.seattle_weather()
    cars = vega_datasets.data.cars().dropna()
    penguins = palmerpenguins.load_penguins().dropna()
    penguin_features = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
    car_features = ["Miles_per_Gallon", "Cylinders", "Displacement", "Horsepower", "Weight_in_lbs",
                    "Acceleration", "Year"]
    passed = star["NABOVE"] / (star["NABOVE"] + star["NBELOW"])
    return {
        # long format: one row per (traveller, mode); the label is whether that mode was chosen
        "modechoice": (mode[["mode", "ttme", "invc", "invt", "gc", "hinc", "psize"]].to_numpy(float),
                       _codes(mode["choice"])),
        "grunfeld": (grunfeld[["invest", "value", "capital"]].to_numpy(float), _codes(grunfeld["firm"])),
        "seattle-weather": (weather[["precipitation", "temp_max", "temp_min", "wind"]].to_numpy(float),
                            _codes(weather["weather"])),
        "penguins": (penguins[penguin_features].to_numpy(float), _codes(penguins["species"])),
        "cars": (cars[car_features].to_numpy(float), _codes(cars["Origin"])),
        "anes96": (anes.drop(columns=["vote"]).to_numpy(float), _codes(anes["vote"])),
        "star98": (star.drop(columns=["NABOVE", "NBELOW"]).to_numpy(float),
                   (passed > passed.median()).to_numpy(int)),
        "breast_cancer": load_breast_cancer(return_X_y=True),
        "wine": load_wine(return_X_y=True),
    }


def tables() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The nine package tables, digits and iris."""
    found = package_tables()
    found["digits"] = load_digits(return_X_y=True)
    found["iris"] = load_iris(return_X_y=True)
    return found


def scaled_logistic(c: float = 1.0) -> Any:
    return make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=5000))
