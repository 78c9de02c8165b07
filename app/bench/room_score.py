"""The room bench's scoring (pure): which turn was which question, phantoms, lost
questions, WER, self-interruptions, talk-overs honoured and TTFA (app.bench.room)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.bench.asr import normalise


@dataclass
class Asked:
    """One spoken question, on the shared clock."""

    text: str
    start: float
    """Its first sound left the client."""
    end: float
    """Its last sound left the client."""
    talk_over: bool = False
    backchannel: bool = False
    """A listener's "mm-hm" said over a reply (like a talk-over): it should go on."""
    lead_in: bool = False
    """Asked only to be talked over (the long ask before a talk-over): not one of the
    condition's questions, so out of its WER and TTFA — every condition's are over the
    same questions."""
    stopped_ms: float | None = None
    """Talk-over: its first sound → the reply's last audible frame at the client (None: the
    reply had ended, or was not interrupted)."""
    ttfa_ms: float | None = None
    quiet_before_ms: float | None = None
    """Talk-over: how long the reply had been quiet at the client when it began (a gap
    between clauses, or its end)."""
    over_reply: bool = True
    """Talk-over: the reply was playing when it began and had more to play than a barge-in
    takes (a one-sentence story can end by itself under it: such a talk-over tests nothing
    and is counted apart)."""


BACKCHANNEL_CUT_S = 2.0
"""A barge-in this long after a backchannel ended is its doing (the words it was taken for
were heard at its endpoint: up to ~1.2 s of silence, then Whisper)."""


def summarize(asked: Sequence[Asked], events: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Phantoms, lost questions and WER (of the questions not said over a reply; numbers
    count as the same words however written: app.bench.asr.normalise),
    self-interruptions, talk-overs (honoured, then answered) and TTFA (pure)."""
    import jiwer

    turns = [e for e in events if e["type"] == "turn"]
    owners = _owners(asked, turns)
    heard: dict[int, list[str]] = {}
    for owner, turn in zip(owners, turns, strict=True):
        if owner is not None:
            heard.setdefault(owner, []).append(str(turn.get("transcript", "")))
    phantom = owners.count(None) + sum(len(v) - 1 for v in heard.values())
    plain = [i for i, a in enumerate(asked)
             if not a.talk_over and not a.lead_in and not a.backchannel]
    refs = [normalise(asked[i].text) for i in plain]
    hyps = [normalise(" ".join(heard.get(i, []))) for i in plain]
    words = sum(len(r.split()) for r in refs)
    errors = sum(jiwer.process_words(r, h).wer * len(r.split()) if h else len(r.split())
                 for r, h in zip(refs, hyps, strict=True))
    barge = [e["received"] for e in events if e["type"] == "barge_in"]
    talking = [(a.start, a.end + (BACKCHANNEL_CUT_S if a.backchannel else 0.6)) for a in asked]
    self_cuts = sum(not any(s <= t <= e for s, e in talking) for t in barge)
    overs = [a for a in asked if a.talk_over and a.over_reply]
    honoured = [a for a in overs if any(a.start <= t <= a.end + 0.6 for t in barge)]
    ttfa = [ttfa_ms for i in plain if (ttfa_ms := asked[i].ttfa_ms) is not None]
    answered = {owner: turn for owner, turn in zip(owners, turns, strict=True)
                if owner is not None and owner in plain}
    skill_ttfa = [ttfa_ms for i, turn in answered.items()
                  if turn.get("skill") and (ttfa_ms := asked[i].ttfa_ms) is not None]
    waits = [float(turn["timeline_ms"]["endpoint"]) for turn in answered.values()
             if "endpoint" in (turn.get("timeline_ms") or {})]
    out: dict[str, Any] = {
        "questions": len(plain), "turns": len(turns), "phantom_turns": phantom,
        "lost": sum(i not in heard for i in plain),
        "wer": round(errors / max(1, words), 3), "self_interruptions": self_cuts,
        "talk_overs": len(overs), "talk_overs_honoured": len(honoured),
        "talk_overs_answered": sum(i in heard for i, a in enumerate(asked) if a.talk_over),
        "stop_ms": [a.stopped_ms for a in overs],
        "talk_overs_after_reply": sum(a.talk_over and not a.over_reply for a in asked),
    }
    out.update(_backchannels(asked, heard, barge))
    if ttfa:
        p50, p95 = np.percentile(ttfa, [50, 95])
        out["ttfa_client"] = {"p50": round(float(p50), 1), "p95": round(float(p95), 1)}
    if skill_ttfa:  # the room's own latency: a skill answers in milliseconds, an LLM varies
        out["ttfa_client_skill"] = {"n": len(skill_ttfa),
                                    "p50": round(float(np.percentile(skill_ttfa, 50)), 1)}
    if lags := [(float(turn["speech_end_t"]) - asked[i].end) * 1000
                for i, turn in answered.items() if turn.get("speech_end_t") is not None]:
        p50, p90 = np.percentile(lags, [50, 90])
        out["speech_end_lag_ms"] = {"p50": round(float(p50), 1), "p90": round(float(p90), 1)}
    if waits:
        out["endpoint_ms_p50"] = round(float(np.percentile(waits, 50)), 1)
    return out


def _backchannels(asked: Sequence[Asked], heard: dict[int, list[str]],
                  barge: Sequence[float]) -> dict[str, int]:
    """Backchannels said over a reply, those that cut it (at once, or once their words were
    heard: at its endpoint, before a pause did), and those answered as a turn."""
    channels = [a for a in asked if a.backchannel and a.over_reply]
    if not channels:
        return {}
    return {"backchannels": len(channels),
            "backchannels_cut": sum(any(a.start <= t <= a.end + BACKCHANNEL_CUT_S for t in barge)
                                    for a in channels),
            "backchannels_answered": sum(i in heard for i, a in enumerate(asked) if a.backchannel)}


def _owners(asked: Sequence[Asked], turns: Sequence[dict[str, Any]]) -> list[int | None]:
    """Each turn's question (None: a phantom), in order. A question owns the turns whose
    speech ends in its own span (its start - 0.3 s to its end + 1 s). If none does, the
    turn that ends before the next question began and shares most words with it is that
    question, heard late or misheard (background talk held the floor past its end: it was
    counted as a phantom *and* a lost question); one sharing no word is the room's."""
    import jiwer

    ends = [float(t.get("speech_end_t", t["received"])) for t in turns]
    owners: list[int | None] = [None] * len(turns)
    for index, a in enumerate(asked):
        own = [k for k, end in enumerate(ends) if a.start - 0.3 <= end <= a.end + 1.0
               and owners[k] is None]
        for k in own:
            owners[k] = index
        later = asked[index + 1].start - 0.3 if index + 1 < len(asked) else float("inf")
        ref = normalise(a.text)
        match = {k: jiwer.process_words(ref, hyp) for k, end in enumerate(ends)
                 if not own and owners[k] is None and a.end + 1.0 < end < later
                 and (hyp := normalise(str(turns[k].get("transcript", ""))))}
        shared = {k: m.wer for k, m in match.items() if m.hits}
        if shared:
            owners[min(shared, key=lambda k: (shared[k], k))] = index
    return owners
