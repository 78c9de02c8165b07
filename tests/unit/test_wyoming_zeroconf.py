"""The optional mDNS announcement (`--zeroconf`): registered as _wyoming._tcp while the
server runs, withdrawn after; a clear error without the package. No network: the
zeroconf package is replaced by a recorder."""

from __future__ import annotations

import socket
import sys
import types
from typing import Any, ClassVar

import pytest

from app.transports.wyoming.zeroconf import SERVICE, ZeroconfMissing, announce, service_name


class Recorder:
    calls: ClassVar[list[tuple[str, Any]]] = []

    class AsyncServiceInfo:
        def __init__(self, kind: str, name: str, *, port: int, addresses: list[bytes]) -> None:
            self.kind, self.name, self.port, self.addresses = kind, name, port, addresses

    class AsyncZeroconf:
        async def async_register_service(self, info: Any) -> None:
            Recorder.calls.append(("register", info))

        async def async_unregister_service(self, info: Any) -> None:
            Recorder.calls.append(("unregister", info))

        async def async_close(self) -> None:
            Recorder.calls.append(("close", None))


async def test_the_server_is_announced_while_running(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("zeroconf.asyncio")
    fake.AsyncServiceInfo = Recorder.AsyncServiceInfo  # type: ignore[attr-defined]
    fake.AsyncZeroconf = Recorder.AsyncZeroconf  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "zeroconf", types.ModuleType("zeroconf"))
    monkeypatch.setitem(sys.modules, "zeroconf.asyncio", fake)
    Recorder.calls = []
    async with announce("kitchen box", 10300, "192.168.1.5"):
        assert [kind for kind, _ in Recorder.calls] == ["register"]
    assert [kind for kind, _ in Recorder.calls] == ["register", "unregister", "close"]
    info = Recorder.calls[0][1]
    assert info.kind == SERVICE == "_wyoming._tcp.local."
    assert info.name == "kitchen box._wyoming._tcp.local." and info.port == 10300
    assert info.addresses == [socket.inet_aton("192.168.1.5")]


async def test_without_the_package_the_flag_says_how_to_get_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "zeroconf", None)
    monkeypatch.setitem(sys.modules, "zeroconf.asyncio", None)
    with pytest.raises(ZeroconfMissing, match="pip install zeroconf"):
        async with announce("apace", 10300, "127.0.0.1"):
            pass


def test_instance_names_are_made_safe_for_mdns() -> None:
    assert service_name("a.b/c") == "a-b-c._wyoming._tcp.local."
    assert service_name("") == "apace._wyoming._tcp.local."
    assert len(service_name("x" * 200).split(".")[0]) == 63
