"""The overfitting test on a model: predictions, AEG, both independence tests.

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019): compute L(f, X_i), run the
AEG to get L(f, g(X_i)) and h_g(g(X_i)), then the pairwise test (Test B) and
the confidence-interval test (Test A) of :mod:`fitaudit.overfit.independence`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import as_array, check_array, check_int, check_labels
from fitaudit.checkpoint import CheckpointStore
from fitaudit.models import as_classifier
from fitaudit.models.labels import ChanceCheck, chance_check
from fitaudit.overfit.aeg import AdversarialExampleGenerator, AEGOutput, model_n_classes
from fitaudit.overfit.decision import overfit_contradiction, overfit_verdict
from fitaudit.overfit.g3 import MIN_IMAGES, G3ShiftTest, check_g3
from fitaudit.overfit.independence import (
    CITestResult,
    IndependenceTestResult,
    PairwiseTestResult,
    check_delta,
    ci_test,
    pairwise_test,
)
from fitaudit.stats import ConfidenceInterval
from fitaudit.verdict import Verdict

#: an AEG, or a function building the AEG g_j of a given model f_j
AEGSpec = AdversarialExampleGenerator | Callable[[Any], AdversarialExampleGenerator]


@dataclasses.dataclass(repr=False)
class OverfitTestResult(IndependenceTestResult):
    """Result of :func:`overfit_test`.

    Attributes
    ----------
    statistic, pvalue, reject : float, float, bool
        Those of the pairwise test (the main test).
    delta, U, m : level, range of the T_i, number of examples.
    risk_plain : float
        R_S, the model's error rate on the sample.
    risk_adversarial : float
        R_g, the importance-weighted adversarial risk estimate.
    n_success : int
        Successful adversarial examples (L(f, x) = 0, L(f, g(x)) = 1).
    evaluations : int
        Model evaluations the AEG reported.
    aeg : str
        Description of the AEG.
    pairwise : PairwiseTestResult
    ci : CITestResult
    warnings : list of str
        Conditions under which the result must be read with care.
    g3 : G3ShiftTest or None
        The check of (G3) on the sample (:func:`fitaudit.overfit.g3.check_g3`)
        for AEGs that need it; None for the others, or when not asked.
    chance : ChanceCheck or None
        The model's accuracy on the sample beside chance agreement
        (:func:`fitaudit.models.labels.chance_check`, Cohen's kappa <= 0
        stops the verdict).
    moves : dict or None
        The translational AEG's set V (:meth:`~fitaudit.overfit.aeg.AdversarialExampleGenerator.moves`:
        ``eps``, ``stride``, ``mirror``), which the verdict's words name; None
        for other AEGs and results saved before it was kept.
    """

    risk_plain: float
    risk_adversarial: float
    n_success: int
    evaluations: int
    aeg: str
    pairwise: PairwiseTestResult
    ci: CITestResult
    warnings: list[str]
    g3: G3ShiftTest | None = None
    chance: ChanceCheck | None = None
    moves: dict[str, Any] | None = None

    def verdict(self, **context: Any) -> Verdict:
        """The test's decision (:func:`fitaudit.overfit.decision.overfit_verdict`; ``role`` in ``context``)."""
        return overfit_verdict(self, **context)

    def confidence_interval(self, confidence_level: float | None = None) -> ConfidenceInterval:
        """The pairwise test's interval T +- B(m, s2_T, 1 - confidence_level, U) for E[T_i].

        Werpachowski et al. (NeurIPS 2019), Sec. 3; 0 lies outside it exactly
        when the test rejects at level 1 - ``confidence_level`` (default: the
        stored level, 1 - :attr:`delta`). See
        :meth:`~fitaudit.overfit.independence.PairwiseTestResult.confidence_interval`.
        """
        return self.pairwise.confidence_interval(confidence_level)

    def contradiction(self) -> str | None:
        """Where a saved copy disagrees with its pairwise test (:func:`fitaudit.overfit.decision.overfit_contradiction`)."""
        return overfit_contradiction(self)


def resolve_aeg(aeg: AEGSpec, model: Any) -> AdversarialExampleGenerator:
    """The AEG for ``model``: ``aeg`` itself, or ``aeg(model)`` for a factory."""
    built = aeg if isinstance(aeg, AdversarialExampleGenerator) else None
    if built is None and callable(aeg):
        built = aeg(model)
    if not isinstance(built, AdversarialExampleGenerator):
        raise InputError(
            "`aeg` must be an AdversarialExampleGenerator or a function of the model returning "
            f"one; got {type(built if built is not None else aeg).__name__}."
        )
    return built


