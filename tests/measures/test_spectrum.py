"""The weight-spectrum measures against weightwatcher 0.7.7 (the reference) and a slow power-law fit."""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("weightwatcher")

from fitaudit._errors import InputError  # noqa: E402
from fitaudit.measures import ModelRecord, get_measure, list_measures  # noqa: E402
from fitaudit.measures import _spectrum as S  # noqa: E402

nn = torch.nn

#: measure -> weightwatcher's column it averages over layers
WW_COLUMN = {
    "spectral_alpha": "alpha",
    "spectral_alpha_weighted": "alpha_weighted",
    "spectral_log_norm": "log_spectral_norm",
    "spectral_stable_rank": "stable_rank",
    "spectral_mp_softrank": "mp_softrank",
}


def _net(seed: int) -> object:
    """Conv 3x3 (3 -> 16, 16 -> 32, batch norm between), dense 2048 -> 64 -> 64 (square: Q = 1) -> 10 -> 4 (skipped: 4 eigenvalues)."""
    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.Flatten(),
        nn.Linear(32 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10), nn.ReLU(), nn.Linear(10, 4),
    )
    with torch.no_grad():  # heavier tails than at initialisation, so the fits differ across layers
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(1 + 3 * torch.rand_like(p) ** 4)
    return model.eval()


def _weightwatcher(model: object):  # noqa: ANN202 - a pandas DataFrame
    import weightwatcher as ww

    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ww.WeightWatcher(model=model).analyze(mp_fit=True, randomize=False, vectors=False)


@pytest.fixture(scope="module")
def pair() -> tuple[object, object]:
    model = _net(0)
    return model, _weightwatcher(model)


@pytest.mark.slow
def test_same_layers_and_per_layer_numbers_as_weightwatcher(pair: tuple[object, object]) -> None:
    model, details = pair
    spectra = S.model_spectra(model)
    # weightwatcher's names are the module names; it skips the 10 -> 4 layer (M = 4 < 8 eigenvalues)
    assert [s.name for s in spectra] == ["0", "3", "6", "8", "10"] == list(details["longname"])
    assert [(s.n, s.m, s.rf) for s in spectra] == [tuple(r) for r in details[["N", "M", "rf"]].to_numpy(int)]
    for s, (_, row) in zip(spectra, details.iterrows()):
        assert len(s.evals) == row["num_evals"]
        np.testing.assert_allclose(s.lambda_max, row["lambda_max"], rtol=1e-6)
        np.testing.assert_allclose(s.alpha, row["alpha"], rtol=1e-6)
        np.testing.assert_allclose(s.xmin, row["xmin"], rtol=1e-6)
        np.testing.assert_allclose(s.ks_distance, row["D"], rtol=1e-6)
        np.testing.assert_allclose(s.alpha_weighted, row["alpha_weighted"], rtol=1e-6)
        np.testing.assert_allclose(s.log_spectral_norm, row["log_spectral_norm"], rtol=1e-6)
        np.testing.assert_allclose(s.stable_rank, row["stable_rank"], rtol=1e-6)
        np.testing.assert_allclose(S.mp_softrank(s), row["mp_softrank"], rtol=1e-6)
    assert len({round(s.alpha, 3) for s in spectra}) == len(spectra)  # the comparison is not of equal numbers


@pytest.mark.parametrize("name", sorted(WW_COLUMN))
@pytest.mark.slow
def test_measure_is_weightwatchers_mean_over_layers(pair: tuple[object, object], name: str) -> None:
    model, details = pair
    value = get_measure(name)(ModelRecord(model=model, train_x=np.zeros((1, 3, 8, 8)), train_y=np.zeros(1, int)))
    np.testing.assert_allclose(value, details[WW_COLUMN[name]].mean(), rtol=1e-6)


def test_measures_are_registered_for_torch_and_onnx() -> None:
    for name in WW_COLUMN:
        assert name in list_measures()
        measure = type(get_measure(name))
        assert measure.family == "spectrum" and not measure.needs_data and measure.formats == ("torch", "onnx")


def _slow_power_law(data: np.ndarray) -> tuple[float, float]:
    """Clauset et al. (2009) written out: every candidate xmin, the MLE alpha, the KS distance; the smallest wins."""
    data = np.sort(data)
    best = (np.inf, np.nan, np.nan)
    for i in range(len(data) - 1):
        tail = data[i:]
        n = len(tail)
        alpha = 1 + n / sum(np.log(x / tail[0]) for x in tail)
        model_cdf = [1 - (x / tail[0]) ** (1 - alpha) for x in tail]
        empirical = [k / n for k in range(n)]
        ks = max(abs(a - b) for a, b in zip(model_cdf, empirical))
        if ks < best[0]:
            best = (ks, alpha, tail[0])
    return best[1], best[2]


def test_power_law_fit_is_the_clauset_fit_and_recovers_a_known_exponent() -> None:
    rng = np.random.default_rng(1)
    pareto = 0.5 * (1 - rng.random(400)) ** (-1 / 1.5)  # density ~ x^-2.5 above 0.5
    sample = np.concatenate([rng.uniform(0.01, 0.5, 300), pareto])
    alpha, xmin, _ = S.power_law_fit(sample)
    slow_alpha, slow_xmin = _slow_power_law(sample[sample > S.EVALS_THRESH])
    np.testing.assert_allclose([alpha, xmin], [slow_alpha, slow_xmin], rtol=1e-9)
    assert abs(alpha - 2.5) < 0.25 and 0.3 < xmin < 0.9


def test_conv_slices_are_pooled_and_scaled() -> None:
    kernel = np.random.default_rng(2).normal(size=(8, 4, 3, 3))
    mats, n, m, rf = S.layer_matrices("conv2d", kernel)
    assert (n, m, rf) == (8, 4, 9) and len(mats) == 9 and mats[0].shape == (8, 4)
    np.testing.assert_allclose(mats[4], kernel[:, :, 1, 1] * np.sqrt(0.5))
    assert S.layer_spectrum("c", "conv2d", np.zeros((4, 1, 1, 1))) is None  # 1 eigenvalue: skipped


def test_a_model_without_weights_is_refused() -> None:
    record = ModelRecord(model=nn.Sequential(nn.ReLU()), train_x=np.zeros((1, 2)), train_y=np.zeros(1, int))
    with pytest.raises(InputError, match="no dense or 2-D convolution layer"):
        get_measure("spectral_alpha")(record)
    tiny = ModelRecord(model=nn.Sequential(nn.Linear(3, 2)), train_x=np.zeros((1, 3)), train_y=np.zeros(1, int))
    with pytest.raises(InputError, match="no layer with 8 to 15000 eigenvalues"):
        get_measure("spectral_alpha")(tiny)
