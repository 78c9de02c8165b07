"""The mic's jitter buffer: a packet waits only while an earlier one is missing."""

from __future__ import annotations

from aiortc.rtp import RtpPacket

from app.transports.webrtc.tracks import PacketJitterBuffer


def packet(seq: int) -> RtpPacket:
    p = RtpPacket(payload_type=111, sequence_number=seq % 65536, timestamp=seq * 960 % 2**32)
    p._data = f"opus {seq}".encode()  # type: ignore[attr-defined]  # set by aiortc's receiver
    return p


def released(buffer: PacketJitterBuffer, seqs: list[int]) -> list[bytes | None]:
    out = []
    for seq in seqs:
        _, frame = buffer.add(packet(seq))
        out.append(frame.data if frame is not None else None)
    return out


def test_a_packet_in_order_is_released_as_it_arrives_not_when_the_next_does() -> None:
    # aiortc's own buffer gives packet n only when n + 1 arrives: 20 ms on every frame.
    assert released(PacketJitterBuffer(), [100, 101, 102]) == [b"opus 100", b"opus 101", b"opus 102"]


def test_sequence_numbers_wrap() -> None:
    assert released(PacketJitterBuffer(), [65535, 65536, 65537]) == [
        b"opus 65535", b"opus 65536", b"opus 65537"]


def test_a_reordered_packet_is_waited_for_and_played_in_order() -> None:
    buffer = PacketJitterBuffer(hold=1)
    assert released(buffer, [10, 12, 11]) == [b"opus 10", None, b"opus 11"]
    assert released(buffer, [13]) == [b"opus 12"]  # one packet behind now, in order


def test_a_lost_packet_is_given_up_after_hold_later_packets() -> None:
    buffer = PacketJitterBuffer(hold=2)
    assert released(buffer, [1, 3, 4, 5]) == [b"opus 1", None, None, b"opus 3"]
    assert released(buffer, [2]) == [None]  # too late: its turn was given up


def test_hold_zero_never_waits() -> None:
    assert released(PacketJitterBuffer(hold=0), [1, 3, 4]) == [b"opus 1", b"opus 3", b"opus 4"]
