"""Precision as a recorded choice (fitaudit.models.inference): the rule for reduced precision, run on the CPU.

The GPU's reduced-precision runners (bf16 autocast, TF32) are built and run
here on the CPU (bf16 autocast exists there too; TF32 is plain fp32 off a
GPU); the selection is driven by injected timings, so the rule itself is
tested: a candidate is kept only when its predicted class equals fp32's on
at least 99.5% of the calibration rows, the fastest kept one wins, and the
choice names its precision and the measured disagreement.
"""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.models.inference import runners as R
from fitaudit.models.inference import select as S
from fitaudit.models.inference.settings import (
    MIN_AGREEMENT,
    check_precision,
    default_precision,
    using_precision,
)

torch = pytest.importorskip("torch")

from fitaudit.models.torch_adapter import TorchClassifier  # noqa: E402  (needs torch)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FITAUDIT_CACHE_DIR", str(tmp_path / "cache"))


def rows(n=64, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 3, 8, 8)).astype(np.float32)


def conv_net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(8 * 6 * 6, 5)).eval()


def test_agreement_rule_counts_changed_predictions():
    """Kept at 1 changed prediction in 200 (99.5% agree), rejected at 2; the measured fraction comes back."""
    reference = np.tile([[0.0, 1.0, 0.5]], (200, 1))
    candidate = reference + 1e-2  # logits off by far more than the fp32 tolerance: reduced precision may do that
    assert S.disagreement(reference, candidate) is not None
    assert S.agreement_problem(reference, candidate) == (None, 0.0)
    candidate[0] = [2.0, 1.0, 0.5]
    assert S.agreement_problem(reference, candidate) == (None, 0.005)
    candidate[1] = [2.0, 1.0, 0.5]
    why, differ = S.agreement_problem(reference, candidate)
    assert differ == 0.01 and "1.0% of the 200 calibration inputs" in why and "0.5% allowed" in why
    assert MIN_AGREEMENT == 0.995
    assert "non-finite" in S.agreement_problem(reference, np.full_like(reference, np.nan))[0]


def test_reduced_precision_runners_run_on_the_cpu_and_agree_in_class():
    module = conv_net()
    x = rows()
    reference = R.eager(module, torch.device("cpu"), torch.float32)(x)
    for runner in (R.bf16(module, torch.device("cpu"), torch.float32, x[:2]),
                   R.bf16(module, torch.device("cpu"), torch.float32, x[:2], channels_last=True),
                   R.tf32(module, torch.device("cpu"), torch.float32)):
        got = runner(x)
        assert S.agreement_problem(reference, got)[0] is None
        assert R.PRECISION_OF[runner.mode] in ("bf16", "tf32")
    assert np.array_equal(R.tf32(module, torch.device("cpu"), torch.float32)(x), reference)  # no TF32 off a GPU
    assert not np.array_equal(R.bf16(module, torch.device("cpu"), torch.float32, x[:2])(x), reference)  # bf16 rounds


def offer(monkeypatch, modes, rates):
    """Offer ``modes`` on the CPU (as a GPU would) and time every runner at ``rates[mode]`` rows/s."""
    monkeypatch.setattr(S, "_candidates", lambda backend, device, precision="auto": list(modes) if precision == "auto" else [])
    monkeypatch.setattr(S, "throughput", lambda runner, batch, **kw: float(rates[runner.mode]))


def test_auto_takes_the_fastest_candidate_that_agrees_and_records_its_precision(monkeypatch):
    offer(monkeypatch, ["bf16", "tf32"], {"eager": 1000, "bf16": 3000, "tf32": 2000})
    clf = TorchClassifier(conv_net(), n_classes=5, batch_size=64, backend="torch", precision="auto")
    x = rows()
    clf.logits(x)
    info = clf.inference_info
    assert info["mode"] == "bf16" and info["precision"] == "bf16"
    assert set(info["agreement"]) == {"bf16", "tf32"} and info["agreement"]["tf32"] == 0.0
    from fitaudit.models.inference import inference_summary

    assert inference_summary(clf)["precision"] == "bf16"


def test_a_candidate_that_changes_predictions_is_rejected(monkeypatch):
    """A bf16 runner that flips classes (made wrong here) loses to fp32 even when it is faster."""
    real = R.bf16

    def wrong(*args, **kwargs):
        runner = real(*args, **kwargs)
        return R.Runner(runner.mode, "torch", lambda x: -runner(x), runner.threads)

    monkeypatch.setattr(R, "bf16", wrong)
    offer(monkeypatch, ["bf16"], {"eager": 1000, "bf16": 9000})
    clf = TorchClassifier(conv_net(), n_classes=5, batch_size=64, backend="torch", precision="auto")
    clf.logits(rows())
    info = clf.inference_info
    assert info["mode"] == "eager" and info["precision"] == "fp32"
    assert "another class than fp32" in info["rejected"]["bf16"] and info["agreement"]["bf16"] > 0.005


def test_fp32_is_exact_fp32(monkeypatch):
    """``precision="fp32"`` offers no reduced-precision candidate: the logits are eager fp32's."""
    offer(monkeypatch, ["bf16"], {"eager": 1000, "bf16": 3000})
    module = conv_net()
    clf = TorchClassifier(module, n_classes=5, batch_size=64, backend="torch", precision="fp32")
    x = rows()
    with torch.no_grad():
        expected = module(torch.from_numpy(x)).double().numpy()
    np.testing.assert_array_equal(clf.logits(x), expected)
    assert clf.inference_info["precision"] == "fp32" and "agreement" not in clf.inference_info


def test_precision_setting_is_checked_and_scoped():
    assert default_precision() == "auto"
    with using_precision("fp32"):
        assert TorchClassifier(conv_net(), n_classes=5).precision == "fp32"
    assert default_precision() == "auto"
    with pytest.raises(InputError, match="`precision` must be one of 'auto', 'fp32'; got 'fp16'"):
        check_precision("fp16")


def test_device_path_scores_tensors_with_the_chosen_runner():
    """logits_tensor (the device path's model call) gives logits() numbers, float64 on the device."""
    module = conv_net(3)
    clf = TorchClassifier(module, n_classes=5, batch_size=16, backend="eager")
    x = rows(40, seed=2)
    got = clf.logits_tensor(clf.to_device(x))
    assert got.dtype == torch.float64 and got.device == clf.device
    np.testing.assert_array_equal(got.numpy(), clf.logits(x))
    with pytest.raises(InputError, match="failed on a batch of shape"):
        clf.logits_tensor(clf.to_device(rows(4)[:, :2]))
