"""Listening: the user's audio to an utterance and its words.

Owns voice activity and the endpointer (`vad`), how much silence ends a turn
(`endpointing`), the semantic end-of-turn seam (`turn_detector`), the ASR seam
(`asr`) and the shared ear that batches transcriptions (`ear`). May import
pipeline.compute, pipeline.room and the root's events, timeline and audio; never
the conversation or the other wings. No model library, no I/O.
"""
