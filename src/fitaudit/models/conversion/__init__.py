"""Models of one framework as torch modules, for code that walks torch networks.

* :mod:`~fitaudit.models.conversion.onnx_torch`: an ONNX file as a torch
  module running onnxruntime, with its weight tensors;
* :mod:`~fitaudit.models.conversion.keras_layers`: Keras layer configs (as
  PGDL tasks store them) as torch ``nn.Sequential`` networks of standard
  layers, and torch networks back as Keras configs and weights.

The instruments import them from here (:mod:`fitaudit.pgdl` opens its tasks
and populations with them); nothing here imports an instrument.
"""
