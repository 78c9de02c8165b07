"""The browser's way in: WebRTC (aiortc) peer connections, one conversation each.

Owns the media tracks (`tracks`: browser mic to pipeline frames, reply audio out),
a browser session (`session`) and a real WebRTC client for the bench and tests
(`client`). May import pipeline/, models/, app.transports' shared parts (audio,
pacing, listener) and app.security; never another transport (wyoming/, realtime/).
"""
