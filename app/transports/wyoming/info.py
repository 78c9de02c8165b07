"""What apace tells Home Assistant it offers (`describe` → `info`).

Three programs, each on the engine's models: speech-to-text (Whisper), text-to-speech
(Piper, with streaming synthesis: audio for each clause as soon as it is made) and a
conversation agent (`handle`: skills, then the LLM, with history per conversation id).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.transports.wyoming.protocol import Event


@dataclass(frozen=True, kw_only=True)
class ProgramNames:
    """The models behind each program, as Home Assistant lists them."""

    asr_model: str = "whisper"
    tts_voice: str = "piper"
    llm_model: str = "llm"
    languages: tuple[str, ...] = ("en",)
    tts_languages: tuple[str, ...] = ("en_US",)
    version: str = "0.1.0"


def _artifact(name: str, description: str, author: str, url: str, version: str) -> dict[str, Any]:
    return {"name": name, "description": description, "version": version, "installed": True,
            "attribution": {"name": author, "url": url}}


def info_event(names: ProgramNames) -> Event:
    v = names.version
    apace = ("apace", "https://github.com/")
    asr = {**_artifact("apace-asr", "apace speech-to-text (faster-whisper)", *apace, v),
           "models": [{**_artifact(names.asr_model, "Whisper (CTranslate2)", "OpenAI",
                                   "https://github.com/openai/whisper", v),
                       "languages": list(names.languages)}],
           "supports_transcript_streaming": False,
           # Home Assistant ends the command; apace speculates on the silence it hears.
           "requires_external_vad": True}
    tts = {**_artifact("apace-tts", "apace text-to-speech (Piper, streaming)", *apace, v),
           "voices": [{**_artifact(names.tts_voice, "Piper voice", "rhasspy",
                                   "https://github.com/rhasspy/piper", v),
                       "languages": list(names.tts_languages), "speakers": None}],
           "supports_synthesize_streaming": True}
    handle = {**_artifact("apace", "apace conversation: built-in skills, then the LLM", *apace,
                          v),
              "models": [{**_artifact(names.llm_model, "local LLM (llama.cpp)", "apace",
                                      apace[1], v),
                          "languages": list(names.languages)}],
              "supports_handled_streaming": True,
              "supports_home_control": False}
    return Event("info", {"asr": [asr], "tts": [tts], "handle": [handle], "intent": [],
                          "wake": [], "mic": [], "snd": []})
