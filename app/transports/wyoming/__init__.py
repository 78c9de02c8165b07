"""Home Assistant's Wyoming protocol: apace as speech-to-text, text-to-speech and
conversation agent over TCP (`apace wyoming`, `apace serve --wyoming PORT`).

May import app.transports' shared parts, the server that hosts it (app.server,
app.serve), app.security, models/ and pipeline/; never
another transport (webrtc/, realtime/).
"""
