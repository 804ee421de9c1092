"""Fantastic measures against straightforward numpy references on tiny networks."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fitaudit.measures import ModelRecord, get_measure  # noqa: E402
from fitaudit.measures import _fantastic as F  # noqa: E402
from fitaudit.measures import _torch as T  # noqa: E402


def numpy_folded_weights(model) -> list[np.ndarray]:
    """Kernels with the batch norm that follows a convolution folded in, by hand."""
    layers = [m for m in model.modules() if not list(m.children())]
    out: list[np.ndarray] = []
    for i, layer in enumerate(layers):
        if isinstance(layer, (torch.nn.Conv2d, torch.nn.Linear)):
            w = layer.weight.detach().double().numpy().copy()
            nxt = layers[i + 1] if i + 1 < len(layers) else None
            if isinstance(nxt, torch.nn.BatchNorm2d):
                scale = nxt.weight.detach().double().numpy() / np.sqrt(
                    nxt.running_var.double().numpy() + nxt.eps
                )
                w = w * scale[:, None, None, None]
            out.append(w.reshape(w.shape[0], -1))
    return out


def test_folding_keeps_the_function_and_moves_the_scale(record: ModelRecord) -> None:
    folded = T.fold_batchnorm(record.model)
    x = torch.as_tensor(record.train_x[:20])
    with torch.no_grad():
        assert torch.allclose(folded(x), record.model(x), atol=1e-5)
    bn = folded[1]
    assert torch.all(bn.weight == 1) and torch.all(bn.bias == 0) and torch.all(bn.running_mean == 0)
    for ours, ref in zip(T.weights(folded), numpy_folded_weights(record.model)):
        np.testing.assert_allclose(
            ours.double().numpy().reshape(ref.shape), ref, rtol=1e-5, atol=1e-7
        )
    assert not torch.equal(record.model[0].weight, folded[0].weight)


def test_batchnorm_after_an_activation_is_not_folded() -> None:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.ReLU(), torch.nn.BatchNorm2d(3))
    net[2].running_mean.uniform_(-1, 1)
    net[2].running_var.uniform_(0.5, 2)
    net.eval()
    folded = T.fold_batchnorm(net)
    assert torch.equal(folded[0].weight, net[0].weight)
    x = torch.randn(4, 2, 5, 5)
    with torch.no_grad():
        assert torch.allclose(folded(x), net(x))


def test_spectral_measures_match_numpy_svd(record: ModelRecord) -> None:
    m = len(record.train_x)
    mats = numpy_folded_weights(record.model)
    spec = np.array([np.linalg.svd(w, compute_uv=False)[0] ** 2 for w in mats])
    fro = np.array([(w**2).sum() for w in mats])
    d = len(mats)
    expected = {
        "log_spec_product": 0.5 * (np.log(spec).sum() - np.log(m)),
        "log_spec_sum": 0.5 * (np.log(d) + np.log(spec).sum() / d - np.log(m)),
        "fro_over_spec": np.sqrt((fro / spec).sum() / m),
        "log_fro_product": 0.5 * (np.log(fro).sum() - np.log(m)),
        "log_fro_sum": 0.5 * (np.log(d) + np.log(fro).sum() / d - np.log(m)),
        "param_norm": np.sqrt(fro.sum() / m),
        "parameter_count": np.sqrt(sum(w.size for w in mats) / m),
    }
    for name, value in expected.items():
        assert get_measure(name)(record) == pytest.approx(value, rel=1e-6), name


def naive_gamma(model, x, y) -> float:
    with torch.no_grad():
        z = model(torch.as_tensor(x)).double().numpy()
    margins = []
    for row, label in zip(z, y):
        others = [v for j, v in enumerate(row) if j != label]
        margins.append(row[label] - max(others))
    margins.sort()
    return abs(margins[max(1, len(margins) // 10) - 1])


def test_margin_measures_match_a_naive_percentile(record: ModelRecord) -> None:
    x, y, m = record.train_x, record.train_y, len(record.train_x)
    gamma = naive_gamma(record.model, x, y)
    assert T.margin_gamma(T.fold_batchnorm(record.model), x, y) == pytest.approx(gamma, rel=1e-5)
    mats = numpy_folded_weights(record.model)
    spec = np.array([np.linalg.svd(w, compute_uv=False)[0] ** 2 for w in mats])
    fro = np.array([(w**2).sum() for w in mats])
    d = len(mats)
    log_spec = np.log(spec).sum() - 2 * np.log(gamma)
    expected = {
        "inverse_margin": np.sqrt(1 / gamma**2 / m),
        "log_spec_product_over_margin": 0.5 * (log_spec - np.log(m)),
        "log_spec_sum_over_margin": 0.5 * (np.log(d) + log_spec / d - np.log(m)),
        "log_spec_orig_main": 0.5 * (log_spec + np.log((fro / spec).sum()) - np.log(m)),
        "log_fro_product_over_margin": 0.5 * (np.log(fro).sum() - 2 * np.log(gamma) - np.log(m)),
        "log_fro_sum_over_margin": 0.5
        * (np.log(d) + (np.log(fro).sum() - 2 * np.log(gamma)) / d - np.log(m)),
    }
    for name, value in expected.items():
        assert get_measure(name)(record) == pytest.approx(value, rel=1e-5), name


def test_distances_from_initialisation_match_numpy(record: ModelRecord) -> None:
    m = len(record.train_x)
    diffs = [
        a - b
        for a, b in zip(
            numpy_folded_weights(record.model), numpy_folded_weights(record.initial_model)
        )
    ]
    spec = np.array(
        [np.linalg.svd(w, compute_uv=False)[0] ** 2 for w in numpy_folded_weights(record.model)]
    )
    dist_fro = sum((dw**2).sum() for dw in diffs)
    dist_spec = sum(np.linalg.svd(dw, compute_uv=False)[0] ** 2 for dw in diffs)
    assert get_measure("dist_fro")(record) == pytest.approx(np.sqrt(dist_fro / m), rel=1e-6)
    assert get_measure("dist_spec")(record) == pytest.approx(np.sqrt(dist_spec / m), rel=1e-6)
    gamma = naive_gamma(record.model, record.train_x, record.train_y)
    ratio = sum((dw**2).sum() / s for dw, s in zip(diffs, spec))
    init_main = np.log(spec).sum() - 2 * np.log(gamma) + np.log(ratio)
    assert get_measure("log_spec_init_main")(record) == pytest.approx(
        0.5 * (init_main - np.log(m)), rel=1e-5
    )


def circular_conv_matrix(kernel: np.ndarray, n: int) -> np.ndarray:
    """The (out n n) x (in n n) matrix of a stride-1 convolution with circular padding, column by column."""
    out_c, in_c, kh, kw = kernel.shape
    matrix = np.zeros((out_c * n * n, in_c * n * n))
    for col, (c, i, j) in enumerate(itertools.product(range(in_c), range(n), range(n))):
        image = np.zeros((in_c, n, n))
        image[c, i, j] = 1.0
        response = np.zeros((out_c, n, n))
        for o, p, q in itertools.product(range(out_c), range(n), range(n)):
            total = 0.0
            for ci, a, b in itertools.product(range(in_c), range(kh), range(kw)):
                total += kernel[o, ci, a, b] * image[ci, (p + a) % n, (q + b) % n]
            response[o, p, q] = total
        matrix[:, col] = response.reshape(-1)
    return matrix


def test_fft_spectral_norm_is_the_exact_operator_norm() -> None:
    rng = np.random.default_rng(0)
    kernel = rng.normal(size=(3, 2, 3, 3))
    exact = np.linalg.svd(circular_conv_matrix(kernel, 5), compute_uv=False)[0]
    ours = T.conv_spectral_norm_fft(torch.as_tensor(kernel), (5, 5))
    assert ours == pytest.approx(exact, rel=1e-9)
    reshaped = np.linalg.svd(kernel.reshape(3, -1), compute_uv=False)[0]
    assert ours != pytest.approx(reshaped, rel=1e-3)


def test_exact_conv_option_changes_only_the_convolutions(record: ModelRecord) -> None:
    plain = get_measure("log_spec_product")(record)
    exact = get_measure("log_spec_product", exact_conv=True)(record)
    assert np.isfinite(exact) and exact != pytest.approx(plain)
    layers = T.weight_layers(record.model)
    reshaped = T.layer_spectral_norms(record.model, record.train_x)
    fft = T.layer_spectral_norms(record.model, record.train_x, exact_conv=True)
    is_conv = [isinstance(m, torch.nn.Conv2d) for m in layers]
    assert any(is_conv) and not all(is_conv)
    for conv, a, b in zip(is_conv, reshaped, fft):
        assert (a != pytest.approx(b, rel=1e-6)) if conv else (a == b)


def test_path_norm_equals_explicit_path_enumeration() -> None:
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).eval()
    w1, b1 = net[0].weight.detach().double().numpy(), net[0].bias.detach().double().numpy()
    w2, b2 = net[2].weight.detach().double().numpy(), net[2].bias.detach().double().numpy()
    total = 0.0
    for k in range(2):
        total += b2[k] ** 2  # the path starting at the output bias
        for j in range(4):
            total += w2[k, j] ** 2 * b1[j] ** 2  # paths starting at a hidden bias
            for i in range(3):
                total += w2[k, j] ** 2 * w1[j, i] ** 2  # input -> hidden -> output
    assert F.path_norm(net, (3,)) == pytest.approx(total, rel=1e-6)
    x = np.random.default_rng(0).normal(size=(40, 3)).astype(np.float32)
    y = np.asarray(net(torch.as_tensor(x)).argmax(1))
    rec = ModelRecord(model=net, train_x=x, train_y=y)
    assert get_measure("path_norm")(rec) == pytest.approx(np.sqrt(total / 40), rel=1e-6)
    gamma = naive_gamma(net, x, y)
    assert get_measure("path_norm_over_margin")(rec) == pytest.approx(
        np.sqrt(total / gamma**2 / 40), rel=1e-5
    )


def test_bisection_follows_the_reference_search() -> None:
    tried: list[float] = []

    def drop(s: float) -> float:
        tried.append(s)
        return s / 2

    sigma = T.bisect_sigma(drop, lower=0.0, upper=2.0, steps=15, target=0.1, tolerance=0.01)
    assert abs(sigma / 2 - 0.1) < 0.01
    lo, hi, expected = 0.0, 2.0, []
    for _ in range(15):
        mid = (lo + hi) / 2
        expected.append(mid)
        if abs(mid / 2 - 0.1) < 0.01:
            break
        lo, hi = (lo, mid) if mid / 2 > 0.1 else (mid, hi)
    assert tried == expected == [1.0, 0.5, 0.25, 0.125, 0.1875]


def test_pacbayes_bounds_match_the_formulas(record: ModelRecord) -> None:
    m = len(record.train_x)
    settings = {"search_depth": 5, "montecarlo_samples": 2}
    folded = T.fold_batchnorm(record.model)
    sigma = F.pacbayes_sigma(
        folded,
        record.train_x,
        record.train_y,
        search_depth=5,
        montecarlo_samples=2,
        max_examples=5000,
        random_state=0,
    )
    w = np.concatenate([v.ravel() for v in numpy_folded_weights(record.model)])
    w0 = np.concatenate([v.ravel() for v in numpy_folded_weights(record.initial_model)])
    orig = (w**2).sum() / (4 * sigma**2) + np.log(m / sigma) + 10
    init = ((w - w0) ** 2).sum() / (4 * sigma**2) + np.log(m / sigma) + 10
    assert get_measure("pacbayes_orig", **settings)(record) == pytest.approx(
        np.sqrt(orig / m), rel=1e-5
    )
    assert get_measure("pacbayes_init", **settings)(record) == pytest.approx(
        np.sqrt(init / m), rel=1e-5
    )
    assert get_measure("pacbayes_flatness", **settings)(record) == pytest.approx(
        np.sqrt(1 / sigma**2 / m)
    )


def test_magnitude_aware_bound_matches_a_loop() -> None:
    rng = np.random.default_rng(0)
    w, dist = rng.normal(size=7), rng.normal(size=7)
    eps, sigma, m = 1e-3, 0.3, 100
    total = 0.0
    for i in range(7):
        total += np.log(
            (eps**2 + (sigma**2 + 1) * (w**2).sum() / 7) / (eps**2 + sigma**2 * dist[i] ** 2)
        )
    expected = total / 4 + np.log(m / sigma) + 10
    ours = F.pacbayes_mag_bound(torch.as_tensor(w), torch.as_tensor(dist), sigma, eps, m)
    assert ours == pytest.approx(expected, rel=1e-12)


def test_noise_scale_is_the_standard_deviation() -> None:
    """sigma is the noise's standard deviation (the reference passed sigma^2 there); variance as written."""
    net = torch.nn.Linear(200, 200, bias=False)
    originals = [p.detach().clone() for p in net.parameters()]
    gen = torch.Generator().manual_seed(0)
    F.set_noisy_parameters(net, originals, 0.3, None, gen)
    noise = (net.weight - originals[0]).detach().double().numpy()
    assert noise.std() == pytest.approx(0.3, rel=0.02)
    with torch.no_grad():
        net.weight.fill_(2.0)
    originals = [p.detach().clone() for p in net.parameters()]
    F.set_noisy_parameters(net, originals, 0.3, 0.5, gen)
    noise = (net.weight - originals[0]).detach().double().numpy()
    assert noise.std() == pytest.approx(np.sqrt(0.3**2 * 4 + 0.5**2), rel=0.02)


