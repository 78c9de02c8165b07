"""Piper through the pipeline's synthesizer: 16 kHz audio that starts with the voice."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from models.load import load_synthesizer
from models.locate import locate
from models.piper import PiperSynthesizer
from pipeline.answer.tts import LEAD_KEPT, TtsOptions, first_sound

pytestmark = pytest.mark.integration

CLAUSES = ["The capital of France is Paris.", "Hello there!", "Mount Everest is the tallest."]


def _audio(voice: PiperSynthesizer, text: str) -> np.ndarray:
    return np.concatenate(list(voice.synthesize(text)))


@pytest.mark.parametrize("text", CLAUSES)
def test_a_clause_starts_with_sound_not_pipers_lead_in(voice: PiperSynthesizer, text: str) -> None:
    untrimmed = PiperSynthesizer(voice.voice, voice.voice_id,
                                 dataclasses.replace(voice.options, trim_lead=False))
    raw, trimmed = _audio(untrimmed, text), _audio(voice, text)
    lead_in = first_sound(raw)
    assert lead_in is not None and lead_in > 2 * LEAD_KEPT  # Piper's own lead-in (30-65 ms)
    assert first_sound(trimmed) == LEAD_KEPT  # 5 ms kept before the first sound
    # Piper samples its durations, so two renderings differ a little; nothing but the
    # lead-in may go.
    assert abs((len(raw) - lead_in) - (len(trimmed) - LEAD_KEPT)) < 0.15 * len(raw)


def test_the_embedded_voice_streams_what_piper_would_say_whole(voice: PiperSynthesizer) -> None:
    from piper import SynthesisConfig

    from models.piper_stream import FIRST_FRAMES, StreamingVoice, feeds

    stream = voice.stream
    assert isinstance(stream, StreamingVoice)  # the split was made and passed its check
    quiet = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)  # VITS is deterministic
    phonemes = voice.voice.phonemize("Mount Everest is the tallest mountain on Earth.")[0]
    inputs = feeds(voice.voice, voice.voice.phonemes_to_ids(phonemes), quiet)
    # The voice's own graph, whole (the loaded voice no longer holds it: piper_stream.WholeGraph).
    import onnxruntime

    from models.locate import locate

    original = onnxruntime.InferenceSession(str(locate("tts").path),
                                            providers=["CPUExecutionProvider"])
    whole = original.run(None, inputs)[0].reshape(-1)
    windows = list(stream.decode(stream.frames(inputs)))
    assert len(windows) >= 3  # ~2.5 s of speech: a short first window, then longer ones
    assert len(windows[0]) == FIRST_FRAMES * stream.hop < len(whole) / 5
    joined = np.concatenate(windows)
    assert len(joined) == len(whole)
    assert np.abs(joined - whole).max() < 1e-4  # float rounding, nothing audible


def test_streamed_clauses_share_one_gain_at_pipers_level(voice: PiperSynthesizer) -> None:
    peaks = [np.abs(_audio(voice, text)).max() / 32767 for text in CLAUSES]
    # Piper would scale each to exactly `volume`; one gain for all leaves them near it.
    assert 0.5 * voice.options.volume < np.median(peaks) <= 1.0


def test_a_voice_that_cannot_be_split_is_synthesized_whole(
    voice: PiperSynthesizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from piper import PiperVoice

    from models import piper_stream
    from models.locate import locate

    path = locate("tts").path
    plain = PiperVoice.load(path)  # its own session: the whole graph, as Piper loads it
    # The decoder's input taken one tensor too early (the flow's): a wrong split must be
    # refused by the check, not speak garbage.
    monkeypatch.setattr(piper_stream, "_decoder_input", lambda _model: "/Add_output_0")
    assert piper_stream.StreamingVoice.split(plain, path) is None
    monkeypatch.setattr(piper_stream, "_decoder_input", lambda _model: None)
    assert piper_stream.StreamingVoice.split(plain, path) is None
    assert piper_stream.StreamingVoice.split(plain, b"not an ONNX graph") is None
    whole = PiperSynthesizer(plain, voice.voice_id, voice.options, stream=None)
    audio = _audio(whole, "Hello there!")
    assert len(audio) > 0.4 * 16000 and np.abs(audio).max() > 0.5 * 32767 * voice.options.volume


def test_the_streaming_voice_still_speaks_whole_sentences_through_piper(
    voice: PiperSynthesizer,
) -> None:
    """Its own session is replaced by the split graph (memory), so Piper's API still works."""
    chunks = list(voice.voice.synthesize("Hello there. How are you?"))
    assert len(chunks) == 2 and all(len(c.audio_float_array) > 0.3 * 22050 for c in chunks)


@pytest.mark.parametrize("stream", [True, False])
def test_without_variation_a_text_is_spoken_the_same_every_time(stream: bool) -> None:
    """Tests that hear the voice assert on fixed audio (test_room_babble); streamed, the
    gain is calibrated without noise, so it is the same in every process too."""
    still = load_synthesizer(locate("tts").path, TtsOptions(variation=False, stream=stream))
    lively = load_synthesizer(locate("tts").path, TtsOptions(stream=stream))
    text = "What is the capital of France?"

    def said(voice: PiperSynthesizer) -> list[bytes]:
        return [np.concatenate(list(voice.synthesize(text))).tobytes() for _ in range(2)]

    first, again = said(still)
    assert first == again
    assert len(set(said(lively))) == 2
