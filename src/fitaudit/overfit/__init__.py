"""Overfitting test via adversarial examples.

Werpachowski, Gyorgy, Szepesvari, "Detecting overfitting via adversarial
examples", NeurIPS 2019. Is a model statistically independent of the sample
it is scored on? Only that sample is needed, no fresh data.

* :func:`overfit_test`: the test on one model (pairwise test + CI test);
* :func:`pairwise_test`, :func:`ci_test`: the tests on per-example loss vectors;
* :func:`n_model_test`, :func:`n_model_test_retrain`: the N-model test;
* :func:`plain_risk`, :func:`adversarial_risk`: the estimators;
* :class:`AdversarialExampleGenerator`, :class:`AEGOutput`: the AEG protocol;
  :class:`LinearGradientAEG` for linear models on
  :class:`~fitaudit.data.GaussianMargin` data, :class:`TranslationAEG` for
  image classifiers on canvases with a spare margin (:func:`centre_crop`
  gives the images the model scores; ``stride`` for shifts beyond a
  model's augmentation), :class:`MirrorTranslationAEG` with the mirror
  images of the shifts as well;
* :func:`overfit_test_images`: the test (or the N-model test) on an image
  folder through the evaluation pipeline, streamed batch by batch;
  :class:`OverfitCommandResult` is what ``fitaudit overfit`` reports.

The translational AEG needs torch only through the model it is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fitaudit._lazy import lazy_exports

if TYPE_CHECKING:
    from fitaudit.overfit.aeg import AdversarialExampleGenerator, AEGOutput
    from fitaudit.overfit.estimators import adversarial_risk, plain_risk
    from fitaudit.overfit.images import ImageOverfitResult, overfit_test_images
    from fitaudit.overfit.independence import (
        CITestResult,
        IndependenceTestResult,
        PairwiseTestResult,
        ci_test,
        pairwise_test,
    )
    from fitaudit.overfit.linear_gradient import LinearGradientAEG
    from fitaudit.overfit.logistic import LinearModel, train_logistic_models
    from fitaudit.overfit.mirror import MirrorTranslationAEG
    from fitaudit.overfit.nmodel import NModelTestResult, n_model_test, n_model_test_retrain
    from fitaudit.overfit.one_model import OverfitTestResult, overfit_test
    from fitaudit.overfit.runs import ModelRun, OverfitCommandResult
    from fitaudit.overfit.translation import TranslationAEG, TranslationAEGOutput, centre_crop

__all__ = [
    "AEGOutput",
    "AdversarialExampleGenerator",
    "CITestResult",
    "ImageOverfitResult",
    "IndependenceTestResult",
    "LinearGradientAEG",
    "LinearModel",
    "MirrorTranslationAEG",
    "ModelRun",
    "NModelTestResult",
    "OverfitCommandResult",
    "OverfitTestResult",
    "PairwiseTestResult",
    "TranslationAEG",
    "TranslationAEGOutput",
    "adversarial_risk",
    "centre_crop",
    "ci_test",
    "n_model_test",
    "n_model_test_retrain",
    "overfit_test",
    "overfit_test_images",
    "pairwise_test",
    "plain_risk",
    "train_logistic_models",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "AdversarialExampleGenerator": "aeg",
        "AEGOutput": "aeg",
        "OverfitTestResult": "one_model",
        "overfit_test": "one_model",
        "adversarial_risk": "estimators",
        "plain_risk": "estimators",
        "CITestResult": "independence",
        "IndependenceTestResult": "independence",
        "PairwiseTestResult": "independence",
        "ci_test": "independence",
        "pairwise_test": "independence",
        "LinearGradientAEG": "linear_gradient",
        "LinearModel": "logistic",
        "train_logistic_models": "logistic",
        "NModelTestResult": "nmodel",
        "n_model_test": "nmodel",
        "n_model_test_retrain": "nmodel",
        "TranslationAEG": "translation",
        "MirrorTranslationAEG": "mirror",
        "TranslationAEGOutput": "translation",
        "overfit_test_images": "images",
        "ImageOverfitResult": "images",
        "ModelRun": "runs",
        "OverfitCommandResult": "runs",
        "centre_crop": "translation",
    },
)
