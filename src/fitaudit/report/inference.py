"""How a model ran, in words: device, backend and precision (:func:`fitaudit.models.inference.run_record`)."""

from __future__ import annotations

from typing import Any

#: the arithmetic each recorded precision names
_PRECISION_WORDS = {
    "fp32": "exact fp32", "fp64": "fp64", "tf32": "fp32 with TF32 matrix products",
    "bf16": "bf16 autocast", "fp16": "fp16 autocast",
}


def inference_line(record: dict[str, Any] | None) -> str | None:
    """One sentence on how the model ran, or ``None`` when nothing was recorded (no torch model, or run elsewhere).

    A reduced precision is said with the share of the calibration batch whose
    predicted class differed from fp32's (at most 0.5% is accepted).
    """
    if not record or record.get("backend") is None:
        return None
    precision = str(record.get("precision") or "fp32")
    line = (f"The model ran on {record.get('device') or 'cpu'} through {record['backend']} "
            f"({record.get('mode')}), {_PRECISION_WORDS.get(precision, precision)}")
    if "disagreement" in record:
        line += (f", chosen for speed: its predicted class differed from fp32's on "
                 f"{100 * float(record['disagreement']):.1f}% of the calibration batch (at most 0.5% accepted)")
    return line + "."
