"""apace's streaming pipeline: VAD → ASR → turns → LLM → clauses → TTS, one audio format."""

from pipeline import openmp

openmp.tune()  # before pipeline.drafts imports llama_cpp (and with it libgomp)
