"""Piper audio as it is decoded: the first ~0.3 s of a clause in a fraction of the time.

A Piper (VITS) voice is one ONNX graph: the text encoder, duration predictor and flow turn
phonemes into a latent sequence z (one frame per `hop` output samples: 256 for the medium
voices), and the HiFi-GAN decoder (`/dec/…` nodes) turns z into audio. Piper runs it all
at once, so a clause's first sample waits for its last: ~90 ms for six words on 2 CPU
cores. The decoder is convolutional — an output frame depends only on latent frames near
it — so the graph is split at the decoder's input: `front` gives z for the whole clause
(~35 ms for six words) and the decoder runs on windows of z with CONTEXT_FRAMES of context
each side. The joined windows match a whole-clause decode to float rounding (max
difference ~1e-6 with 10 frames of context, measured), and the first FIRST_FRAMES (~0.28 s
of speech) cost ~13 ms of decoding: first audio ~48 ms instead of ~83 ms for six words.

A split is checked when it is made: with the noise scales at zero VITS is deterministic,
so the split's audio must equal the whole graph's for a probe phrase, or the voice is
synthesized whole (a voice exported some other way still works, only not streamed).

Piper scales each sentence to full scale, which needs the whole sentence. Streamed audio
gets one gain per voice instead, measured on calibration phrases at load: every clause at
the same loudness, Piper's typical level.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import onnx
    import onnxruntime
    from piper import PiperVoice, SynthesisConfig

log = logging.getLogger(__name__)

FIRST_FRAMES = 24
"""Latent frames in the first window (24 × 256 samples at 22.05 kHz ≈ 0.28 s of speech)."""
CHUNK_FRAMES = 96
"""Latent frames in each later window (~1.1 s): short enough that the LLM gets the CPU
between them, long enough that context frames add little work (2 × 10 per 96)."""
CONTEXT_FRAMES = 10
"""Frames decoded on each side of a window and dropped. Against a whole decode: 8 gave
63-68 dB SNR (max difference 2e-3), 10 and more the same audio to float rounding (~1e-6):
the decoder sees no further."""
CALIBRATION = ("Hello there.", "The capital of France is Paris.",
               "I'm not sure, but I think so!", "Set a timer for ten minutes.")
_TOLERANCE = 1e-4
"""Largest difference from the whole graph's audio (full scale 1) the probe may show."""


