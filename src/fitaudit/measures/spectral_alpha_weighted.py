"""Mean alpha-weighted log spectral norm, alpha_l log10 lambda_max,l (Martin & Mahoney)."""

from __future__ import annotations

from typing import ClassVar

from fitaudit.measures._spectrum import LayerSpectrum, SpectrumMeasure


class SpectralAlphaWeighted(SpectrumMeasure):
    """Mean alpha-weighted log spectral norm, alpha_l log10 lambda_max,l (Martin & Mahoney).

    (1/L) sum_l alpha_l log10 lambda_max,l (Nature Communications 2021, eq. 5, as a mean; weightwatcher's ``alpha_weighted``).
    Larger: a worse model in the paper's comparisons of pretrained models. Used as it is: larger predicts a larger gap.
    """

    name: ClassVar[str] = "spectral_alpha_weighted"

    def layer_value(self, spectrum: LayerSpectrum) -> float:
        return spectrum.alpha_weighted
