"""The built-in measures, by name: explicit imports into a plain dict.

One module per measure (:mod:`fitaudit.measures`); adding one is a module
with its :class:`~fitaudit.measures.base.Measure` subclass and a line here.
The measure modules import torch only when a measure runs, so importing
this catalogue is cheap.
"""

from __future__ import annotations

from fitaudit.measures.adversarial_gap import AdversarialGap
from fitaudit.measures.augmentation_margin import AugmentationMargin
from fitaudit.measures.augmentation_robustness import AugmentationRobustness
from fitaudit.measures.base import Measure
from fitaudit.measures.dbi_mixup import DBIMixup
from fitaudit.measures.dist_fro import DistFro
from fitaudit.measures.dist_spec import DistSpec
from fitaudit.measures.distance_from_init import DistanceFromInit
from fitaudit.measures.examiner_worst_case import ExaminerWorstCase
from fitaudit.measures.fro_over_spec import FroOverSpec
from fitaudit.measures.inverse_margin import InverseMargin
from fitaudit.measures.jacobian_norm import JacobianNorm
from fitaudit.measures.knn_label_variation import KNNLabelVariation
from fitaudit.measures.log_fro_product import LogFroProduct
from fitaudit.measures.log_fro_product_over_margin import LogFroProductOverMargin
from fitaudit.measures.log_fro_sum import LogFroSum
from fitaudit.measures.log_fro_sum_over_margin import LogFroSumOverMargin
from fitaudit.measures.log_spec_init_main import LogSpecInitMain
from fitaudit.measures.log_spec_orig_main import LogSpecOrigMain
from fitaudit.measures.log_spec_product import LogSpecProduct
from fitaudit.measures.log_spec_product_over_margin import LogSpecProductOverMargin
from fitaudit.measures.log_spec_sum import LogSpecSum
from fitaudit.measures.log_spec_sum_over_margin import LogSpecSumOverMargin
from fitaudit.measures.mixup_margin import MixupMargin
from fitaudit.measures.noisy_gap import NoisyGap
from fitaudit.measures.pacbayes_flatness import PacBayesFlatness
from fitaudit.measures.pacbayes_init import PacBayesInit
from fitaudit.measures.pacbayes_mag_flatness import PacBayesMagFlatness
from fitaudit.measures.pacbayes_mag_init import PacBayesMagInit
from fitaudit.measures.pacbayes_mag_orig import PacBayesMagOrig
from fitaudit.measures.pacbayes_orig import PacBayesOrig
from fitaudit.measures.param_norm import ParamNorm
from fitaudit.measures.parameter_count import ParameterCount
from fitaudit.measures.path_norm import PathNorm
from fitaudit.measures.path_norm_over_margin import PathNormOverMargin
from fitaudit.measures.pmv_slope import PMVSlope
from fitaudit.measures.sharpness import Sharpness
from fitaudit.measures.sharpness_flatness import SharpnessFlatness
from fitaudit.measures.sharpness_mag_flatness import SharpnessMagFlatness
from fitaudit.measures.spectral_alpha import SpectralAlpha
from fitaudit.measures.spectral_alpha_weighted import SpectralAlphaWeighted
from fitaudit.measures.spectral_log_norm import SpectralLogNorm
from fitaudit.measures.spectral_mp_softrank import SpectralMpSoftrank
from fitaudit.measures.spectral_stable_rank import SpectralStableRank
from fitaudit.measures.vc_dim import VCDimension
from fitaudit.measures.weight_norm import WeightNorm

#: every built-in measure class by its ``name``
BUILTIN_MEASURES: dict[str, type[Measure]] = {
    cls.name: cls
    for cls in (
        AdversarialGap,
        AugmentationMargin,
        AugmentationRobustness,
        DBIMixup,
        DistFro,
        DistSpec,
        DistanceFromInit,
        ExaminerWorstCase,
        FroOverSpec,
        InverseMargin,
        JacobianNorm,
        KNNLabelVariation,
        LogFroProduct,
        LogFroProductOverMargin,
        LogFroSum,
        LogFroSumOverMargin,
        LogSpecInitMain,
        LogSpecOrigMain,
        LogSpecProduct,
        LogSpecProductOverMargin,
        LogSpecSum,
        LogSpecSumOverMargin,
        MixupMargin,
        NoisyGap,
        PacBayesFlatness,
        PacBayesInit,
        PacBayesMagFlatness,
        PacBayesMagInit,
        PacBayesMagOrig,
        PacBayesOrig,
        ParamNorm,
        ParameterCount,
        PathNorm,
        PathNormOverMargin,
        PMVSlope,
        Sharpness,
        SharpnessFlatness,
        SharpnessMagFlatness,
        SpectralAlpha,
        SpectralAlphaWeighted,
        SpectralLogNorm,
        SpectralMpSoftrank,
        SpectralStableRank,
        VCDimension,
        WeightNorm,
    )
}
