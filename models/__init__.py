"""Finding, fetching, verifying and wrapping apace's models: explicit path → env var →
config file → embedded; the adapters behind pipeline/'s Protocols; the files and stores
pipeline/ does not touch (WAV files, the facts skill's data, the list store, the timers)."""

from models import openmp

openmp.tune()  # before any model library loads libgomp: they are imported only in models/
