"""The inference path of torch modules: backends agree with eager torch, fall back or fail clearly, are recorded.

Tolerance of the comparisons: what the selection itself demands of a
backend (``inference.LOGIT_ATOL + inference.LOGIT_RTOL * max|logit|`` on
every logit, the same predicted class on every row); the instruments' decisions (zero-one losses,
examination predictions) equal, their p-values within 0.01.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.models import as_classifier
from fitaudit.models.architectures import build_architecture
from fitaudit.models.inference import (
    LOGIT_ATOL,
    LOGIT_RTOL,
    check_backend,
    default_backend,
    set_default_backend,
    using_backend,
)
from fitaudit.models.inference import runners as R
from fitaudit.models.inference import select as S

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """Every test gets its own cache folder (exports and choices), and a one-round batch-size probe (time)."""
    monkeypatch.setenv("FITAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(S, "PROBE_ROUNDS", 1)
    return tmp_path / "cache" / "inference"


def eager_logits(module, x):
    with torch.no_grad():
        return module(torch.from_numpy(x)).double().numpy()


def tolerance(reference):
    return LOGIT_ATOL + LOGIT_RTOL * np.abs(reference).max()


def images(n=40, side=32, seed=0):
    return np.random.default_rng(seed).random((n, 3, side, side), dtype=np.float32)


ARCHITECTURES = [
    {"architecture": "shapes_alexnet", "kwargs": {"n_classes": 4, "width": 8}},
    {"architecture": "shapes_resnet", "kwargs": {"n_classes": 4, "width": 8}},
    {"architecture": "mlp", "kwargs": {"in_features": 3 * 32 * 32, "hidden_sizes": [32], "n_classes": 4}},
]


@pytest.mark.parametrize("config", ARCHITECTURES, ids=lambda c: c["architecture"])
@pytest.mark.parametrize("backend", ["auto", "torch", "onnx"])
@pytest.mark.slow
def test_every_backend_agrees_with_eager_torch(config, backend):
    torch.manual_seed(0)
    module = build_architecture(config).eval()
    x = images()
    reference = eager_logits(module, x)
    clf = as_classifier(module, backend=backend)
    logits = clf.logits(x)
    assert np.max(np.abs(logits - reference)) <= tolerance(reference)
    assert np.array_equal(clf.predict(x), reference.argmax(1))
    info = clf.inference_info
    assert info["requested"] == backend and info["input_shape"] == [3, 32, 32]
    assert info["backend"] in ("torch", "onnxruntime") and info["threads"] == torch.get_num_threads()
    assert info["batch_size"] == clf.batch_size >= 1
    if backend == "onnx":
        assert (info["backend"], info["mode"]) == ("onnxruntime", "onnx")
    if backend == "torch":
        assert info["backend"] == "torch" and "onnx" not in info["rows_per_s"]
    assert clf.model is module  # gradients, training and perturbations use the module itself


@pytest.mark.slow
def test_a_pgdl_zoo_member_runs_through_onnx():
    module = build_architecture({"architecture": "pgdl_nin", "kwargs": {"n_classes": 10}}).eval()
    x = images(16)
    reference = eager_logits(module, x)
    clf = as_classifier(module, backend="onnx")
    assert np.max(np.abs(clf.logits(x) - reference)) <= tolerance(reference)


@pytest.mark.slow
def test_resnet18_has_the_published_size_and_runs_through_onnx():
    module = build_architecture({"architecture": "resnet18", "kwargs": {"n_classes": 1000}}).eval()
    assert sum(p.numel() for p in module.parameters()) == 11_689_512  # torchvision's resnet18
    x = images(2, side=64)
    reference = eager_logits(module, x)
    clf = as_classifier(module, backend="onnx")
    assert np.max(np.abs(clf.logits(x) - reference)) <= tolerance(reference)


def test_before_the_first_batch_only_the_request_is_known():
    clf = as_classifier(torch.nn.Linear(3, 2), backend="torch")
    assert clf.inference_info == {"requested": "torch", "device": "cpu", "backend": None}


def test_disagreement_tolerance_and_classes():
    reference = np.array([[0.0, 5.0, 1.0], [2.0, 2.00001, 0.0]])
    assert S.disagreement(reference, reference + 1e-5) is None
    tol = LOGIT_ATOL + LOGIT_RTOL * 5.0
    assert S.disagreement(reference, reference + 0.99 * tol) is None
    assert "differ from eager torch by up to 0.0102 (tolerance 0.0051)" in S.disagreement(reference, reference + 2 * tol)
    swapped = reference.copy()
    swapped[1] = [2.00001, 2.0, 0.0]  # within the tolerance, but another predicted class
    assert S.disagreement(reference, swapped) == "it predicts another class than eager torch for 1 of 2 check inputs"
    assert "shape" in S.disagreement(reference, reference[:1])
    assert "non-finite" in S.disagreement(reference, np.full_like(reference, np.nan))


@pytest.mark.slow
def test_same_seed_same_numbers_for_a_fixed_backend_and_the_choice_is_cached(cache):
    torch.manual_seed(1)
    module = build_architecture(ARCHITECTURES[0]).eval()
    x = images(30)
    first = as_classifier(module, backend="onnx")
    a = first.logits(x)
    assert first.inference_info["reused"] is False
    assert any(p.suffix == ".onnx" for p in cache.iterdir())
    second = as_classifier(module, backend="onnx")
    b = second.logits(x)
    assert second.inference_info["reused"] is True
    assert second.inference_info["batch_size"] == first.inference_info["batch_size"]
    np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_a_cached_choice_is_made_again_when_its_inputs_change(monkeypatch):
    """Another thread count or tuning constant is another cache key; a cached batch that no longer fits the memory
    budget is chosen again."""
    torch.manual_seed(1)
    module = build_architecture(ARCHITECTURES[0]).eval()
    x = images(30)
    first = as_classifier(module, backend="onnx")
    first.logits(x)
    assert first.inference_info["reused"] is False
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(threads + 1)
        other = as_classifier(module, backend="onnx")
        other.logits(x)
        assert other.inference_info["reused"] is False
    finally:
        torch.set_num_threads(threads)
    with monkeypatch.context() as patch:  # a tuning constant of the rule changed: chosen again, no version bump needed
        patch.setattr(S, "ONNX_PREFERENCE", S.ONNX_PREFERENCE + 0.1)
        retuned = as_classifier(module, backend="onnx")
        retuned.logits(x)
        assert retuned.inference_info["reused"] is False
    again = as_classifier(module, backend="onnx")
    again.logits(x)
    assert again.inference_info["reused"] is True
    per_row = first.inference_info["bytes_per_row"]
    chosen = first.inference_info["batch_size"]
    if chosen > S.BATCH_CANDIDATES[0]:
        monkeypatch.setattr(S, "memory_budget", lambda: (chosen - 1) * per_row)
        tight = as_classifier(module, backend="onnx")
        tight.logits(x)
        assert tight.inference_info["reused"] is False and tight.inference_info["batch_size"] < chosen


@pytest.mark.slow
def test_weights_changed_in_place_are_noticed():
    torch.manual_seed(2)
    module = build_architecture(ARCHITECTURES[0]).eval()
    x = images(20)
    clf = as_classifier(module, backend="onnx")
    before = clf.logits(x)
    with torch.no_grad():
        for p in module.parameters():
            p.mul_(1.5)
    after = clf.logits(x)
    reference = eager_logits(module, x)
    assert not np.allclose(before, after)
    assert np.max(np.abs(after - reference)) <= tolerance(reference)


@pytest.mark.slow
def test_pickled_adapter_chooses_again_and_gives_the_same_numbers():
    torch.manual_seed(3)
    module = build_architecture(ARCHITECTURES[0]).eval()
    x = images(20)
    clf = as_classifier(module, backend="onnx")
    a = clf.logits(x)
    copy = pickle.loads(pickle.dumps(clf))
    assert copy.inference_info["backend"] is None
    np.testing.assert_array_equal(copy.logits(x), a)
    assert copy.inference_info["reused"] is True


class DataDependent(torch.nn.Module):
    """A branch on the input's values: a trace or an export would freeze one branch."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, x):
        if float(x.sum()) > 0:
            return self.linear(x)
        return -self.linear(x)


