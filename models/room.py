"""One room gate per conversation, with its models: WebRTC's echo canceller, a noise
suppressor, Silero VAD and the automatic gain (WebRTC's, when `RoomOptions.gain_dbfs` is set).

They keep per-stream state, so each conversation gets fresh ones from the factory; the
Silero ONNX session itself is shared. Built once at start-up (`room_factory`) so that a
missing package is reported then, not at the first user.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from models.denoise import load_conditioner
from models.echo_cancel import load_canceller
from models.locate import ModelError
from models.silero import SileroVad
from pipeline.room import Room, RoomOptions, Stream

log = logging.getLogger(__name__)


def room_factory(options: RoomOptions, *, denoiser: str | None = "webrtc",
                 neural_vad: bool = True) -> Callable[[Stream], Room]:
    """Makes each conversation's `Room`. `denoiser`: "webrtc", "rnnoise" or None.

    With `RoomOptions.echo_cancel`, each stream whose replies play where its microphone is
    gets WebRTC's echo canceller (a ModelError names the package if it is missing).

    Without webrtc-noise-gain (a dependency, but a wheel may be missing for a platform)
    the rooms go without conditioning, logged with the fix: the gate still works on the
    raw audio, only less well in steady noise. Another denoiser that cannot load is a
    ModelError naming the package."""
    if denoiser is not None and options.enabled and options.conditioning:
        try:
            load_conditioner(denoiser)
        except ModelError as error:
            if denoiser != "webrtc":
                raise  # asked for by name: say what to install
            log.warning("no input conditioning: %s", error)
            denoiser = None
    if neural_vad and options.enabled:
        SileroVad()  # raises ModelError with the fix if the model cannot load
    cancel = options.enabled and options.echo_cancel
    if cancel:  # asked for: a missing package is a ModelError naming it
        load_canceller().close()  # (its library starts its threads now, not at the first user)
    agc = options.enabled and options.conditioning and options.gain_dbfs > 0
    if agc:
        load_conditioner("webrtc", suppression=0, gain_dbfs=options.gain_dbfs)  # or say why

    kind = denoiser

    def make(stream: Stream) -> Room:
        conditioner = gain = None
        if kind is not None and not stream.processed:
            conditioner = load_conditioner(kind)
        if options.gain_dbfs and agc and not stream.processed:
            gain = load_conditioner("webrtc", suppression=0, gain_dbfs=options.gain_dbfs)
        return Room(options, conditioner=conditioner,
                    speech_probability=SileroVad() if neural_vad and options.enabled else None,
                    stream=stream, gain=gain,
                    canceller=load_canceller() if cancel and stream.hears_us else None)

    return make
