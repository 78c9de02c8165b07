"""Answering: one reply from transcript to speech, and what keeps it honest.

Owns a reply attempt (`reply`), the LLM and TTS seams (`llm`, `tts`), the model
calls a reply makes (`model_calls`), clause cutting (`clauses`), the tools offered
to the LLM (`tools`), claims no skill made (`claims`), what the LLM reads and may
say (`integrity`), drafts and caches (`drafts`, `caches`), what the user heard
of a reply (`heard`) and what a reply gives up under load (`under_load`). May import
pipeline.listen, pipeline.compute, pipeline.skills and the root's cores (events,
timeline, speaker, conversation_events); never pipeline.conversation or pipeline.turn.
No model library, no I/O.
"""
