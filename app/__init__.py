"""apace's application layer: CLI, server, WebRTC transport, dashboard endpoints."""
