"""Structural checks on an SDP offer before aiortc parses it or a peer connection exists.

apace receives exactly one audio track and talks over one data channel. Anything else in
an offer costs memory for nothing — an extra video track is decoded and queued forever if
no one reads it — so it is refused here with a reason, as are offers far larger than a
browser sends and candidates that would make the server resolve a name of the client's
choosing. Pure text checks: no I/O, tested without a loop.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from app.security.limits import Refused

MAX_LINES = 400
"""A browser's audio + data channel offer has 40-90 lines."""
MAX_LINE_CHARS = 2048
MAX_MEDIA_SECTIONS = 4
MAX_CANDIDATES = 32
"""Per media section; a multi-homed laptop gathers well under 16."""
AUDIO_CODECS = ("opus/48000", "pcmu/8000", "pcma/8000")
"""What aiortc can decode; an offer without one of them cannot give us audio."""
_LINE = re.compile(r"[a-z]=[^\x00-\x08\x0a-\x1f\x7f]*")
_MEDIA = re.compile(r"m=(\S+) (\d+)(?:/\d+)? (\S+)(?: \S+)+")
_DIRECTIONS = ("sendrecv", "sendonly", "recvonly", "inactive")
_SECURITY = ("fingerprint", "ice-ufrag", "ice-pwd")
"""Without them there is no ICE, or no way to know the DTLS peer is the one that offered
(aiortc takes an offer without a fingerprint)."""
_TRANSPORT = ("setup", "rtcp-mux")
"""aiortc refuses an offer without them (no DTLS role; RTP and RTCP on one port), but only
after a peer connection was made for it: refused here, nothing is made."""


@dataclass
class _Section:
    kind: str
    proto: str
    direction: str | None = None
    codecs: int = 0
    candidates: int = 0
    secured: set[str] = field(default_factory=set)
    """Which of fingerprint, ice-ufrag, ice-pwd, setup and rtcp-mux the section states."""


def check_offer(sdp: str) -> None:
    """Raise `Refused(400)` unless `sdp` is an offer apace will use: at most
    MAX_MEDIA_SECTIONS sections, exactly one audio section that sends us audio in a codec
    we decode, at most one data channel, nothing else."""
    lines = sdp.replace("\r\n", "\n").split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    if len(lines) > MAX_LINES:
        raise Refused(400, f"the SDP has {len(lines)} lines (limit {MAX_LINES})")
    if not lines or lines[0].strip() != "v=0":
        raise Refused(400, "the SDP must start with v=0")
    session = _Section(kind="session", proto="")
    sections: list[_Section] = []
    for number, line in enumerate(lines, 1):
        if len(line) > MAX_LINE_CHARS or not _LINE.fullmatch(line):
            raise Refused(400, f"SDP line {number} is not a `x=value` line under "
                               f"{MAX_LINE_CHARS} characters of text")
        if line.startswith("m="):
            sections.append(_media(line, number))
            if len(sections) > MAX_MEDIA_SECTIONS:
                raise Refused(400, f"the SDP has more than {MAX_MEDIA_SECTIONS} media sections")
        elif line.startswith("a="):
            _attribute(line[2:], sections[-1] if sections else session, number)
    _check_sections(sections, session)


def _media(line: str, number: int) -> _Section:
    match = _MEDIA.fullmatch(line)
    if match is None:
        raise Refused(400, f"SDP line {number} is not a valid m= line")
    return _Section(kind=match.group(1), proto=match.group(3))


def _attribute(value: str, section: _Section, number: int) -> None:
    """Note what matters of one `a=` line (in `section`, or the session's part)."""
    name, _, rest = value.partition(":")
    if name in _DIRECTIONS:
        section.direction = name
    elif name in _SECURITY + _TRANSPORT and (rest.strip() or name == "rtcp-mux"):
        section.secured.add(name)
    elif name == "rtpmap" and rest.lower().partition(" ")[2].startswith(AUDIO_CODECS):
        section.codecs += 1
    elif name == "candidate":
        section.candidates += 1
        if section.candidates > MAX_CANDIDATES:
            raise Refused(400, f"more than {MAX_CANDIDATES} ICE candidates in one section")
        _check_candidate(rest, number)


def _check_candidate(value: str, number: int) -> None:
    """A candidate's address must be an IP address or an mDNS (.local) name: any other
    name would make the server ask DNS about a name the client chose."""
    fields = value.split()
    if len(fields) < 8 or fields[6] != "typ":
        raise Refused(400, f"SDP line {number}: malformed ICE candidate")
    address = fields[4]
    if address.lower().endswith(".local"):
        return
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise Refused(400, f"SDP line {number}: ICE candidate address {address[:64]!r} is "
                           "neither an IP address nor a .local name") from None


def _check_sections(sections: list[_Section], session: _Section) -> None:
    audio = [s for s in sections if s.kind == "audio"]
    other = sorted({s.kind for s in sections} - {"audio", "application"})
    if other:
        raise Refused(400, f"the offer has {', '.join(other)} media: apace takes one audio "
                           "track and a data channel")
    if len(audio) != 1:
        raise Refused(400, f"the offer must have exactly one audio (m=audio) section, "
                           f"not {len(audio)}")
    if sum(s.kind == "application" for s in sections) > 1:
        raise Refused(400, "the offer has more than one data-channel section")
    direction = audio[0].direction or session.direction or "sendrecv"
    if direction not in ("sendrecv", "sendonly"):
        raise Refused(400, f"the audio section is {direction}: it must send the microphone")
    if not audio[0].codecs:
        raise Refused(400, "the audio section offers no codec apace decodes (Opus, PCMU, PCMA)")
    if missing := sorted(set(_SECURITY) - audio[0].secured - session.secured):
        raise Refused(400, f"the audio section has no {' / '.join(missing)}: WebRTC needs "
                           "ICE credentials and a DTLS fingerprint")
    if audio[0].direction is None:
        raise Refused(400, "the audio section states no direction: it needs a=sendrecv "
                           "(or a=sendonly)")
    if missing := sorted(set(_TRANSPORT) - audio[0].secured - session.secured):
        raise Refused(400, f"the audio section has no a={' / a='.join(missing)}: WebRTC "
                           "needs a DTLS role and RTCP multiplexed with RTP")
