"""Listening in a real room: conditioning, the room's and the user's levels, our own echo.

`Room` (gate.py) is what the endpointer asks, told how by `RoomOptions` and what the
transport knows of its audio by `Stream` (options.py); levels.py, echo.py and
conditioning.py are its pure parts. Models (a noise suppressor, a neural VAD) come in
through Protocols from models/denoise.py and models/silero.py. May import the
pipeline's root cores (events, audio); nothing of the conversation or the other wings.
"""

from pipeline.room.gate import Heard, Room, SpeechProbability
from pipeline.room.options import RoomOptions, Stream

__all__ = ["Heard", "Room", "RoomOptions", "SpeechProbability", "Stream"]
