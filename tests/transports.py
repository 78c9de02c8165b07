"""An Engine on the scripted fakes, for the transport tests (Wyoming, Realtime).

The real Engine class — workers, conversations, skills — with fake models, so a transport
test exercises the same Conversation path the product runs, in milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.conversation_options import ConversationOptions
from pipeline.engine import ClosableResponder, Engine
from tests.fakes import TEST_VAD, FakeResponder, FakeSynthesizer, FakeTranscriber


@dataclass
class FakeEngine:
    engine: Engine
    transcriber: FakeTranscriber
    responder: FakeResponder
    synthesizer: FakeSynthesizer

    def close(self) -> None:
        self.engine.close()


def fake_engine(transcripts: Sequence[str] = ("hello",), reply: Sequence[str] = ("Hi there.",),
                *, skills: bool = False, llm_delay_s: float = 0.0, tts_delay_s: float = 0.0,
                barge_in_ms: int = 200, speculate: bool = True) -> FakeEngine:
    """The real Engine on fakes: test VAD timings (an endpoint after 200 ms of silence),
    no captions, a fixed endpoint; `skills` adds the built-in skills (timers only: no
    list store)."""
    transcriber = FakeTranscriber(*transcripts)
    responder = FakeResponder(list(reply), delay_s=llm_delay_s)
    synthesizer = FakeSynthesizer(delay_s=tts_delay_s)
    options = ConversationOptions(vad=TEST_VAD, endpoint=None, partial_interval_s=None,
                                  barge_in_ms=barge_in_ms, speculate=speculate)
    engine = Engine(transcriber, synthesizer,
                    lambda: ClosableResponder(responder, lambda: None), options,
                    tts_cache=False, reply_cache=False, share_cpu=False,
                    skills=[] if skills else None)
    return FakeEngine(engine, transcriber, responder, synthesizer)
