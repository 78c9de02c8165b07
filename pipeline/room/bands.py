"""Energy per frequency band of one 20 ms frame: what the echo guard (pipeline.room.echo)
compares, band by band, between what was played and what the microphone heard."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pipeline.events import FRAME_SAMPLES, SAMPLE_RATE, Pcm

Bands = npt.NDArray[np.float64]
"""Energy per band of one 20 ms frame (mean square, full scale = 1)."""

BAND_EDGES_HZ = (100, 300, 600, 1000, 1500, 2200, 3200, 4800, 8001)
_BINS = np.fft.rfftfreq(FRAME_SAMPLES, 1 / SAMPLE_RATE)
_BAND_OF_BIN = np.digitize(_BINS, BAND_EDGES_HZ) - 1  # -1 below 100 Hz: dropped
_WEIGHT = np.where((_BINS == 0) | (_BINS == SAMPLE_RATE / 2), 1.0, 2.0) / FRAME_SAMPLES**2


def band_energies(pcm: Pcm) -> Bands:
    """Energy of `pcm` (one 20 ms frame, int16) in each band of BAND_EDGES_HZ; their sum is
    the frame's mean square above 100 Hz (rumble below it is never speech)."""
    spectrum = np.fft.rfft(pcm.astype(np.float64) / 32768.0)
    power = (spectrum.real**2 + spectrum.imag**2) * _WEIGHT
    keep = _BAND_OF_BIN >= 0
    bands = np.bincount(_BAND_OF_BIN[keep], power[keep], minlength=len(BAND_EDGES_HZ) - 1)
    return np.asarray(bands, dtype=np.float64)


TINY = 1e-12
AUDIBLE = 1e-7
"""A played frame quieter than this (-70 dBFS) is silence: nothing of it can come back."""


def echo_ratio(near: Bands, far: Bands, far_peak: Bands) -> Bands | None:
    """Heard / played energy per band, in the bands played within 20 dB of the reply's
    loudest (`far_peak`), NaN in the others; None if nothing audible was played."""
    loud = far >= far_peak * 0.01
    if far.sum() < AUDIBLE or not loud.any():
        return None
    return np.asarray(np.where(loud, near / np.maximum(far, TINY), np.nan))