class StreamingVoice:
    """A Piper voice split at its decoder: latent frames in one run, audio by windows."""

    def __init__(self, front: onnxruntime.InferenceSession,
                 decoder: onnxruntime.InferenceSession, latent: str, hop: int) -> None:
        self.front = front
        self.decoder = decoder
        self.latent = latent
        self.hop = hop
        """Output samples per latent frame."""
        self.typical_peak = 1.0
        """The median peak of the calibration phrases (raw decoder output): a clause's
        audio is scaled by volume / typical_peak, Piper's level for a typical sentence."""

    @classmethod
    def split(cls, voice: PiperVoice, model: Path | bytes,
              providers: Sequence[Any] = ("CPUExecutionProvider",)) -> StreamingVoice | None:
        """The voice at `model` split at its decoder, or None if it cannot be (no `/dec/`
        nodes, or the split does not reproduce the whole graph's audio)."""
        import onnx
        import onnx.utils

        try:
            graph = onnx.load_model_from_string(model) if isinstance(model, bytes) \
                else onnx.load(str(model))
            latent = _decoder_input(graph)
            if latent is None:
                log.info("Piper voice has no /dec/ decoder to split at: synthesized whole")
                return None
            inputs = [i.name for i in graph.graph.input]
            outputs = [o.name for o in graph.graph.output][:1]
            extractor = onnx.utils.Extractor(graph)
            front = extractor.extract_model(inputs, [latent])
            decoder = extractor.extract_model([latent], outputs)
            voice_split = cls(_session(front, providers), _session(decoder, providers),
                              latent, hop=1)
            if not voice_split._check(voice):
                log.warning("the split Piper voice does not match the whole one: "
                            "synthesized whole")
                return None
            voice_split._calibrate(voice)
        except Exception as error:  # onnx/onnxruntime raise their own types
            log.warning("cannot split the Piper voice (%s): synthesized whole", error)
            return None
        return voice_split

    def frames(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """The latent sequence (1, channels, frames) for one sentence's feeds."""
        z: np.ndarray = self.front.run([self.latent], feeds)[0]
        return z

    def decode(self, z: np.ndarray, gain: float = 1.0) -> Iterator[np.ndarray]:
        """Float audio for `z`, window by window, scaled by `gain` (and clipped)."""
        total = z.shape[-1]
        start, size = 0, FIRST_FRAMES
        while start < total:
            end = total if total - start <= size + CONTEXT_FRAMES else start + size
            yield np.clip(self._window(z, start, end) * gain, -1.0, 1.0)
            start, size = end, CHUNK_FRAMES

    def _calibrate(self, voice: PiperVoice) -> None:
        from piper import SynthesisConfig

        # Noise off: the same gain in every process (a voice without variation then speaks
        # a text the same every time, streamed or whole).
        still = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
        peaks = []
        for text in CALIBRATION:
            for phonemes in voice.phonemize(text):
                z = self.frames(feeds(voice, voice.phonemes_to_ids(phonemes), still))
                peaks.append(float(np.abs(self._window(z, 0, z.shape[-1])).max()))
        self.typical_peak = max(1e-3, float(np.median(peaks)))

    def _window(self, z: np.ndarray, start: int, end: int) -> np.ndarray:
        lo, hi = max(0, start - CONTEXT_FRAMES), min(z.shape[-1], end + CONTEXT_FRAMES)
        out = self.decoder.run(None, {self.latent: np.ascontiguousarray(z[:, :, lo:hi])})
        audio: np.ndarray = np.asarray(out[0]).reshape(-1)
        return audio[(start - lo) * self.hop : (end - lo) * self.hop]

    def _check(self, voice: PiperVoice) -> bool:
        """Deterministic probe (noise off): the split must give the whole graph's audio."""
        from piper import SynthesisConfig

        quiet = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
        ids = voice.phonemes_to_ids(voice.phonemize("The split must sound the same.")[0])
        probe = feeds(voice, ids, quiet)
        whole = voice.session.run(None, probe)[0].reshape(-1)
        z = self.frames(probe)
        self.hop = len(whole) // z.shape[-1]
        if self.hop * z.shape[-1] != len(whole):
            return False
        streamed = np.concatenate(list(self.decode(z)))
        return len(streamed) == len(whole) and float(np.abs(streamed - whole).max()) < _TOLERANCE


def feeds(voice: PiperVoice, ids: list[int], syn_config: SynthesisConfig) -> dict[str, np.ndarray]:
    """The graph's inputs for one sentence, as Piper builds them (phoneme_ids_to_audio)."""
    config = voice.config
    phoneme_ids = np.expand_dims(np.array(ids, dtype=np.int64), 0)
    scales = [(config.noise_scale, syn_config.noise_scale),
              (config.length_scale, syn_config.length_scale),
              (config.noise_w_scale, syn_config.noise_w_scale)]
    out: dict[str, np.ndarray] = {
        "input": phoneme_ids,
        "input_lengths": np.array([phoneme_ids.shape[1]], dtype=np.int64),
        "scales": np.array([own if chosen is None else chosen for own, chosen in scales],
                           dtype=np.float32),
    }
    if config.num_speakers > 1:
        speaker = syn_config.speaker_id
        out["sid"] = np.array([config.default_speaker_id if speaker is None else speaker],
                              dtype=np.int64)
    return out


def _decoder_input(model: onnx.ModelProto) -> str | None:
    """The tensor the decoder starts from: what its first node reads from outside it."""
    graph = model.graph
    weights = {init.name for init in graph.initializer}
    decoder = [node for node in graph.node if node.name.startswith("/dec/")]
    if not decoder:
        return None
    inside = {out for node in decoder for out in node.output}
    outside = {name for node in decoder for name in node.input
               if name and name not in inside and name not in weights}
    return outside.pop() if len(outside) == 1 else None


class WholeGraph:
    """Stands in for the voice's own session once the split is made (`PiperVoice.session`):
    the same audio — the front, then the decoder over all frames — without the graph held
    twice in memory (the whole session is ~105 MB of the process)."""

    def __init__(self, split: StreamingVoice) -> None:
        self.split = split

    def run(self, output_names: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        z = self.split.frames(feeds)
        return [np.asarray(self.split.decoder.run(None, {self.split.latent: z})[0])]


def release_garbage() -> None:
    """Return the split's freed protobuf memory to the OS (~135 MB measured): glibc keeps
    it otherwise. Does nothing where there is no glibc."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _session(model: onnx.ModelProto, providers: Sequence[Any]) -> onnxruntime.InferenceSession:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    # Two sessions take turns per window: spinning threads of the one that just ran would
    # compete with the next (first audio 53 → 47 ms without spinning, measured).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # From a file, not bytes: a session made from bytes kept ~60 MB more (measured).
    with tempfile.TemporaryDirectory(prefix="apace-piper-") as folder:
        path = Path(folder) / "part.onnx"
        path.write_bytes(model.SerializeToString())
        return onnxruntime.InferenceSession(str(path), options, providers=list(providers))
