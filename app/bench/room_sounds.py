"""The sounds of a room for `apace bench --room`: background talk, noise, our own echo.

Background talk ("babble") is four voices reading ordinary sentences at once: the embedded
Piper voice at two other speeds and pitches, and two espeak-ng voices (installed with the
system packages). It never says any question of the bench. Noise is pink or white.
Levels are set against the user's *active* speech level (the RMS of the frames within
30 dB of the loudest), the way a speech-to-noise ratio is usually stated.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

import av
import numpy as np
import numpy.typing as npt

from models.piper import PiperSynthesizer
from models.wav_files import read_wav
from pipeline.answer.tts import TtsOptions
from pipeline.audio import frames, resample
from pipeline.events import FRAME_SAMPLES, SAMPLE_RATE, Pcm

Float = npt.NDArray[np.float32]

BABBLE_LINES = (
    "The train was late again this morning so I walked the last part of the way.",
    "She painted the fence green and then decided she liked the old colour better.",
    "We found a little bakery near the river that sells bread until midnight.",
    "My brother keeps three chickens and a very loud goose in his back garden.",
    "The meeting ran over by an hour because nobody could agree on the budget.",
    "They moved the piano up four flights of stairs without scratching the wall.",
    "It rained all weekend, so we stayed in and finished the big jigsaw puzzle.",
    "The new library has a reading room with windows that look over the park.",
    "He forgot his umbrella on the bus and got soaked on the way to work.",
    "Our neighbours are building a shed and the hammering starts at seven sharp.",
)
"""What the background people say: statements, none of them a bench question."""

ESPEAK_VOICES = ("en-us+m3", "en-gb+f2")


@dataclass(frozen=True)
class Talker:
    """One background voice: the Piper voice at `length_scale` with its pitch moved by
    `pitch` (resampled: 1.1 is a tenth higher and faster), or an espeak-ng voice."""

    length_scale: float = 1.0
    pitch: float = 1.0
    espeak: str | None = None


BABBLE_TALKERS = (Talker(length_scale=0.85, pitch=1.12), Talker(length_scale=1.2, pitch=0.88),
                  *(Talker(espeak=v) for v in ESPEAK_VOICES))


def active_rms(pcm: Pcm | Float) -> float:
    """RMS over the frames within 30 dB of the loudest frame (full scale = 1)."""
    x = pcm.astype(np.float64) / (32768.0 if pcm.dtype == np.int16 else 1.0)
    whole = list(frames(x, last="drop"))
    if not whole:
        return 0.0
    power = (np.stack(whole) ** 2).mean(axis=1)
    active = power[power >= power.max() * 1e-3]
    return float(np.sqrt(active.mean())) if active.size else 0.0


def pink_noise(samples: int, rng: np.random.Generator) -> Float:
    """Pink (1/f power) noise with unit RMS, shaped in the frequency domain."""
    spectrum = np.fft.rfft(rng.standard_normal(samples))
    freqs = np.fft.rfftfreq(samples, 1 / SAMPLE_RATE)
    spectrum[1:] /= np.sqrt(freqs[1:] / freqs[1])
    spectrum[0] = 0
    noise = np.fft.irfft(spectrum, samples)
    return np.asarray(noise / np.sqrt(np.mean(noise**2)), dtype=np.float32)


def white_noise(samples: int, rng: np.random.Generator) -> Float:
    return rng.standard_normal(samples).astype(np.float32)


def babble(voice: PiperSynthesizer, seconds: float, rng: np.random.Generator,
           talkers: Sequence[Talker] = BABBLE_TALKERS) -> Float:
    """`talkers` reading BABBLE_LINES in different orders, summed at equal active levels,
    unit RMS; `seconds` long (the lines loop)."""
    samples = int(seconds * SAMPLE_RATE)
    total = np.zeros(samples, np.float32)
    for talker in talkers:
        lines = list(BABBLE_LINES)
        rng.shuffle(lines)
        speech = _speak(voice, talker, lines)
        speech = speech / max(active_rms(speech), 1e-6)
        start = int(rng.integers(0, len(speech)))
        total += np.resize(np.roll(speech, -start), samples)
    return np.asarray(total / np.sqrt(np.mean(total**2)), dtype=np.float32)


def _speak(voice: PiperSynthesizer, talker: Talker, lines: Sequence[str]) -> Float:
    gap = np.zeros(int(0.25 * SAMPLE_RATE), np.float32)
    parts: list[Float] = []
    for line in lines:
        if talker.espeak is not None:
            audio = _espeak(talker.espeak, line)
        else:
            options = TtsOptions(length_scale=talker.length_scale, stream=False,
                                 variation=voice.options.variation)
            other = PiperSynthesizer(voice.voice, voice.voice_id, options)
            audio = np.concatenate(list(other.synthesize(line))).astype(np.float32) / 32768.0
        if talker.pitch != 1.0:  # play it back faster or slower: pitch and pace move
            audio = resample(audio, int(SAMPLE_RATE * talker.pitch), SAMPLE_RATE)
        parts += [audio.astype(np.float32), gap]
    return np.concatenate(parts)


def _espeak(voice: str, text: str) -> Float:
    if shutil.which("espeak-ng") is None:
        raise RuntimeError("background talk needs espeak-ng (apt-get install espeak-ng)")
    wav = subprocess.run(["espeak-ng", "-v", voice, "-s", "165", "--stdout", text],
                         capture_output=True, check=True, timeout=30).stdout
    return read_wav(wav).astype(np.float32) / 32768.0


def scaled(noise: Float, speech_rms: float, snr_db: float) -> Float:
    """`noise` (unit RMS) set `snr_db` below a talker whose active RMS is `speech_rms`."""
    return (noise * speech_rms * 10 ** (-snr_db / 20)).astype(np.float32)


def impulse_response(rt60_s: float, rng: np.random.Generator) -> Float:
    """A room's way from loudspeaker to microphone: the direct sound, then reflections as
    noise decaying 60 dB in `rt60_s` (a living room: 0.3-0.5 s); unit energy, so the echo
    stays `echo_db` down as a whole."""
    t = np.arange(int(rt60_s * SAMPLE_RATE)) / SAMPLE_RATE
    h = rng.standard_normal(len(t)) * np.exp(-6.9 * t / rt60_s) * 0.5
    h[0] = 1.0
    response: Float = (h / np.sqrt(np.sum(h**2))).astype(np.float32)
    return response


class RoomMix:
    """What a microphone in the room hears: the user's audio, the room's sound (looped),
    and — if `echo_db` is set — what the loudspeaker plays, `echo_delay_s` later and
    `echo_db` down, through the room's reverberation if `echo_rt60_s` is set; the user's
    audio `voice_db` from its level. The bench client calls `heard` with each frame it
    receives and `mix` with each frame it sends (both 16 kHz mono). Not `always`: the
    room's sound plays only when told to (`talk`)."""

    def __init__(self, room: Float | None, *, echo_db: float | None = None,
                 echo_delay_s: float = 0.1, voice_db: float = 0.0,
                 echo_rt60_s: float = 0.0, always: bool = True) -> None:
        self.room = room
        self.always = always
        self._wait = self._left = 0
        """Samples sent before the room's sound starts, then samples it plays for."""
        self._response = (impulse_response(echo_rt60_s, np.random.default_rng(11))
                          if echo_rt60_s else None)
        self._tail = np.zeros(0, np.float32)
        self.voice_gain = 10 ** (voice_db / 20)
        self._at = 0
        self.echo_gain = 10 ** (echo_db / 20) if echo_db is not None else 0.0
        self._delay = int(echo_delay_s * SAMPLE_RATE)
        self._line = np.zeros(self._delay, np.float32)
        self._resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)

    def talk(self, *, after_s: float, for_s: float) -> None:
        """The room's sound plays from `after_s` (of what is sent from now) for `for_s`."""
        self._wait, self._left = int(after_s * SAMPLE_RATE), int(for_s * SAMPLE_RATE)

    def hear(self, frame: av.AudioFrame) -> None:
        """A frame the client received (any rate and layout): its loudspeaker plays it."""
        if self.echo_gain:
            for out in self._resampler.resample(frame):
                self.heard(out.to_ndarray().reshape(-1).astype(np.int16))

    def heard(self, pcm: Pcm) -> None:
        """Audio that reached the loudspeaker (16 kHz mono int16)."""
        if self.echo_gain:
            played = pcm.astype(np.float32) / 32768.0
            if self._response is not None:
                played = self._reverberate(played)
            self._line = np.concatenate([self._line, played])
            excess = len(self._line) - self._delay - 3 * FRAME_SAMPLES
            if excess > 0:  # the sender fell behind: keep the delay, drop the oldest
                self._line = self._line[excess:]

    def _playing(self, samples: int) -> bool:
        """Whether the room sounds in the next `samples` (counted off what is sent)."""
        if self.always:
            return True
        if self._wait > 0:
            self._wait -= samples
            return False
        self._left -= samples
        return self._left + samples > 0

    def _reverberate(self, played: Float) -> Float:
        """`played` through the room (overlap-add: reflections ring into later frames)."""
        assert self._response is not None
        out = np.convolve(played, self._response).astype(np.float32)
        out[: len(self._tail)] += self._tail
        self._tail = out[len(played) :]
        return out[: len(played)]

    def mix(self, pcm: Pcm) -> Pcm:
        """One outgoing frame with the room and the echo added."""
        out = pcm.astype(np.float32) / 32768.0 * self.voice_gain
        if self.room is not None and self._playing(len(out)):
            index = (self._at + np.arange(len(out))) % len(self.room)
            out = out + self.room[index]
            self._at = int(index[-1]) + 1
        if self.echo_gain and len(self._line) >= self._delay + len(out):
            # The line always holds `echo_delay_s` of audio: what leaves it is that old.
            out += self._line[: len(out)] * self.echo_gain
            self._line = self._line[len(out) :]
        return np.asarray(np.clip(out, -1, 1) * 32767, dtype=np.int16)