@pytest.mark.slow
def test_memorising_random_labels_is_sharper_than_learning_true_ones() -> None:
    """Sanity of direction: PAC-Bayes flatness ranks a random-label fit above a true-label fit."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, 5)).astype(np.float32)
    y_true = (x[:, 0] > 0).astype(np.int64)
    y_random = np.random.default_rng(100).permutation(y_true)
    values = []
    for y in (y_true, y_random):
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(5, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        xt, yt = torch.as_tensor(x), torch.as_tensor(y)
        for _ in range(1500):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(xt), yt)
            loss.backward()
            opt.step()
            if loss.item() < 0.01:
                break
        net.eval()
        assert (net(xt).argmax(1).numpy() == y).all()
        rec = ModelRecord(model=net, train_x=x, train_y=y)
        values.append(get_measure("pacbayes_flatness", search_depth=8, montecarlo_samples=5)(rec))
    assert values[1] > 1.5 * values[0]


def test_a_shared_sigma_search_is_charged_to_every_measure_that_uses_it(record: ModelRecord, monkeypatch) -> None:
    """The PAC-Bayes measures share one search per model; each is timed as if it ran alone."""
    import time

    from fitaudit.measures.base import WorkCache, measure_clock

    clock = [0.0]
    searches = []

    def fake_search(*args, **kwargs) -> float:
        searches.append(kwargs["magnitude_eps"])
        clock[0] += 10.0  # the search "takes" 10 s
        return 0.5

    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(F, "pacbayes_sigma", fake_search)
    record = dataclasses.replace(record, cache=WorkCache())  # the record owns the cache: nothing module-level
    charged = {}
    for name in ("pacbayes_orig", "pacbayes_init", "pacbayes_flatness", "pacbayes_mag_flatness"):
        with measure_clock(record) as timing:
            get_measure(name)(record)
        charged[name] = timing.seconds
    assert searches == [None, 1e-3]  # one search per noise kind, reused by the other isotropic measures
    assert charged == {"pacbayes_orig": 10.0, "pacbayes_init": 10.0, "pacbayes_flatness": 10.0, "pacbayes_mag_flatness": 10.0}
    with measure_clock(record) as timing:  # no cached work reused: wall clock only
        clock[0] += 2.0
    assert timing.seconds == 2.0
    other = dataclasses.replace(record, cache=WorkCache())  # another record (another run) searches again
    get_measure("pacbayes_orig")(other)
    assert searches == [None, 1e-3, None]