def check_examples(
    model: Any, x: Any, y: Any, aeg: AdversarialExampleGenerator
) -> tuple[np.ndarray, np.ndarray]:
    """Validate the sample: at least 2 finite examples, labels the model knows.

    ``x`` is the sample as the AEG takes it (for
    :class:`~fitaudit.overfit.translation.TranslationAEG`, canvases larger
    than the model's images); the number of classes is read from the model,
    or from one call of it on ``aeg.model_inputs`` of the first example when
    the adapter does not know it yet.
    """
    raw = as_array(x, "x")
    dtype = raw.dtype if np.issubdtype(raw.dtype, np.floating) else np.float32
    points = check_array(raw, "x", dtype=dtype, min_len=2)
    n_classes = check_int(
        model_n_classes(model, aeg.model_inputs(points[:1])), "model.n_classes", minimum=2
    )
    labels = check_labels(y, "y", n_classes=n_classes, length=len(points))
    return points, labels


def evaluate_with_aeg(
    model: Any, x: np.ndarray, y: np.ndarray, aeg: AdversarialExampleGenerator
) -> tuple[np.ndarray, AEGOutput, np.ndarray]:
    """L(f, X_i) on what the model scores (``aeg.model_inputs(x)``), the AEG's output and the predictions.

    The AEG's output is checked for (G2) by
    :meth:`~fitaudit.overfit.aeg.AdversarialExampleGenerator.generate`.
    """
    predictions = np.asarray(model.predict(aeg.model_inputs(x)))
    if predictions.shape != y.shape:
        raise InputError(
            f"the model's `predict` returned shape {predictions.shape}; expected {y.shape}."
        )
    loss = (predictions != y).astype(np.float64)
    return loss, aeg.generate(model, x, y, loss=loss), predictions.astype(np.int64)


def example_terms(
    model: Any,
    x: np.ndarray,
    y: np.ndarray,
    aeg: AdversarialExampleGenerator,
    *,
    checkpoint_dir: str | os.PathLike[str] | None = None,
) -> dict[str, np.ndarray]:
    """One AEG run: per-example L(f, X_i), L(f, g(X_i)) h_g(g(X_i)) and success, and the evaluations.

    With ``checkpoint_dir`` the arrays are a unit of a
    :class:`~fitaudit.checkpoint.CheckpointStore` keyed by the model (its
    weights or fitted state), the sample and the AEG's settings: read back
    when all of them are the same, computed and written atomically otherwise.

    Returns
    -------
    dict
        ``loss``, ``weighted_adv_loss``, ``success``, ``prediction`` (the
        model's classes on the sample; arrays of shape (m,)) and
        ``evaluations`` (a 0-d array).
    """
    model = as_classifier(model)
    store = CheckpointStore(checkpoint_dir) if checkpoint_dir is not None else None
    key = store.key(example_terms, model, x, y, aeg) if store is not None else ""
    if store is not None and store.has_arrays(key):
        return store.load_arrays(key)
    loss, out, predictions = evaluate_with_aeg(model, x, y, aeg)
    terms = {
        "loss": loss,
        "prediction": predictions,
        "weighted_adv_loss": np.asarray(out.weighted_adv_loss, dtype=np.float64),
        "success": np.asarray(out.success, dtype=bool),
        "evaluations": np.array(int(out.evaluations)),
    }
    if store is not None:
        store.save_arrays(key, terms)
    return terms


def density_check(aeg: AdversarialExampleGenerator, x: np.ndarray) -> G3ShiftTest | None:
    """The (G3) check of a translational AEG's sample (canvases), None for AEGs that need no (G3) check.

    The check (:func:`fitaudit.overfit.g3.check_g3`) is seeded with 0: the
    same sample and AEG always give the same answer.
    """
    margin, eps = getattr(aeg, "margin", None), getattr(aeg, "eps", None)
    if not aeg.requires_density_preservation or not isinstance(margin, int) or not isinstance(eps, int):
        return None
    if len(x) < MIN_IMAGES:
        return None
    return check_g3(x, margin=margin, eps=eps, random_state=0, stride=int(getattr(aeg, "stride", 1)),
                    mirror=bool(getattr(aeg, "mirror", False)))