@pytest.mark.slow
def test_a_model_that_cannot_be_exported_falls_back_under_auto_and_fails_when_forced(monkeypatch):
    monkeypatch.setattr(S, "EAGER_FAST_ENOUGH", float("inf"))  # even a tiny model tries every backend
    module = DataDependent().eval()
    x = np.random.default_rng(0).normal(size=(12, 4)).astype(np.float32)
    with pytest.warns(RuntimeWarning, match=r"fitaudit: the onnx backend is not used for this model: .*; running it in torch"):
        clf = as_classifier(module, backend="auto")
        logits = clf.logits(x)
    np.testing.assert_allclose(logits, eager_logits(module, x), atol=1e-6)
    assert clf.inference_info["backend"] == "torch" and "onnx" in clf.inference_info["rejected"]
    with pytest.raises(InputError, match=r"^`backend` is 'onnx' but the model cannot run there: "):
        as_classifier(DataDependent().eval(), backend="onnx").logits(x)


@pytest.mark.slow
def test_a_failed_export_prints_nothing_on_stdout_and_its_reason_is_one_plain_line(monkeypatch, capfd):
    """The TorchScript exporter dumps the graph it failed on to stdout from C++ ("Torch IR graph at
    exception"), where a command's --json goes; the dynamo exporter colours its message."""
    from fitaudit.models.shapes_nets import shapes_alexnet

    monkeypatch.setattr(S, "EAGER_FAST_ENOUGH", float("inf"))
    module = shapes_alexnet(12, 8).eval()  # adaptive max pooling to 4 x 4 of an 11 x 11 map: not exportable
    x = np.random.default_rng(0).random((16, 3, 45, 45), dtype=np.float32)
    with pytest.warns(RuntimeWarning, match="the ONNX export failed") as caught:
        logits = as_classifier(module, backend="auto").logits(x)
    np.testing.assert_allclose(logits, eager_logits(module, x), atol=1e-5)
    out, _ = capfd.readouterr()
    assert out == ""
    assert not any("\x1b" in str(w.message) for w in caught)


