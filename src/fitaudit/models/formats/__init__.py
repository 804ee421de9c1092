"""Model file formats: one class per format, one table of them (:data:`FORMATS`).

Which file or folder is which format, how it loads (and what it refuses),
whether loading it runs code, what it records about its data, which files
make its fingerprint and what runs it are said once, by the format's
:class:`~fitaudit.models.formats.base.ModelFormat` subclass. Loading
(:func:`fitaudit.models.io.load_model`), reading what a file records
(:func:`fitaudit.models.io.read_model_metadata`), fingerprinting
(:mod:`fitaudit.models.fingerprint`) and ``fitaudit inspect``
(:mod:`fitaudit.models.inspection`) ask :func:`find_format` and never test
a suffix themselves. Nothing unpickles: a pickle is a format whose
:meth:`~fitaudit.models.formats.base.ModelFormat.load` refuses it, and
TorchScript loads only when the caller trusts it.

=============  ==============================  ===========================  ===========
format         recognised by                   loaded by                    runs on
=============  ==============================  ===========================  ===========
onnx           ``.onnx``                       onnxruntime                  onnxruntime
xgboost        ``.ubj``; ``.json`` "learner"   XGBoost (checked first)      XGBoost
lightgbm       ``.txt`` starting ``tree``      LightGBM (checked first)     LightGBM
hf             config.json with model_type     transformers, safetensors    torch
keras          ``.keras``                      keras, torch backend         torch
torch          a folder; .json, .safetensors   the architecture + weights   torch
skops          ``.skops``                      skops, allowlist             scikit-learn
torchscript    ``.pt .pth .ts .torchscript``   only trust_torchscript       torch
pickle         ``.pkl .pickle .joblib ...``    never: refused               --
=============  ==============================  ===========================  ===========

The order of :data:`FORMATS` is the order formats are tried: a ``.json``
file is XGBoost's when its content says so, a folder or ``config.json`` is
a Hugging Face model when its config names a ``model_type``, and any other
folder is a torch model folder (which then names what it lacks).

**Adding a format** is one module here with a ``ModelFormat`` subclass and
its line in :data:`FORMATS`, plus its case in
``tests/models/test_format_contract.py``: that test runs every format in
the table through the same contract (recognised, loaded, predicting as its
own library does, fingerprint stable and following the weights,
inspected) and fails for a format without a case.
"""

from __future__ import annotations

from pathlib import Path

from fitaudit.models.formats.base import ModelFormat
from fitaudit.models.formats.boosting import LightGBMFile, XGBoostFile
from fitaudit.models.formats.hf import HFFolder
from fitaudit.models.formats.keras import KerasFile
from fitaudit.models.formats.onnx import OnnxFile
from fitaudit.models.formats.skops import SkopsFile
from fitaudit.models.formats.torch_folder import TorchFolder
from fitaudit.models.formats.torchscript import PickleFile, TorchScriptFile

#: every model format by name, in the order they are tried (:func:`find_format`)
FORMATS: dict[str, ModelFormat] = {
    fmt.name: fmt
    for fmt in (OnnxFile(), XGBoostFile(), LightGBMFile(), HFFolder(), KerasFile(), TorchFolder(), SkopsFile(),
                TorchScriptFile(), PickleFile())
}


def find_format(path: Path) -> ModelFormat | None:
    """The first format of :data:`FORMATS` that recognises ``path``; None when none does."""
    return next((fmt for fmt in FORMATS.values() if fmt.recognises(path)), None)


__all__ = ["FORMATS", "ModelFormat", "find_format"]
