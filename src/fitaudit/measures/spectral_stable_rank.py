"""Mean stable rank ||W||_F^2 / ||W||_2^2 of the layers (Martin & Mahoney)."""

from __future__ import annotations

from typing import ClassVar

from fitaudit.measures._spectrum import LayerSpectrum, SpectrumMeasure


class SpectralStableRank(SpectrumMeasure):
    """Mean stable rank ||W||_F^2 / ||W||_2^2 of the layers (Martin & Mahoney).

    (1/L) sum_l (sum lambda) / lambda_max over the layer's pooled
    eigenvalues; weightwatcher's ``stable_rank``. Larger: weight spread over
    more directions, less low-rank structure learnt. Used as it is: larger
    predicts a larger gap.
    """

    name: ClassVar[str] = "spectral_stable_rank"

    def layer_value(self, spectrum: LayerSpectrum) -> float:
        return spectrum.stable_rank
