"""Finding, fetching, verifying and wrapping apace's models: explicit path → env var →
config file → embedded; the adapters behind pipeline/'s Protocols."""

from models import openmp

openmp.tune()  # before any model library loads libgomp: they are imported only in models/
