"""Ways in besides the browser: thin adapters from a protocol onto the same Engine and
Conversation that WebRTC uses (docs/clients.md, "Home Assistant (Wyoming)" and
"OpenAI-Realtime clients").

- `wyoming/`: Home Assistant's Wyoming protocol over TCP (asr, tts, handle).
- `realtime/`: an OpenAI-Realtime-compatible WebSocket at /v1/realtime on the main port.
- `audio`: PCM bytes in any common format to and from the pipeline's 16 kHz frames, and
  the pacing of reply audio out.
- `turns`: what a transport other than the microphone path asks of a Conversation.
"""
