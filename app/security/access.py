"""Who may use the server: a Host allowlist, same-origin requests, and a credential.

Three independent checks, in one middleware so that every route — including ones added
later, such as another websocket — is covered unless it is listed as open:

- **Host** must name this server (a bound address, this machine's name, or --allow-host).
  A page on evil.example whose name is re-pointed at the box (DNS rebinding) sends
  `Host: evil.example` and is refused, on loopback too.
- **Origin**, when a browser sends one (always, on a POST or a websocket), must be the
  server's own origin: another site cannot open a microphone session or read the
  dashboard feed through the user's browser (cross-site websocket hijacking).
- **A credential** when the policy has a token (any non-loopback bind): the session
  cookie that pairing sets, or `Authorization: Bearer TOKEN` for scripts and Prometheus.
  Loopback stays zero-config: there the token is None and only Host and Origin apply.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from app.security.limits import Refused

COOKIE = "apace_session"
COOKIE_MAX_AGE_S = 90 * 24 * 3600
"""A paired browser stays paired this long (a new token — `--new-token` — revokes all)."""
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
OPEN_PATHS = frozenset({"/", "/pair", "/healthz", "/favicon.ico"})
"""Paths anyone who may reach the server may use: the page, pairing, liveness.
Everything else — /offer, /api/*, /metrics, /ws/*, /dashboard, whatever is added — needs
the credential. `/healthz?detail` (task and thread names) needs it too."""
OPEN_PREFIXES = ("/static/",)


@dataclass(frozen=True, kw_only=True)
class AccessPolicy:
    hosts: frozenset[str] = LOOPBACK_NAMES
    """Lower-case names and addresses the Host header may carry (any port)."""
    token: str | None = None
    """The shared secret; None (loopback) means no credential is asked for."""
    secure_cookie: bool = False
    """Mark the session cookie Secure (served over TLS)."""

    def cookie_value(self, issued: float | None = None) -> str:
        """A session cookie: when it was issued and an HMAC of that under the token, so
        the server keeps no session table and a new token revokes every cookie."""
        assert self.token is not None
        stamp = str(int(time.time() if issued is None else issued))
        return f"{stamp}.{_sign(self.token, stamp)}"

    def cookie_valid(self, value: str, now: float | None = None) -> bool:
        if self.token is None:
            return False
        stamp, _, mac = value.partition(".")
        if not stamp.isdigit() or not hmac.compare_digest(mac, _sign(self.token, stamp)):
            return False
        age = (time.time() if now is None else now) - int(stamp)
        return -300 <= age <= COOKIE_MAX_AGE_S  # a little clock skew is fine

    def token_valid(self, offered: str) -> bool:
        return self.token is not None and hmac.compare_digest(offered.encode(),
                                                              self.token.encode())


def _sign(token: str, stamp: str) -> str:
    return hmac.new(token.encode(), f"apace-session:{stamp}".encode(), hashlib.sha256).hexdigest()


def host_name(header: str) -> str:
    """The host part of a Host header or URL netloc: lower case, no port, no brackets,
    no trailing dot."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    if header.count(":") == 1:
        header = header.partition(":")[0]
    return header.rstrip(".")


def same_origin(origin: str, host_header: str) -> bool:
    """Whether `origin` (a browser's Origin header) is the origin the request was sent
    to, named by its Host header: same host and port (the scheme's default port when
    either leaves it out). `null` (a sandboxed frame, a file://) is nobody's origin."""
    try:
        parts = urlsplit(origin.strip())
        origin_port = parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    default = 443 if parts.scheme == "https" else 80
    try:
        host = urlsplit(f"//{host_header.strip()}")
        host_port = host.port
    except ValueError:
        return False
    return (parts.hostname.rstrip(".") == host_name(host_header)
            and (origin_port or default) == (host_port or default))


def needs_credential(request: web.Request) -> bool:
    path = request.path
    if path.startswith(OPEN_PREFIXES):
        return False
    return path not in OPEN_PATHS or (path == "/healthz" and "detail" in request.query)


def credential_ok(request: web.Request, policy: AccessPolicy) -> bool:
    cookie = request.cookies.get(COOKIE)
    if cookie is not None and policy.cookie_valid(cookie):
        return True
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and policy.token_valid(value.strip())


def check(request: web.Request, policy: AccessPolicy) -> Refused | None:
    """Why `request` may not proceed (a 400/401/403 `Refused`), or None. Reusable by any
    handler that needs it before the middleware's verdict (the middleware calls it)."""
    host = request.headers.get("Host")
    if not host:
        return Refused(400, "a Host header is required", kind="access")
    if host_name(host) not in policy.hosts:
        return Refused(403, f"this server does not answer to the name {host_name(host)[:64]!r}"
                            " (add it with --allow-host)", kind="access")
    origin = request.headers.get("Origin")
    if origin is not None and not same_origin(origin, host):
        return Refused(403, f"cross-origin request from {origin[:80]!r} refused", kind="access")
    if policy.token is not None and needs_credential(request) and not credential_ok(request,
                                                                                    policy):
        return Refused(401, "this device is not paired with the server: open the pairing "
                            "link that `apace serve` printed (or scan its QR code)",
                       {"WWW-Authenticate": 'Bearer realm="apace"'}, kind="access")
    return None


def middleware(policy: AccessPolicy) -> Any:
    """The aiohttp middleware applying `check` to every request, websockets included
    (refused before the upgrade, with an HTTP status)."""

    @web.middleware
    async def access(request: web.Request, handler: Any) -> web.StreamResponse:
        refused = check(request, policy)
        if refused is not None:
            raise refused
        response: web.StreamResponse = await handler(request)
        return response

    return access


async def security_headers(_request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: no other site may frame the page (a framed Talk button is a
    click away from a microphone session that passes every origin check)."""
    response.headers.setdefault("X-Frame-Options", "DENY")
    response.headers.setdefault("Content-Security-Policy", "frame-ancestors 'none'")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "same-origin")


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    return host in ("", "0.0.0.0", "::")


def interface_addresses() -> list[str]:
    """This machine's addresses on every interface (via ifaddr, which aioice uses too)."""
    import ifaddr

    found: list[str] = []
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            address = ip.ip if isinstance(ip.ip, str) else ip.ip[0]
            found.append(str(address).partition("%")[0].lower())
    return found


def lan_address() -> str | None:
    """The first non-loopback IPv4 address, for the pairing link of a wildcard bind."""
    for address in interface_addresses():
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            continue
        if ip.version == 4 and not ip.is_loopback and not ip.is_link_local:
            return address
    return None


def allowed_hosts(bind: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The names a Host header may carry for a server bound to `bind`: loopback names,
    this machine's name (and its mDNS .local name), the bound address — every interface's
    address for a wildcard bind — and `extra` (--allow-host)."""
    machine = socket.gethostname().lower()
    names = set(LOOPBACK_NAMES) | {machine, f"{machine}.local"}
    names |= set(interface_addresses()) if is_wildcard(bind) else {host_name(bind)}
    names |= {host_name(name) for name in extra if name.strip()}
    return frozenset(names)
