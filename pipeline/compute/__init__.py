"""Compute: sharing the CPU and the models among every conversation.

Owns the model workers (`workers`: blocking calls off the event loop, by priority), a
stream's gate (`gate`: when the model making a reply may take its next step),
continuous batching's pure parts (`batching`), admission from measured load
(`admission`), degrading turns on purpose under load (`degrade`) and the engine's
counters (`stats`). Knows nothing of a
conversation: may import only the root's events and timeline.
"""
