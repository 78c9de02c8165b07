"""How a Realtime session is bounded and paced (app.transports.realtime.session)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class RealtimeOptions:
    lead_ms: int = 60
    """Reply audio may run this far ahead of real time (network jitter)."""
    max_message_bytes: int = 1024 * 1024
    max_append_bytes: int = 480_000
    """One append: 10 s of 24 kHz PCM16."""
    max_buffer_s: float = 60.0
    """Uncommitted audio (turn_detection null)."""
    message_rate: float = 150.0
    message_burst: int = 300
    idle_timeout_s: float = 300.0
    """A client that sends nothing this long is disconnected."""
    max_outbox: int = 3000
    """Events waiting for a client that does not read (~60 s of audio): then it is cut off."""
    apace_events: bool = False
    """Also send `apace.turn` events, each turn's timeline, an extension of the protocol
    that apace's own client reads (default False)."""
