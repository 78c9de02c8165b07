"""Wyoming framing without I/O: events survive any split of the byte stream, and every
broken or oversized stream is a FramingError with a reason — never another exception."""

from __future__ import annotations

import json
import random

import pytest

from app.transports.wyoming.protocol import Decoder, Event, FramingError, Limits, encode

EVENTS = [
    Event("describe"),
    Event("audio-chunk", {"rate": 16000, "width": 2, "channels": 1}, bytes(range(256)) * 4),
    Event("transcript", {"text": "héllo wörld", "context": {"conversation_id": "a"}}),
    Event("audio-stop", {"timestamp": 5}),
]


def test_encoded_events_decode_back_whatever_the_chunking() -> None:
    wire = b"".join(encode(event) for event in EVENTS)
    for size in (1, 2, 7, 64, len(wire)):
        decoder = Decoder()
        got = [e for i in range(0, len(wire), size) for e in decoder.feed(wire[i : i + size])]
        assert got == EVENTS
        assert not decoder.mid_event


def test_data_after_the_header_is_merged_over_header_data() -> None:
    extra = json.dumps({"text": "long text", "b": 2}).encode()
    header = json.dumps({"type": "synthesize", "data": {"text": "x", "a": 1},
                         "data_length": len(extra)}).encode()
    (event,) = Decoder().feed(header + b"\n" + extra)
    assert event.data == {"text": "long text", "a": 1, "b": 2}


def test_the_package_wire_format_is_read() -> None:
    wyoming_event = pytest.importorskip("wyoming.event")
    import io

    out = io.BytesIO()
    wyoming_event.write_event(wyoming_event.Event("audio-chunk", {"rate": 16000}, b"\x01\x02"), out)
    (event,) = Decoder().feed(out.getvalue())
    assert event == Event("audio-chunk", {"rate": 16000}, b"\x01\x02")
    back = wyoming_event.read_event(io.BytesIO(encode(event)))
    assert (back.type, back.data, back.payload) == ("audio-chunk", {"rate": 16000}, b"\x01\x02")


def test_blank_lines_between_events_are_skipped() -> None:
    assert Decoder().feed(b"\n\r\n" + encode(Event("ping")) + b"\n") == [Event("ping")]


def test_an_event_waits_for_its_payload() -> None:
    decoder = Decoder()
    wire = encode(EVENTS[1])
    assert decoder.feed(wire[:-1]) == []
    assert decoder.mid_event
    assert decoder.feed(wire[-1:]) == [EVENTS[1]]


@pytest.mark.parametrize("line, reason", [
    (b"not json", "bad header"),
    (b"[1, 2]", "not a JSON object"),
    (b"{}", "no event 'type'"),
    (b'{"type": 5}', "no event 'type'"),
    (b'{"type": "x", "data": [1]}', "'data' is not a JSON object"),
    (b'{"type": "x", "payload_length": -1}', "non-negative"),
    (b'{"type": "x", "payload_length": true}', "non-negative"),
    (b'{"type": "x", "payload_length": 1.5}', "non-negative"),
    (b'{"type": "x", "payload_length": 99999999999}', "over the limit"),
    (b'{"type": "x", "data_length": 999999999}', "over the limit"),
    (b'{"type": "' + b"t" * 100 + b'"}', "no event 'type'"),
    (b'{"type": "x", "data": ' + b'{"a":' * 20 + b"1" + b"}" * 20 + b"}", "nested"),
    (b'\xff\xfe{"type": "x"}', "UTF-8"),
])
def test_a_broken_header_is_refused_with_a_reason(line: bytes, reason: str) -> None:
    with pytest.raises(FramingError, match=reason):
        Decoder().feed(line + b"\n")


def test_extra_data_that_is_not_an_object_is_refused() -> None:
    header = json.dumps({"type": "x", "data_length": 3}).encode()
    with pytest.raises(FramingError, match="not a JSON object"):
        Decoder().feed(header + b"\n[1]")


def test_a_header_without_an_end_is_refused_before_it_grows() -> None:
    decoder = Decoder(Limits(max_header=100))
    decoder.feed(b"x" * 100)
    with pytest.raises(FramingError, match="longer than 100"):
        decoder.feed(b"x")


def test_random_bytes_give_events_or_a_framing_error_only() -> None:
    """Bounded fuzz (seeded): mutated valid streams and noise, fed in random pieces."""
    rng = random.Random(1234)
    valid = b"".join(encode(event) for event in EVENTS)
    for case in range(400):
        data = bytearray(valid if case % 2 else rng.randbytes(rng.randint(1, 600)))
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        decoder = Decoder(Limits(max_payload=4096, max_data=4096))
        try:
            at = 0
            while at < len(data):
                step = rng.randint(1, 64)
                for event in decoder.feed(bytes(data[at : at + step])):
                    assert isinstance(event.type, str) and isinstance(event.data, dict)
                at += step
        except FramingError as error:
            assert error.reason