@pytest.mark.slow
def test_an_export_that_disagrees_is_not_used(monkeypatch):
    real = R.onnx

    def off_by_one(*args, **kwargs):
        runner = real(*args, **kwargs)
        return R.Runner("onnx", "onnxruntime", lambda x: runner(x) + 1.0, runner.threads)

    monkeypatch.setattr(R, "onnx", off_by_one)
    monkeypatch.setattr(S, "EAGER_FAST_ENOUGH", float("inf"))
    module = build_architecture(ARCHITECTURES[2]).eval()
    x = images(10)
    with pytest.warns(RuntimeWarning, match="its logits differ from eager torch by up to 1"):
        clf = as_classifier(module)
        clf.logits(x)
    assert clf.inference_info["backend"] == "torch"
    with pytest.raises(InputError, match="`backend` is 'onnx' but .*its logits differ from eager torch"):
        as_classifier(module, backend="onnx").logits(x)


@pytest.mark.parametrize("version, message", [(None, "onnxruntime is not installed"), ((1, 10, 0), "onnxruntime 1.10.0 is too old")])
def test_onnxruntime_missing_or_too_old(monkeypatch, version, message):
    monkeypatch.setattr(R, "onnxruntime_version", lambda: version)
    monkeypatch.setattr(S, "EAGER_FAST_ENOUGH", float("inf"))
    module = build_architecture(ARCHITECTURES[2]).eval()
    x = images(6)
    with pytest.warns(RuntimeWarning, match=message):
        clf = as_classifier(module)
        clf.logits(x)
    assert clf.inference_info["backend"] == "torch"
    with pytest.raises(InputError, match=message):
        as_classifier(module, backend="onnx").logits(x)


