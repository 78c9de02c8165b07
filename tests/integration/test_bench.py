"""`apace bench`'s TTFA measurement, against a server whose reply delay is known.

The server is the real apace app (aiohttp + aiortc) on loopback, with scripted models:
no speculation, a fixed 300 ms endpoint and an ASR that takes 200 ms, so its reply audio
starts ~500 ms after the end of speech. The bench's client-clock TTFA must land there
plus the transport, never before.
"""

from __future__ import annotations

import numpy as np
import pytest

from app.bench import Utterance, run_config
from models.wav_files import read_wav
from pipeline.audio import speech_end_sample
from tests.integration.synthetic import ASR_MS, ENDPOINT_MS

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


async def test_client_ttfa_is_the_known_server_delay_plus_transport(synthetic_server, ask) -> None:
    pcm = read_wav(ask("What is the capital of France?"))
    result = await run_config(synthetic_server, "synthetic", [],
                              [Utterance("What is the capital of France?", pcm)], [])
    assert len(result.turns) == 1
    turn = result.turns[0]
    server_ttfa = turn.timeline_ms["ttfa_server"]
    # Measured 504-538 ms (4 runs); the same server gave 433-758 ms in the quality bench's
    # test on a busy 2-core box. Only the ASR's 200 ms are wall time for sure: the endpoint
    # counts 300 ms of frames, and frames that arrive bunched pass it sooner.
    assert ASR_MS <= server_ttfa <= ENDPOINT_MS + ASR_MS + 400, turn.timeline_ms
    assert turn.ttfa_client_ms is not None
    # The client hears it after the server sent it (mic and speaker transport both ways,
    # a few jitter-buffer packets each), and not absurdly later (measured 147-165 ms here,
    # up to 352 ms in the quality bench's test).
    assert server_ttfa < turn.ttfa_client_ms < server_ttfa + 800, turn
    # The two transport legs and the server's TTFA tile the client's TTFA (one clock).
    legs = turn.transport_ms
    assert 0 < legs["mic_path"] < 300 and 0 < legs["speaker_path"] < 300, legs
    assert legs["mic_path"] + server_ttfa + legs["speaker_path"] == pytest.approx(
        turn.ttfa_client_ms, abs=1.0)
    assert not turn.cut_off


async def test_a_turn_that_ends_in_the_speakers_pause_is_a_cut_off(synthetic_server, ask) -> None:
    """The synthetic server ends a turn after 300 ms of silence: a question with a 0.7 s
    pause in it becomes two turns, and the first ended long before the words did."""
    words = read_wav(ask("What is the capital of France?"))
    speech = words[: speech_end_sample(words)]
    paused = np.concatenate([speech, np.zeros(11200, np.int16), words])
    result = await run_config(synthetic_server, "synthetic", [], [],
                              [Utterance("What is the capital of France?", paused, paused=True)])
    assert len(result.paused) == 1 and result.paused[0].cut_off
