"""scikit-learn models in ``.skops`` files, loaded with an explicit allowlist (:mod:`fitaudit.models.skops_trust`).

A ``.skops`` file is a zip of a JSON schema and arrays that skops rebuilds
type by type; every type or function beyond skops' own trusted set must be
on fitaudit's allowlist, else the file is refused before anything is built
(unless the caller trusts it). The archive is bounded before it is
inflated (:func:`fitaudit.data.archives.check_archive`). The file records
nothing beside the model; its input is read from the loaded model's
``n_features_in_`` (flat images).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.data.archives import check_archive
from fitaudit.models import skops_trust
from fitaudit.models.base import Classifier
from fitaudit.models.formats.base import ModelFormat, ModelMetadata, first_lines
from fitaudit.models.layout import InputSpec, input_spec


def load_skops(
    path: str | os.PathLike[str],
    *,
    name: str = "path",
    trusted: Sequence[str] = (),
    trust_code: bool = False,
) -> Any:
    """Load a scikit-learn model from a ``.skops`` file, trusting only an explicit allowlist.

    Every type or function the file needs beyond skops' default set must be in
    :data:`fitaudit.models.skops_trust.TRUSTED_TYPES` or
    :data:`~fitaudit.models.skops_trust.TRUSTED_FUNCTIONS`, or named in
    ``trusted``; anything else is refused before the model is built, naming
    it. Trees and neighbour indices are then checked structurally
    (:func:`fitaudit.models.skops_trust.check_index_arrays`).

    Parameters
    ----------
    path : path
        The ``.skops`` file.
    name : str
        Argument name used in error messages (``"--model"`` on the CLI).
    trusted : sequence of str
        Further names (as :func:`skops.io.get_untrusted_types` writes them)
        the caller trusts on purpose.
    trust_code : bool
        Trust every name the file lists (``--trust-code``): only for files
        whose author you trust, since a function it names can run code.

    Examples
    --------
    >>> import numpy as np, skops.io, tempfile, os
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import FunctionTransformer
    >>> from sklearn.linear_model import LogisticRegression
    >>> path = os.path.join(tempfile.mkdtemp(), "m.skops")
    >>> x, y = np.abs(np.random.default_rng(0).normal(size=(20, 2))), np.arange(20) % 2
    >>> skops.io.dump(make_pipeline(FunctionTransformer(np.log1p), LogisticRegression()).fit(x, y), path)
    >>> type(load_skops(path)).__name__
    'Pipeline'
    """
    check_archive(path, name=name)
    skops_io = import_optional("skops.io", "loading a .skops model")
    file = os.fspath(path)
    try:
        untrusted = skops_io.get_untrusted_types(file=file)
    except Exception as exc:  # not a zip, or not a skops archive
        raise InputError(f"`{name}`: {file!r} is not a valid .skops file ({exc}).") from exc
    refused = [] if trust_code else skops_trust.refused_names(untrusted, trusted)
    if refused:
        raise skops_trust.refusal(file, name, refused)
    try:
        model = skops_io.load(file, trusted=list(untrusted))
    except Exception as exc:  # skops raises its own errors for schemas it cannot rebuild
        raise InputError(f"`{name}`: {file!r} could not be loaded as a .skops model ({first_lines(exc)}).") from exc
    skops_trust.check_index_arrays(model, path=file, name=name)
    return model


def skops_needs_trust(path: str | os.PathLike[str]) -> bool:
    """Whether a ``.skops`` file names anything outside fitaudit's allowlist (it loads only with trust)."""
    check_archive(path, name="--model")
    skops_io = import_optional("skops.io", "loading a .skops model")
    try:
        return bool(skops_trust.refused_names(skops_io.get_untrusted_types(file=os.fspath(path))))
    except Exception:  # not a skops archive: load_skops says so
        return False


class SkopsFile(ModelFormat):
    """A ``.skops`` file holding a fitted scikit-learn classifier (or pipeline), run by scikit-learn."""

    name = "skops"
    kind = "sklearn"
    runs_on = "native"
    suffixes = (".skops",)

    def load(
        self, path: Path, *, n_classes: int | None, batch_size: int | None, device: Any, trust_code: bool,
        trust_torchscript: bool, name: str,
    ) -> Classifier:
        from fitaudit.models.native import wrap_native

        return wrap_native(load_skops(path, name=name, trust_code=trust_code), n_classes=n_classes,
                           batch_size=batch_size, device=device)

    def runs_code(self, path: Path) -> bool:
        """Whether the file names anything outside the allowlist (:func:`skops_needs_trust`)."""
        return skops_needs_trust(path)

    def input_spec(self, path: Path, metadata: ModelMetadata, *, name: str) -> InputSpec:
        """Flat images of the loaded model's ``n_features_in_`` features (the file records nothing else)."""
        features = getattr(load_skops(path, name=name), "n_features_in_", None)
        return input_spec((int(features),) if isinstance(features, int) else None)