def aeg_warnings(aeg: AdversarialExampleGenerator, n_success: int) -> list[str]:
    """Conditions under which the test result must be read with care."""
    notes = []
    if aeg.requires_density_preservation:
        notes.append(
            f"{type(aeg).__name__} assumes (G3), that it preserves the data density: the test is "
            "only valid when the data distribution is invariant under the AEG's moves (e.g. "
            "translations of objects placed uniformly, lossless crops of larger images); it is "
            "not valid for centred datasets such as MNIST or CIFAR-10."
        )
    if n_success == 0:
        notes.append(
            "the AEG found no successful adversarial example, so R_g = R_S up to the weights "
            "and the test has little power; try a larger perturbation."
        )
    return notes


def overfit_test(
    model: Any,
    x: Any,
    y: Any,
    aeg: AEGSpec,
    *,
    delta: float = 0.05,
    U: float | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    check_density: bool = True,
) -> OverfitTestResult:
    """Test whether ``model`` is independent of the sample (x, y) it is scored on.

    Werpachowski, Gyorgy, Szepesvari, "Detecting overfitting via adversarial
    examples" (NeurIPS 2019): the pairwise test (Test B) on
    T_i = L(f, g(X_i)) h_g(g(X_i)) - L(f, X_i), with the confidence-interval
    test (Test A) alongside. A small p-value says the model is not
    independent of the sample (for example it was trained or tuned on it), so
    its error rate on the sample is not a trustworthy risk estimate.

    Parameters
    ----------
    model : classifier
        A classifier (:class:`~fitaudit.models.ClassifierProtocol`) or any
        model :func:`fitaudit.models.as_classifier` wraps (torch, ONNX,
        scikit-learn, a callable returning scores).
    x : array of shape (m, ...)
        The sample the model is scored on (m >= 2), as the AEG takes it: the
        model scores ``aeg.model_inputs(x)`` (for
        :class:`~fitaudit.overfit.translation.TranslationAEG`, ``x`` holds
        canvases ``(m, C, H + 2P, W + 2P)`` and the model their centre crops).
    y : array of int, shape (m,)
        Its labels, in [0, model.n_classes).
    aeg : AdversarialExampleGenerator or callable
        The AEG g for this model, or a function ``aeg(model)`` returning it.
    delta : float
        Level of the tests.
    U : float, optional
        Range of the T_i; default ``aeg.pairwise_range`` (3/2 for a
        deterministic density-preserving AEG, else 2).
    checkpoint_dir : path, optional
        Keep the AEG run (the costly part) there, keyed by the model, the
        sample and the AEG (:func:`example_terms`): a rerun with the same
        inputs reads it back instead of running the AEG again.
    check_density : bool
        With an AEG that assumes (G3) (the translational AEG), check it on
        the sample first (:func:`fitaudit.overfit.g3.check_g3`: can a
        classifier tell the AEG's shifted crops from the centre crops?); the
        result's ``g3``. Where (G3) fails the verdict is inconclusive
        (:meth:`OverfitTestResult.verdict`).

    Returns
    -------
    OverfitTestResult
    """
    model = as_classifier(model)
    delta = check_delta(delta, high=0.5)
    generator = resolve_aeg(aeg, model)
    points, labels = check_examples(model, x, y, generator)
    terms = example_terms(model, points, labels, generator, checkpoint_dir=checkpoint_dir)
    result = result_from_terms(terms, generator, delta=delta, U=U)
    result.g3 = density_check(generator, points) if check_density else None
    prediction = terms.get("prediction")  # absent from vectors checkpointed before it was kept
    result.chance = None if prediction is None else chance_check(labels, prediction)
    return result


def result_from_terms(
    terms: dict[str, np.ndarray], generator: AdversarialExampleGenerator, *, delta: float, U: float | None = None
) -> OverfitTestResult:
    """Both tests on the per-example vectors of one AEG run (:func:`example_terms`' dict).

    Also used where the vectors were accumulated batch by batch
    (:mod:`fitaudit.overfit.images`): the result depends on the vectors only.
    """
    loss, weighted = terms["loss"], terms["weighted_adv_loss"]
    U = generator.pairwise_range if U is None else U
    pairwise = pairwise_test(loss, weighted, U=U, delta=delta)
    n_success = int(np.sum(terms["success"]))
    return OverfitTestResult(
        statistic=pairwise.statistic,
        pvalue=pairwise.pvalue,
        reject=pairwise.reject,
        delta=delta,
        U=pairwise.U,
        m=pairwise.m,
        risk_plain=pairwise.risk_plain,
        risk_adversarial=pairwise.risk_adversarial,
        n_success=n_success,
        evaluations=int(terms["evaluations"]),
        aeg=repr(generator),
        pairwise=pairwise,
        ci=ci_test(loss, weighted, delta=delta),
        warnings=aeg_warnings(generator, n_success),
        moves=generator.moves(),
    )
