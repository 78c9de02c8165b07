"""apace's streaming pipeline: VAD → ASR → turns → LLM → clauses → TTS, one audio format."""

from pipeline import openmp

openmp.tune()  # before any model library loads libgomp (models/ imports them lazily)
