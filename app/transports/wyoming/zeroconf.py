"""Announcing the Wyoming server on the LAN (mDNS `_wyoming._tcp`), so Home Assistant
discovers it by itself. Optional: needs the `zeroconf` package (`pip install zeroconf`).
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import AsyncIterator

log = logging.getLogger(__name__)

SERVICE = "_wyoming._tcp.local."


class ZeroconfMissing(ValueError):
    """--zeroconf without the package (a usage error: the message says how to fix it)."""


def service_name(name: str) -> str:
    """The instance name as mDNS wants it: no dots, at most 63 bytes."""
    clean = "".join(c if c.isalnum() or c in "-_ " else "-" for c in name).strip() or "apace"
    return f"{clean[:63]}.{SERVICE}"


@contextlib.asynccontextmanager
async def announce(name: str, port: int, address: str) -> AsyncIterator[None]:
    """Announce `name` at `address`:`port` while inside; withdrawn on exit."""
    try:
        from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf
    except ImportError:
        raise ZeroconfMissing("--zeroconf needs the zeroconf package: pip install zeroconf"
                              ) from None
    info = AsyncServiceInfo(SERVICE, service_name(name), port=port,
                            addresses=[socket.inet_aton(address)])
    zc = AsyncZeroconf()
    try:
        await zc.async_register_service(info)
        log.info("announced %s on %s:%d", info.name, address, port)
        yield
    finally:
        with contextlib.suppress(Exception):  # shutting down: nothing left to tell
            await zc.async_unregister_service(info)
        await zc.async_close()