def test_a_fast_model_stays_eager_under_auto():
    clf = as_classifier(torch.nn.Linear(4, 3))
    clf.logits(np.zeros((5, 4), np.float32))
    info = clf.inference_info
    if "note" in info:  # on a very busy machine the tiny model may measure slow and be optimised
        assert info["mode"] == "eager" and info["rows_per_s"].keys() == {"eager"}


def test_a_backend_that_does_not_apply_is_an_input_error():
    from sklearn.linear_model import LogisticRegression

    fitted = LogisticRegression().fit(np.eye(4)[:, :2], [0, 1, 0, 1])
    with pytest.raises(InputError, match=r"`backend` is 'onnx' but the model is a scikit-learn model"):
        as_classifier(fitted, backend="onnx")
    with pytest.raises(InputError, match=r"`backend` must be one of 'auto', 'torch', 'onnx', 'eager'; got 'tensorrt'"):
        as_classifier(torch.nn.Linear(2, 2), backend="tensorrt")
    onnx_bytes = _onnx_bytes(torch.nn.Linear(2, 3))
    with pytest.raises(InputError, match=r"`backend` is 'torch' but the model is an ONNX model"):
        as_classifier(onnx_bytes, backend="torch")
    with using_backend("torch"), pytest.raises(InputError, match="`backend` is 'torch' but the model is an ONNX"):
        as_classifier(onnx_bytes)
    assert as_classifier(onnx_bytes, backend="onnx").kind == "onnx"
    with using_backend("onnx"):  # the process default concerns torch and ONNX models only
        assert as_classifier(fitted).kind == "sklearn"


def _onnx_bytes(module):
    return R._export_bytes(module.eval(), torch.zeros(2, 2))


def test_default_backend_is_process_wide_and_scoped(monkeypatch):
    from fitaudit.models.inference import settings

    monkeypatch.setattr(settings, "_state", dict(settings._state))  # set_default_backend below names one for good
    assert default_backend() == "auto"
    with using_backend("torch"):
        assert default_backend() == "torch"
        assert as_classifier(torch.nn.Linear(2, 2)).requested_backend == "torch"
    assert default_backend() == "auto"
    set_default_backend("onnx")
    assert as_classifier(torch.nn.Linear(2, 2)).requested_backend == "onnx"
    with pytest.raises(InputError, match="`backend` must be one of"):
        check_backend("fast")


def test_cli_has_backend_on_every_command():
    from fitaudit.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["inspect", "--model", "m.onnx", "--backend", "onnx"])
    assert args.backend == "onnx"
    assert parser.parse_args(["pgdl", "--help"] if False else ["inspect", "--model", "m.onnx"]).backend is None


