"""Who speaks `apace bench --quality`'s questions: the reply voice for the tuned set, others
for the sets no one tunes on.

The tuned conversations are spoken by the embedded Piper voice at its own pace, as they
always were, so their figures stay comparable from run to run. Held-out and blind turns
rotate, turn by turn, through espeak-ng voices (American, British, a woman's and a man's
variant, at espeak's own 175 words a minute and a little faster) and the Piper voice
faster and slower: a system fitted to its own voice's questions would do well on the
tuned set and no better than chance on these. The rotation starts at a point fixed by the
conversation's name, so a turn gets the same voice in every run, with or without `--only`.
Without espeak-ng those turns are spoken by Piper, and each says so in its `voice`.
"""

from __future__ import annotations

import shutil
import subprocess
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from app.bench.conversations import ConversationSpec
from app.bench.latency import Utterance
from models.wav_files import read_wav
from pipeline.answer.tts import Synthesizer
from pipeline.events import SAMPLE_RATE, Pcm

LEAD_S, TRAIL_S = 0.3, 0.5
"""Silence before and after each question, as `speak` pads the Piper voice's."""
_LOUD = 300
"""Louder than this (int16) is speech: where espeak-ng's own silence is trimmed."""
_EDGE_S = 0.01
"""Kept either side of espeak-ng's speech when its own silence is trimmed."""


@dataclass(frozen=True, kw_only=True)
class Voice:
    name: str
    espeak: str | None = None
    """An espeak-ng voice ("en-gb", "en+f3": a variant after the "+"); None: Piper."""
    rate_wpm: int = 175
    """espeak-ng's speaking rate (its default is 175 words a minute)."""
    length_scale: float | None = None
    """Piper's speaking rate: < 1 faster, > 1 slower (None: the voice's own)."""


PIPER = Voice(name="piper x1")
HELD_OUT_VOICES = (
    Voice(name="espeak en-us", espeak="en-us"),
    Voice(name="piper x0.85", length_scale=0.85),
    Voice(name="espeak en-gb", espeak="en-gb"),
    Voice(name="espeak en+f3", espeak="en+f3"),
    Voice(name="espeak en-us+m3 195wpm", espeak="en-us+m3", rate_wpm=195),
    Voice(name="piper x1.15", length_scale=1.15),
    Voice(name="espeak en-gb+f2 195wpm", espeak="en-gb+f2", rate_wpm=195),
)


def voice_for(conversation: ConversationSpec, index: int) -> Voice:
    """The voice that speaks turn `index` (0-based) of `conversation`: Piper for a tuned
    one; for a held-out one, the next voice of the rotation, from a start fixed by its name
    (crc32: the same in every run, unlike `hash`)."""
    if not conversation.held_out:
        return PIPER
    start = zlib.crc32(conversation.name.encode())
    return HELD_OUT_VOICES[(start + index) % len(HELD_OUT_VOICES)]


def utterance_key(say: str, voice: Voice) -> str:
    """Where a spoken question is kept: its words alone in the tuned voice (as before
    voices rotated), else the voice's name with them."""
    return say if voice == PIPER else f"[{voice.name}] {say}"


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def espeak_speech(text: str, voice: Voice) -> Pcm:
    """`text` spoken by espeak-ng (a 22.05 kHz WAV on stdout), resampled by soxr to 16 kHz
    mono int16, its own silence trimmed and `LEAD_S`/`TRAIL_S` put around it instead."""
    if voice.espeak is None:
        raise ValueError(f"{voice.name} is not an espeak-ng voice")
    wav = subprocess.run(["espeak-ng", "-v", voice.espeak, "-s", str(voice.rate_wpm),
                          "--stdout", text], capture_output=True, check=True, timeout=30).stdout
    pcm = read_wav(wav)
    loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > _LOUD)
    edge = int(_EDGE_S * SAMPLE_RATE)
    if loud.size:
        pcm = pcm[max(0, int(loud[0]) - edge): int(loud[-1]) + 1 + edge]
    return np.concatenate([_silence(LEAD_S), pcm, _silence(TRAIL_S)])


def _silence(seconds: float) -> Pcm:
    return np.zeros(int(seconds * SAMPLE_RATE), np.int16)


def _piper(voice: Voice) -> Synthesizer:
    from models.load import load_synthesizer
    from models.locate import locate
    from pipeline.answer.tts import TtsOptions

    return load_synthesizer(locate("tts").path, TtsOptions(length_scale=voice.length_scale))


def make_utterances(conversations: Sequence[ConversationSpec], *,
                    piper: Callable[[Voice], Synthesizer] = _piper,
                    espeak: bool | None = None) -> dict[str, Utterance]:
    """Every question spoken once in its turn's voice (keyed by `utterance_key`), before
    any server starts, so the synthesis shares no CPU with a measured turn. `espeak`:
    whether espeak-ng may be used (None: where installed)."""
    from app.bench.utterances import speak

    planned = {utterance_key(t.say, v): (t.say, v, c.held_out)
               for c in conversations for i, t in enumerate(c.turns) for v in [voice_for(c, i)]}
    espeak = espeak_available() if espeak is None else espeak
    if not espeak and (missing := sum(v.espeak is not None for _, v, _ in planned.values())):
        print(f"bench --quality: espeak-ng is not installed: {missing} held-out questions are "
              f"spoken by {PIPER.name} instead (apt-get install espeak-ng)", flush=True)
    synthesizers: dict[float | None, Synthesizer] = {}
    out: dict[str, Utterance] = {}
    for key, (say, voice, held_out) in planned.items():
        if voice.espeak is not None and espeak:
            out[key] = Utterance(say, espeak_speech(say, voice), held_out=held_out,
                                 voice=voice.name)
            continue
        speaker = PIPER if voice.espeak is not None else voice
        if speaker.length_scale not in synthesizers:
            synthesizers[speaker.length_scale] = piper(speaker)
        spoke = speaker.name if speaker == voice \
            else f"{PIPER.name} (instead of {voice.name}: espeak-ng not installed)"
        out[key] = Utterance(say, speak(synthesizers[speaker.length_scale], say, lead_s=LEAD_S,
                                        trail_s=TRAIL_S), held_out=held_out, voice=spoke)
    return out
