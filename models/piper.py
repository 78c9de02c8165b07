"""Piper voices: one clause in, 16 kHz int16 audio chunks out (pipeline/answer/tts.py's
`Synthesizer`).

Piper speaks at its voice's rate (22.05 kHz for the default voice); audio is resampled to
the pipeline's 16 kHz here, at the edge, with soxr. Where the voice can be split at its
decoder (models/piper_stream.py) a clause's audio comes out window by window as it is
decoded; otherwise one chunk per sentence, as Piper makes it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from models.piper_stream import feeds
from pipeline.answer.tts import LEAD_KEPT, TtsOptions, first_sound
from pipeline.audio import StreamResampler, to_int16
from pipeline.events import SAMPLE_RATE, Pcm

if TYPE_CHECKING:
    from piper import PiperVoice

    from models.piper_stream import StreamingVoice


class PiperSynthesizer:
    def __init__(self, voice: PiperVoice, voice_id: str, options: TtsOptions | None = None,
                 stream: StreamingVoice | None = None) -> None:
        from piper import SynthesisConfig

        self.voice = voice
        self.voice_id = voice_id
        self.options = options or TtsOptions()
        noise = None if self.options.variation else 0.0  # None: the voice's own
        self._config = SynthesisConfig(
            length_scale=self.options.length_scale, volume=self.options.volume,
            noise_scale=noise, noise_w_scale=noise,
        )
        self.stream = stream
        """The voice split at its decoder (audio as it is decoded), or None."""
        self._gain = self.options.volume / stream.typical_peak if stream is not None else 1.0

    @property
    def native_rate(self) -> int:
        return int(self.voice.config.sample_rate)

    def synthesize(self, text: str) -> Iterator[Pcm]:
        lead = self.options.trim_lead
        for pcm in self._chunks(text):
            if lead:
                start = first_sound(pcm)
                if start is None:
                    continue
                pcm, lead = pcm[max(0, start - LEAD_KEPT) :], False
            yield pcm

    def _chunks(self, text: str) -> Iterator[Pcm]:
        resampler = StreamResampler(self.native_rate, SAMPLE_RATE)
        for audio in self._audio(text):
            out = resampler.push(audio)
            if out.size:
                yield to_int16(out)
        tail = resampler.push(_EMPTY, last=True)
        if tail.size:
            yield to_int16(tail)

    def _audio(self, text: str) -> Iterator[np.ndarray]:
        """Float audio at the voice's rate: by decoder windows, or by sentences."""
        if self.stream is None:
            for chunk in self.voice.synthesize(text, syn_config=self._config):
                yield chunk.audio_float_array
            return
        for phonemes in self.voice.phonemize(text):
            if phonemes:
                ids = self.voice.phonemes_to_ids(phonemes)
                z = self.stream.frames(feeds(self.voice, ids, self._config))
                yield from self.stream.decode(z, self._gain)


_EMPTY = np.zeros(0, np.float32)
