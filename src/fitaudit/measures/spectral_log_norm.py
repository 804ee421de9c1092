"""Mean log10 squared spectral norm, log10 lambda_max, of the layers (Martin & Mahoney)."""

from __future__ import annotations

from typing import ClassVar

from fitaudit.measures._spectrum import LayerSpectrum, SpectrumMeasure


class SpectralLogNorm(SpectrumMeasure):
    """Mean log10 squared spectral norm, log10 lambda_max, of the layers (Martin & Mahoney).

    (1/L) sum_l log10 lambda_max,l with lambda_max,l = ||W_l||_2^2 (a
    convolution's slices scaled by sqrt(1/2) first, as weightwatcher does);
    weightwatcher's ``log_spectral_norm``. Larger: a larger norm-based
    capacity. Used as it is: larger predicts a larger gap.
    """

    name: ClassVar[str] = "spectral_log_norm"

    def layer_value(self, spectrum: LayerSpectrum) -> float:
        return spectrum.log_spectral_norm
