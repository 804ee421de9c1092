"""One inference path for torch models: the fastest backend that agrees with eager torch.

Every instrument scores a torch ``nn.Module`` through
:class:`~fitaudit.models.torch_adapter.TorchClassifier` (what
:func:`~fitaudit.models.as_classifier` makes of it). On the first batch of
each input shape the adapter chooses how to run it
(:func:`~fitaudit.models.inference.select.select_engine`):

* ``backend="auto"`` (the default): on the CPU, the module exported to ONNX
  and run by onnxruntime, torch with channels-last tensors, or a traced and
  ``optimize_for_inference``-d copy, whichever is fastest among those whose
  logits agree with eager torch on a check batch (the first 64 inputs:
  every logit within ``1e-4 + 1e-3 * max|logit|``, the same predicted class
  on every input); eager torch otherwise. onnxruntime is kept unless a torch
  mode reads 10% faster (its speed is the steadier). A module whose eager
  pass already runs 50,000 rows/s stays eager (no backend could save more
  than choosing costs). On a GPU: torch on the device; with precision
  ``"auto"`` (``--precision``, the default) also TF32, bf16 and fp16
  autocast, each kept only when its predicted class equals fp32's on at
  least 99.5% of the check batch (:data:`~fitaudit.models.inference.settings.MIN_AGREEMENT`;
  the measured disagreement is recorded); ``--precision fp32`` keeps exact
  fp32 (TF32 off). On the CPU every candidate is fp32.
* ``backend="torch"``: the fastest of the torch modes that pass the check.
* ``backend="onnx"``: onnxruntime, or an :class:`~fitaudit.InputError`
  saying why it cannot be used.
* ``backend="eager"``: eager torch at a fixed batch size (the caller's, else
  :data:`~fitaudit.models.inference.settings.EAGER_BATCH_SIZE`), nothing
  chosen by timing, so the same logits on every machine with the same torch
  and thread count. The adaptive examiner (:func:`fitaudit.examine.examine`)
  runs torch models this way unless a backend is named: its search
  amplifies the backends' tiny differences.

The batch size (unless the caller fixes it) is the largest within a memory
budget that does not slow the run (a short probe); onnxruntime uses torch's
intra-op thread count (the cores, or fewer inside a joblib worker, which
limits each worker to its share). Exports and choices are cached on disk by
the weights' fingerprint and the input shape (:func:`cache_dir`), so they
are made once. The adapter records what it chose in ``inference_info``.

Weights changed in place after wrapping are noticed (tensor version
counters) and the choice is made again; training, gradients and weight
perturbations use the adapter's ``.model``, the torch module itself.
"""

from __future__ import annotations

from typing import Any

from fitaudit.models.inference.settings import (
    BACKENDS,
    LOGIT_ATOL,
    LOGIT_RTOL,
    cache_dir,
    check_backend,
    default_backend,
    set_default_backend,
    using_backend,
)

#: the fields of ``inference_info`` that a result records (the measured rates are left out: they vary run to run)
RECORDED_FIELDS = ("requested", "backend", "mode", "precision", "threads", "batch_size")


def inference_summary(classifier: Any) -> dict[str, Any] | None:
    """How ``classifier`` ran its last batch, for a result's record; ``None`` for a model without an inference path.

    ``{"requested": "auto", "backend": "onnxruntime", "mode": "onnx",
    "precision": "fp32", "threads": 2, "batch_size": 512}`` for a torch module (before its first
    batch, only ``requested`` is set); ``None`` for ONNX, scikit-learn and
    callable models, which run as they are.
    """
    info = getattr(classifier, "inference_info", None)
    if not isinstance(info, dict):
        return None
    return {name: info.get(name) for name in RECORDED_FIELDS}


def run_record(classifier: Any) -> dict[str, Any] | None:
    """:func:`inference_summary` plus the ``device`` and, for reduced precision, its measured ``disagreement`` with fp32.

    ``disagreement`` is the fraction of the calibration batch whose predicted
    class differed from fp32's (:func:`fitaudit.models.inference.select.agreement_problem`);
    ``None`` for a model without an inference path.
    """
    summary = inference_summary(classifier)
    if summary is None:
        return None
    info = classifier.inference_info
    record = {**summary, "device": info.get("device")}
    measured = info.get("agreement") or {}
    if info.get("mode") in measured:
        record["disagreement"] = measured[info["mode"]]
    return record


__all__ = [
    "BACKENDS",
    "LOGIT_ATOL",
    "LOGIT_RTOL",
    "cache_dir",
    "RECORDED_FIELDS",
    "check_backend",
    "default_backend",
    "inference_summary",
    "run_record",
    "set_default_backend",
    "using_backend",
]
