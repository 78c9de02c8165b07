"""The ways in: thin adapters from a protocol onto the same Engine and Conversation
(docs/clients.md, docs/architecture.md).

- `webrtc/`: the browser's peer connections (and the bench's WebRTC client).
- `wyoming/`: Home Assistant's Wyoming protocol over TCP (asr, tts, handle).
- `realtime/`: an OpenAI-Realtime-compatible WebSocket at /v1/realtime on the main port.
- What they share, here at the root: `audio` (PCM bytes in any common format to and from
  the pipeline's 16 kHz frames), `pacing` (one real-time schedule for every sender of
  audio), `listener` (a TCP listener), `flags` and `client_audio` (what every test
  client shares).

Each transport may import these shared parts, app.security, models/ and pipeline/; no
transport imports another (tests/unit/test_layering.py).
"""
