"""Turn-taking: the user talking over a reply, a pause heard again, live captions.

Owns the turn port (`turn_port`: all this wing may ask of a Conversation),
`talk_over`, `rehearing`, `captions` and what a finished reply leaves behind
(`turn_record`). May import pipeline.listen, pipeline.answer, pipeline.compute,
pipeline.skills and the root's cores (events, timeline, conversation_events,
conversation_options, quality); never pipeline.conversation: it reaches the
conversation only through the port.
"""
