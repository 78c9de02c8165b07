"""An OpenAI-Realtime-compatible WebSocket at /v1/realtime on the main port: `openai`
realtime clients (and Pipecat/LiveKit realtime plugins) talk to apace's Conversation."""
