"""`apace bench`: what a user hears, measured from outside over real transports.

- `latency`: time to first audio over WebRTC, with `--ablate` for each latency lever.
- `utterances`: the shipped question set, spoken by the embedded voice.
"""

from app.bench.latency import ConfigResult, TurnResult, Utterance, bench, report, run_config

__all__ = ["ConfigResult", "TurnResult", "Utterance", "bench", "report", "run_config"]
