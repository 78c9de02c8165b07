"""SDP offers for the tests: what browsers and aiortc send, and ways to break them."""

from __future__ import annotations

from aiortc import RTCConfiguration, RTCPeerConnection
from aiortc.mediastreams import AudioStreamTrack, VideoStreamTrack

FINGERPRINT = ("a=fingerprint:sha-256 43:FB:EE:74:18:74:EC:D8:C7:D7:6E:C4:B4:80:91:BE:4E:48:17:"
               "DF:91:2F:8A:4D:6E:76:9B:59:7A:CE:40:75")

CHROME_OFFER = "\r\n".join([
    "v=0",
    "o=- 4611731400430051336 2 IN IP4 127.0.0.1",
    "s=-",
    "t=0 0",
    "a=group:BUNDLE 0 1",
    "a=extmap-allow-mixed",
    "a=msid-semantic: WMS 6a8a0b2c",
    "m=audio 54321 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126",
    "c=IN IP4 127.0.0.1",
    "a=rtcp:9 IN IP4 0.0.0.0",
    "a=candidate:1467250027 1 udp 2122260223 127.0.0.1 54321 typ host generation 0 network-id 1",
    "a=candidate:3857149213 1 udp 2122194687 5e3a1f2c-8b1d-4c3e-9f7a-1b2c3d4e5f60.local 54322"
    " typ host generation 0 network-id 2",
    "a=ice-ufrag:abcd",
    "a=ice-pwd:abcdefghijklmnopqrstuvwx",
    "a=ice-options:trickle",
    FINGERPRINT,
    "a=setup:actpass",
    "a=mid:0",
    "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level",
    "a=sendrecv",
    "a=msid:6a8a0b2c 1b2c3d4e",
    "a=rtcp-mux",
    "a=rtpmap:111 opus/48000/2",
    "a=rtcp-fb:111 transport-cc",
    "a=fmtp:111 minptime=10;useinbandfec=1",
    "a=rtpmap:63 red/48000/2",
    "a=fmtp:63 111/111",
    "a=rtpmap:9 G722/8000",
    "a=rtpmap:0 PCMU/8000",
    "a=rtpmap:8 PCMA/8000",
    "a=rtpmap:13 CN/8000",
    "a=rtpmap:110 telephone-event/48000",
    "a=ssrc:1234567 cname:abcdefgh",
    "m=application 54321 UDP/DTLS/SCTP webrtc-datachannel",
    "c=IN IP4 127.0.0.1",
    "a=candidate:1467250027 1 udp 2122260223 127.0.0.1 54321 typ host generation 0 network-id 1",
    "a=ice-ufrag:abcd",
    "a=ice-pwd:abcdefghijklmnopqrstuvwx",
    "a=ice-options:trickle",
    FINGERPRINT,
    "a=setup:actpass",
    "a=mid:1",
    "a=sctp-port:5000",
    "a=max-message-size:262144",
    "",
])

VIDEO_SECTION = "\r\n".join([
    "m=video 54321 UDP/TLS/RTP/SAVPF 96",
    "c=IN IP4 127.0.0.1",
    "a=mid:2",
    "a=sendrecv",
    "a=rtpmap:96 VP8/90000",
    "",
])


def audio_section(mid: int, direction: str = "sendrecv", codec: str = "opus/48000/2") -> str:
    return "\r\n".join([
        "m=audio 54321 UDP/TLS/RTP/SAVPF 111",
        "c=IN IP4 127.0.0.1",
        f"a=mid:{mid}",
        f"a={direction}",
        f"a=rtpmap:111 {codec}",
        "",
    ])


def with_lines(sdp: str, old: str, new: str) -> str:
    """`sdp` with the line `old` replaced by `new` (which may be several lines, or none)."""
    lines = sdp.split("\r\n")
    index = lines.index(old)
    return "\r\n".join([*lines[:index], *([new] if new else []), *lines[index + 1:]])


async def make_offer(video: bool = False) -> str:
    """A real offer from aiortc: audio (and video) plus a data channel."""
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    pc.addTrack(AudioStreamTrack())
    if video:
        pc.addTrack(VideoStreamTrack())
    pc.createDataChannel("apace")
    await pc.setLocalDescription(await pc.createOffer())
    sdp: str = pc.localDescription.sdp
    await pc.close()
    return sdp
