"""Mean power-law exponent alpha of the layers' eigenvalue densities (Martin & Mahoney)."""

from __future__ import annotations

from typing import ClassVar

from fitaudit.measures._spectrum import LayerSpectrum, SpectrumMeasure


class SpectralAlpha(SpectrumMeasure):
    """Mean power-law exponent alpha of the layers' eigenvalue densities (Martin & Mahoney).

    (1/L) sum_l alpha_l, alpha_l the exponent of p(lambda) ~ lambda^-alpha on the tail lambda >= lambda_min (JMLR 2021, sec. 5; weightwatcher's ``alpha``).
    Larger alpha: a less heavy-tailed spectrum, less implicit self-regularisation. Used as it is: larger predicts a larger gap.
    """

    name: ClassVar[str] = "spectral_alpha"

    def layer_value(self, spectrum: LayerSpectrum) -> float:
        return spectrum.alpha
