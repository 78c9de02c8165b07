"""Structural SDP checks: what a browser sends passes; extra media, too many sections,
name-resolving candidates and garbage are refused with a reason."""

from __future__ import annotations

import pytest

from app.security.limits import Refused
from app.security.sdp import MAX_CANDIDATES, check_offer
from tests.offers import CHROME_OFFER, FINGERPRINT, VIDEO_SECTION, audio_section, with_lines

CANDIDATE = ("a=candidate:1467250027 1 udp 2122260223 127.0.0.1 54321 typ host generation 0 "
             "network-id 1")


def _refused(sdp: str) -> str:
    with pytest.raises(Refused) as refused:
        check_offer(sdp)
    assert refused.value.status == 400
    return refused.value.reason


def test_a_browser_offer_passes() -> None:
    check_offer(CHROME_OFFER)
    check_offer(CHROME_OFFER.replace("\r\n", "\n"))  # bare newlines are tolerated


def test_an_offer_without_a_data_channel_passes() -> None:
    check_offer(CHROME_OFFER.split("m=application")[0])


def test_an_extra_video_track_is_refused() -> None:
    assert "video" in _refused(CHROME_OFFER + VIDEO_SECTION)


def test_a_second_audio_track_is_refused() -> None:
    assert "exactly one audio" in _refused(CHROME_OFFER + audio_section(2))


def test_a_hundred_audio_sections_are_refused_at_the_section_limit() -> None:
    offer = CHROME_OFFER + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\n" * 100
    assert "more than 4 media sections" in _refused(offer)


def test_no_audio_is_refused() -> None:
    assert "exactly one audio" in _refused("v=0\r\ns=-\r\nt=0 0\r\n"
                                           "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n")


@pytest.mark.parametrize("direction", ["recvonly", "inactive"])
def test_audio_that_does_not_send_is_refused(direction: str) -> None:
    assert direction in _refused(with_lines(CHROME_OFFER, "a=sendrecv", f"a={direction}"))


def test_a_session_level_direction_applies_to_audio_without_its_own() -> None:
    offer = with_lines(with_lines(CHROME_OFFER, "a=sendrecv", ""), "a=extmap-allow-mixed",
                       "a=inactive")
    assert "inactive" in _refused(offer)


def test_audio_without_a_codec_apace_decodes_is_refused() -> None:
    offer = CHROME_OFFER.split("m=audio")[0] + audio_section(0, codec="G729/8000")
    assert "codec" in _refused(offer)


def test_two_data_channel_sections_are_refused() -> None:
    section = "m=application" + CHROME_OFFER.split("m=application")[1]
    assert "data-channel" in _refused(CHROME_OFFER + section)


def test_a_candidate_naming_a_dns_host_is_refused() -> None:
    offer = with_lines(CHROME_OFFER, CANDIDATE,
                       CANDIDATE.replace("127.0.0.1", "attacker.example"))
    assert "neither an IP address nor a .local name" in _refused(offer)


def test_too_many_candidates_are_refused() -> None:
    offer = with_lines(CHROME_OFFER, CANDIDATE, "\r\n".join([CANDIDATE] * (MAX_CANDIDATES + 1)))
    assert "candidates" in _refused(offer)


@pytest.mark.parametrize(
    ("sdp", "reason"),
    [
        ("", "v=0"),
        ("o=- 1 1 IN IP4 0.0.0.0\r\nv=0\r\n", "v=0"),
        (CHROME_OFFER.replace("s=-", "s=\x00-"), "line 3"),
        (CHROME_OFFER.replace("s=-", "s=-\rx"), "line 3"),
        (CHROME_OFFER.replace("s=-", "s=" + "x" * 5000), "line 3"),
        (CHROME_OFFER.replace("s=-", "S=-"), "line 3"),
        (CHROME_OFFER.replace("t=0 0", "t=0 0\r\n\r\nt=0 0"), "line 5"),
        (CHROME_OFFER.replace("m=audio 54321 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126",
                              "m=audio x"), "m= line"),
        (CHROME_OFFER + "a=x\r\n" * 400, "lines"),
        (with_lines(CHROME_OFFER, CANDIDATE, "a=candidate:1 1 udp"), "malformed ICE"),
    ],
    ids=["empty", "v-not-first", "nul", "bare-cr", "long-line", "upper-case", "empty-line",
         "bad-m-line", "too-many-lines", "short-candidate"],
)
def test_garbage_is_refused_with_the_line_at_fault(sdp: str, reason: str) -> None:
    assert reason in _refused(sdp)


@pytest.mark.parametrize("line", [FINGERPRINT, "a=ice-ufrag:abcd",
                                  "a=ice-pwd:abcdefghijklmnopqrstuvwx"])
def test_audio_without_ice_credentials_or_a_fingerprint_is_refused(line: str) -> None:
    """(aiortc itself accepts an offer without a fingerprint.)"""
    assert line.split(":")[0][2:] in _refused(with_lines(CHROME_OFFER, line, ""))


def test_session_level_credentials_count_for_the_audio_section() -> None:
    offer = with_lines(CHROME_OFFER, FINGERPRINT, "")
    check_offer(with_lines(offer, "a=extmap-allow-mixed", FINGERPRINT))


@pytest.mark.parametrize(("line", "reason"), [("a=setup:actpass", "a=setup"),
                                              ("a=rtcp-mux", "a=rtcp-mux"),
                                              ("a=sendrecv", "no direction")])
def test_audio_that_aiortc_would_refuse_is_refused_before_a_peer_connection(
        line: str, reason: str) -> None:
    """aiortc refuses these too, but only after a peer connection was made for them."""
    assert reason in _refused(with_lines(CHROME_OFFER, line, ""))


def test_a_session_level_setup_counts_for_the_audio_section() -> None:
    offer = with_lines(CHROME_OFFER, "a=setup:actpass", "")
    check_offer(with_lines(offer, "a=extmap-allow-mixed", "a=setup:actpass"))
