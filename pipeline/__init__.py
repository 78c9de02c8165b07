"""apace's streaming pipeline: VAD → ASR → turns → LLM → clauses → TTS, one audio format."""
