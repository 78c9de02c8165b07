"""apace's streaming pipeline: VAD → ASR → turns → LLM → clauses → TTS, one audio format.

Orchestration and pure cores: no model library is imported here (models/ wraps them).
"""
