"""apace's application layer: the ways in (docs/architecture.md).

The root holds what every way in shares: the HTTP server that hosts them (`server`,
`serve`), building the engine from the user's choices (`runtime`, `levers`), `apace talk`,
a server child process for benches and tests (`process`) and where the page is
(`web_dir`, `appkeys`). The rooms: `cli/` (the commands), `transports/` (WebRTC,
Wyoming, Realtime), `observe/` (dashboard, metrics), `cluster/`, `bench/`, `security/`.
The top floor: it may import models/ and pipeline/; neither imports it.
"""
