"""apace's streaming pipeline: VAD → ASR → turns → LLM → clauses → TTS, one audio format.

Orchestration and pure cores: no model library is imported here (models/ wraps them), no
file, database, network or environment. The root holds the conversation (`conversation`,
its options and events), the `engine`, and the cores every wing uses (`events`,
`timeline`, `audio`, `speaker`, `quality`, the timer `bell` and `chime`). The wings:
`listen/` (audio to words), `turn/` (turn-taking), `answer/` (a reply, transcript to
speech), `compute/` (workers, batching, admission), `room/` (the room gate) and
`skills/` (deterministic answers). The bottom floor: it imports neither models/ nor app/.
"""
