"""An OpenAI-Realtime-compatible WebSocket at /v1/realtime on the main port: `openai`
realtime clients (and Pipecat/LiveKit realtime plugins) talk to apace's Conversation.

May import app.transports' shared parts, the server that hosts it (app.server,
app.serve), app.security, models/ and pipeline/; never
another transport (webrtc/, wyoming/).
"""