class SimulatedClock:
    """A clock that only the simulated runners advance: the probe's readings are exact, no wall-clock involved."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def simulated_runner(clock, seconds, calls=None):
    """A runner whose call on ``n`` rows takes ``seconds(n)`` on ``clock`` (and records ``n`` in ``calls``)."""

    def run(x):
        clock.now += seconds(len(x))
        if calls is not None:
            calls.append(len(x))
        return np.zeros((len(x), 2))

    return R.Runner("onnx", "onnxruntime", run, 1)


@pytest.fixture
def clock(monkeypatch):
    simulated = SimulatedClock()
    monkeypatch.setattr(S, "_clock", simulated)
    return simulated


def test_batch_size_is_the_largest_that_does_not_slow_the_run_within_the_budget(clock):
    calls = []
    runner = simulated_runner(clock, lambda n: 0.002 + 1e-5 * n, calls)  # a cost per call: larger batches are faster per row
    check = np.zeros((5, 3), np.float32)
    size, measured = S.choose_batch_size(runner, check, per_row=1000, budget=10**9)
    assert size == max(S.BATCH_CANDIDATES) and set(measured) == {str(b) for b in S.BATCH_CANDIDATES}
    # every reading did the same work: one pass over as many rows as the largest size
    assert sum(calls[1:]) % max(S.BATCH_CANDIDATES) == 0
    size, measured = S.choose_batch_size(runner, check, per_row=1000, budget=300_000)
    assert size == 256 and set(measured) == {"32", "128", "256"}
    assert measured["256"] == pytest.approx(256 / (0.002 + 1e-5 * 256), rel=1e-6)  # the readings are the simulated rates
    assert S.choose_batch_size(runner, check, per_row=1000, budget=100_000) == (32, {})  # one size fits: no probe
    # a cost per row that grows with the batch (cache misses): small batches win
    size, _ = S.choose_batch_size(simulated_runner(clock, lambda n: 1e-6 * n**1.5), check, per_row=10, budget=10**9)
    assert size == 32


@pytest.mark.parametrize(
    ("rates", "chosen"),
    [
        ({32: 8000, 128: 9000, 256: 10_000, 512: 9000, 2048: 8000}, 256),  # 512 at 90% of the fastest: too slow
        ({32: 8000, 128: 9000, 256: 10_000, 512: 9600, 2048: 8000}, 512),  # 512 at 96%: kept (the larger batch)
        ({32: 11_000, 128: 11_500, 256: 12_200, 512: 13_700, 2048: 13_800}, 2048),  # rising: the largest
        ({32: 12_000, 128: 9000, 256: 9000, 512: 9000, 2048: 9000}, 32),  # only the smallest is fast
    ],
)
def test_the_probe_picks_the_batch_a_known_speed_curve_calls_for(clock, rates, chosen):
    runner = simulated_runner(clock, lambda n: n / rates[n] if n in rates else 0.0)  # the warm-up call is free
    size, measured = S.choose_batch_size(runner, np.zeros((5, 3), np.float32), per_row=10, budget=10**9)
    assert size == chosen
    assert measured == {str(b): pytest.approx(r, rel=1e-6) for b, r in rates.items()}


def test_one_slow_reading_does_not_move_the_choice(clock, monkeypatch):
    """A reading slowed by another process (here the first of 256 in round one) is outvoted by the other rounds."""
    rates = {32: 8000, 128: 9000, 256: 10_000, 512: 9000, 2048: 8000}
    slowed = {"calls": 0}

    def seconds(n):
        if n == 256 and slowed["calls"] < 8:  # the whole first pass at 256 (2048 rows) runs at half speed
            slowed["calls"] += 1
            return 2 * n / rates[n]
        return n / rates.get(n, 1e9)

    monkeypatch.setattr(S, "PROBE_ROUNDS", 3)
    size, measured = S.choose_batch_size(simulated_runner(clock, seconds), np.zeros((5, 3), np.float32), per_row=10,
                                         budget=10**9)
    assert slowed["calls"] == 8 and size == 256 and measured["256"] == pytest.approx(10_000)


def test_onnxruntime_is_kept_unless_a_torch_mode_is_clearly_faster():
    assert S.fastest_mode({"eager": 3000.0, "onnx": 9000.0, "jit": 9800.0}) == "onnx"  # 9% faster: not enough
    assert S.fastest_mode({"eager": 3000.0, "onnx": 9000.0, "jit": 10_000.0}) == "jit"  # 11% faster
    assert S.fastest_mode({"eager": 3000.0, "onnx": 9000.0, "jit": 8000.0}) == "onnx"
    assert S.fastest_mode({"eager": 3000.0, "channels_last": 5000.0, "jit": 4000.0}) == "channels_last"  # no onnx


def test_candidates_are_timed_at_two_call_sizes_unless_a_call_would_be_slow():
    check = np.arange(5 * 3, dtype=np.float32).reshape(5, 3)
    batches = S.timing_batches(check, per_row_seconds=1e-4)
    assert [len(b) for b in batches] == list(S.TIMING_ROWS) == [128, 512]
    np.testing.assert_array_equal(batches[0][5:10], check)  # the check batch repeated
    assert [len(b) for b in S.timing_batches(check, per_row_seconds=1e-3)] == [128]  # 512 rows would take 0.5 s
    assert S.timing_batches(check, per_row_seconds=0.01)[0] is check  # even 128 rows too slow: the check batch


@pytest.mark.slow
def test_auto_times_every_torch_mode_beside_onnxruntime():
    """The traced copy is timed even when the export works (it is sometimes the fastest); the choice follows the rule."""
    module = build_architecture(ARCHITECTURES[1]).eval()
    clf = as_classifier(module, backend="auto")
    clf.logits(images(8))
    rates = clf.inference_info["rows_per_s"]
    assert {"eager", "onnx", "channels_last", "jit"} <= set(rates)
    assert clf.inference_info["mode"] == S.fastest_mode(rates)


def test_onnxruntime_sessions_stop_spinning_when_a_call_returns():
    """Threads spinning on after a call would keep a core busy, slowing whatever runs next."""
    options = R.session_options(3)
    assert options.get_session_config_entry("session.force_spinning_stop") == "1"
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "1"  # within a call: small batches
    assert (options.intra_op_num_threads, options.inter_op_num_threads) == (3, 1)


def test_memory_per_row_counts_every_layer_output():
    module = torch.nn.Sequential(torch.nn.Linear(4, 10), torch.nn.ReLU(), torch.nn.Linear(10, 3))
    per_row = S.bytes_per_row(module, np.zeros((5, 4), np.float32), torch.device("cpu"), torch.float32)
    assert per_row == 4 * (4 + 10 + 10 + 3)


@pytest.mark.slow
def test_torch_modes_are_checked_too(monkeypatch):
    """A torch mode that disagrees (here channels_last made wrong) is rejected, not used."""
    real = R.channels_last

    def wrong(*args, **kwargs):
        runner = real(*args, **kwargs)
        return R.Runner("channels_last", "torch", lambda x: -runner(x), runner.threads)

    monkeypatch.setattr(R, "channels_last", wrong)
    module = build_architecture(ARCHITECTURES[0]).eval()
    clf = as_classifier(module, backend="torch")
    x = images(8)
    reference = eager_logits(module, x)
    assert np.max(np.abs(clf.logits(x) - reference)) <= tolerance(reference)
    assert "differ" in clf.inference_info["rejected"]["channels_last"]
    assert clf.inference_info["mode"] != "channels_last"


@pytest.mark.slow
def test_warnings_are_silent_when_every_backend_applies():
    module = build_architecture(ARCHITECTURES[0]).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        as_classifier(module).logits(images(8))


def eager_today(module, n_classes):
    """The adapter before the inference path: eager torch, batches of 256."""
    from fitaudit.models import CallableClassifier

    def forward(x):
        with torch.inference_mode():
            return module(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))).double().numpy()

    return CallableClassifier(forward, n_classes=n_classes, batch_size=256)


@pytest.fixture(scope="module")
def shapes_cnn():
    torch.manual_seed(5)
    return build_architecture({"architecture": "shapes_alexnet", "kwargs": {"n_classes": 4, "width": 8}}).eval()


@pytest.mark.slow
def test_overfitting_test_decides_the_same_through_every_backend(shapes_cnn, tmp_path, monkeypatch):
    from fitaudit.data.shapes.datasets import FreePositionLayout, make_free_position_dataset
    from fitaudit.overfit import TranslationAEG, centre_crop, overfit_test

    monkeypatch.setenv("FITAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    eps = 2
    layout = FreePositionLayout(crop_size=32, margin=3 * eps, object_size=20, wrap=True)
    data = make_free_position_dataset(8, 1, layout=layout, split="test", classes=[0, 1, 2, 3], random_state=0)
    canvases = data.canvases
    reference = eager_today(shapes_cnn, 4)
    y = reference.predict(centre_crop(canvases, 3 * eps))
    y[::4] = (y[::4] + 1) % 4
    aeg = TranslationAEG(eps=eps, margin=3 * eps, variant="strongest")
    results = {"eager": overfit_test(reference, canvases, y, aeg)}
    for backend in ("torch", "onnx", "auto"):
        results[backend] = overfit_test(as_classifier(shapes_cnn, backend=backend), canvases, y, aeg)
    base = results["eager"]
    assert base.risk_plain == 0.25
    for backend, result in results.items():
        assert (result.risk_plain, result.n_success, result.evaluations) == (
            base.risk_plain, base.n_success, base.evaluations), backend
        assert abs(result.pvalue - base.pvalue) <= 0.01, backend
        assert result.risk_adversarial == pytest.approx(base.risk_adversarial, abs=1e-12), backend


@pytest.mark.slow
def test_examination_logs_agree_across_backends_and_repeat_for_a_fixed_one(shapes_cnn):
    from fitaudit.data.shapes import ShapesGenerator
    from fitaudit.examine import examine

    generator = ShapesGenerator(1, classes=[0, 1, 2, 3], image_size=32)
    options = {"examiner": "random", "steps": 8, "random_state": 0, "weakness": False,
               "examiner_options": {"queries_per_step": 4}}
    base = examine(eager_today(shapes_cnn, 4), generator, **options)
    for backend in ("torch", "onnx"):
        clf = as_classifier(shapes_cnn, backend=backend)
        result = examine(clf, generator, **options)
        np.testing.assert_array_equal(result.queries["predicted"], base.queries["predicted"])
        np.testing.assert_array_equal(result.queries["step"], base.queries["step"])
        probability = result.queries["true_class_probability"]
        np.testing.assert_allclose(probability, base.queries["true_class_probability"], atol=1e-5)
        again = examine(as_classifier(shapes_cnn, backend=backend), generator, **options)
        np.testing.assert_array_equal(again.queries["loss"], result.queries["loss"])  # same seed, same numbers


def test_penultimate_features_hook_the_module_whatever_the_backend():
    from fitaudit.leakage import penultimate_features

    torch.manual_seed(4)
    module = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3)).eval()
    x = np.random.default_rng(0).normal(size=(9, 6)).astype(np.float32)
    clf = as_classifier(module, backend="onnx")
    clf.logits(x)  # the adapter now runs onnxruntime, where no torch hook is called
    with torch.no_grad():
        hidden = module[:2](torch.from_numpy(x)).numpy()
    expected = hidden / np.linalg.norm(hidden, axis=1, keepdims=True)
    np.testing.assert_allclose(penultimate_features(clf, x, batch_size=4), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_a_given_batch_size_is_kept_and_a_saved_model_takes_the_backend(tmp_path):
    from fitaudit.models import save_torch_model

    config = ARCHITECTURES[2]
    torch.manual_seed(6)
    module = build_architecture(config).eval()
    x = images(12)
    fixed = as_classifier(module, batch_size=5, backend="onnx")
    fixed.logits(x)
    assert fixed.inference_info["batch_size"] == fixed.batch_size == 5
    assert "batch_probe" not in fixed.inference_info
    save_torch_model(module, config, tmp_path / "model")
    loaded = as_classifier(tmp_path / "model", backend="torch")
    np.testing.assert_allclose(loaded.logits(x), eager_logits(module, x), atol=tolerance(eager_logits(module, x)))
    assert loaded.inference_info["requested"] == "torch" and loaded.inference_info["backend"] == "torch"
    assert as_classifier(tmp_path / "model", batch_size=7).batch_size == 7


@pytest.mark.slow
def test_adapters_sent_to_joblib_workers_give_the_same_logits():
    from operator import methodcaller

    from fitaudit.parallel import parallel_map

    torch.manual_seed(7)
    module = build_architecture(ARCHITECTURES[0]).eval()
    x = images(10)
    clf = as_classifier(module, backend="onnx")
    here = clf.logits(x)
    there = parallel_map(methodcaller("logits", x), [clf, clf], n_jobs=2)
    for logits in there:  # each worker chose again (one thread each: joblib gives workers their share of cores)
        np.testing.assert_allclose(logits, here, atol=tolerance(here))


@pytest.mark.slow
def test_backends_are_built_inside_inference_mode_too():
    """The Shapes reproduction scores its model inside ``torch.inference_mode()``: export and trace must still work."""
    module = build_architecture(ARCHITECTURES[0]).eval()
    x = images(8)
    with torch.inference_mode():
        for backend in ("onnx", "torch"):
            clf = as_classifier(module, backend=backend)
            clf.logits(x)
            assert clf.inference_info["rejected"] == {}, backend


def test_cli_backend_torch_on_an_onnx_model_is_one_line_and_exit_2(tmp_path, capsys):
    from fitaudit.cli import main

    path = tmp_path / "model.onnx"
    path.write_bytes(_onnx_bytes(torch.nn.Linear(2, 3)))
    assert main(["inspect", "--model", str(path), "--backend", "torch"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("fitaudit: error: `--backend` is 'torch' but the model is an ONNX model, which runs in "
                   "onnxruntime; use backend 'onnx' or 'auto'.")
    assert main(["inspect", "--model", str(path), "--backend", "onnx"]) == 0
    assert "note" not in capsys.readouterr().err  # the ONNX model took the backend it names
    assert default_backend() == "auto"  # the command's backend does not outlive it
    with using_backend("torch"):
        assert as_classifier(path, backend="onnx").kind == "onnx"  # a named backend wins over the default


def test_candidates_per_device_and_backend():
    """The GPU's candidates are torch on the device, reduced precision among them unless fp32 is asked; never onnxruntime."""
    import torch

    cpu, gpu = torch.device("cpu"), torch.device("cuda", 0)  # a device object only: nothing runs on it
    reduced = ["tf32", "bf16", "bf16_channels_last", "half"]
    assert S._candidates("auto", cpu) == ["onnx", "channels_last", "jit"]
    assert S._candidates("auto", gpu) == ["channels_last", "jit", *reduced]
    assert S._candidates("torch", gpu) == ["channels_last", "jit", *reduced]
    assert S._candidates("auto", gpu, "fp32") == S._candidates("torch", gpu, "fp32") == ["channels_last", "jit"]
    assert S._candidates("auto", cpu, "auto") == S._candidates("auto", cpu, "fp32")  # on the CPU auto is fp32
    assert S._candidates("onnx", cpu) == ["onnx"]


def test_float16_runner_is_refused_off_the_gpu():
    import torch

    with pytest.raises(R.RunnerUnavailable, match="GPU only"):
        R.half(torch.nn.Linear(2, 2), torch.device("cpu"), torch.float32)


def test_cli_says_when_a_forced_backend_applied_to_no_model(capsys):
    from fitaudit.cli import main

    assert main(["measures", "list", "--backend", "torch"]) == 0  # lists the measures: no model at all
    assert capsys.readouterr().err.strip() == (
        "fitaudit: note: --backend torch applied to no model: this run used no torch or ONNX model "
        "(scikit-learn and other models run as they are).")
    assert main(["measures", "list", "--backend", "auto"]) == 0  # the default: nothing to say
    assert "note" not in capsys.readouterr().err
