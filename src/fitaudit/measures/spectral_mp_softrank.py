"""Mean Marchenko-Pastur soft rank lambda_+ / lambda_max of the layers (Martin & Mahoney)."""

from __future__ import annotations

from typing import ClassVar

from fitaudit.measures._spectrum import LayerSpectrum, SpectrumMeasure, mp_softrank


class SpectralMpSoftrank(SpectrumMeasure):
    """Mean Marchenko-Pastur soft rank lambda_+ / lambda_max of the layers (Martin & Mahoney).

    (1/L) sum_l lambda_+,l / lambda_max,l, lambda_+ the bulk edge of the MP law fitted to the rescaled ESD (JMLR 2021, sec. 4; weightwatcher's ``mp_softrank`` with ``mp_fit=True``).
    Larger: the largest eigenvalue is closer to the random bulk, less learnt correlation. Used as it is: larger predicts a larger gap.
    """

    name: ClassVar[str] = "spectral_mp_softrank"

    def layer_value(self, spectrum: LayerSpectrum) -> float:
        return mp_softrank(spectrum)
