"""Running the server: loopback ICE, access and pairing, TLS, start-up, drain, shutdown.

SIGTERM (or Ctrl+C) drains: new offers get 503 with Retry-After while the socket stays
open, every page is told the server is going away, replies in flight finish (within
`ServerOptions.drain_timeout_s`), then everything closes. A second signal stops at once.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import ssl
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from app.appkeys import SESSIONS
from app.runtime import Settings, build_engine, chosen_models
from app.security.access import (
    AccessPolicy,
    allowed_hosts,
    is_loopback,
    is_wildcard,
    lan_address,
)
from app.security.pairing import TOKEN_FILE, load_token, pairing_url, print_pairing
from app.security.tls import self_signed, tls_context
from app.server import ServerOptions, Sessions, make_app
from pipeline.engine import Engine

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
KEEPALIVE_S = 5.0
"""An idle keep-alive connection is closed after this long, and so is a new connection
that has not sent a whole request head by then (aiohttp's default is an hour). Each one
holds a socket and a handler task: a client that opens connections and sends nothing, or
half a header (slowloris), would otherwise hold them that long. 5 s is what Node.js,
uvicorn and Apache use; the page's few requests come well within it, and a browser opens
a new connection when an idle one was closed. (Was 75 s: 7 half-open connections left
by a probe still held 7 tasks and 7 fds a minute later; docs/security.md.)"""
LINGER_S = 2.0
"""After refusing a request before its body was read, how long the server goes on reading
(and dropping) the rest so the client sees the answer (aiohttp's default is 10 s)."""
SHUTDOWN_TIMEOUT_S = 3.0
"""After the drain, how long aiohttp waits for requests still in flight (a websocket
that does not answer its close frame) before it drops them."""

__all__ = ["LOOPBACK_HOSTS", "Exposure", "secure", "self_signed", "serve", "serve_engine",
           "tls_context", "use_loopback_candidates"]


def use_loopback_candidates() -> None:
    """Make aioice offer 127.0.0.1, which it never does by itself: a browser
    on the same machine, or one in a network namespace holding only `lo`, can then reach
    the server's media socket."""
    import aioice.ice

    aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"] if use_ipv4 else []


async def serve(
    settings: Settings, options: ServerOptions, *, host: str, port: int,
    loopback: bool, tls: ssl.SSLContext | None, access: AccessPolicy | None = None,
    pairing: str | None = None,
) -> None:
    """Load and warm every model, then serve until SIGINT/SIGTERM (see `serve_engine`)."""
    located = chosen_models(settings)
    if loopback:
        use_loopback_candidates()
    print("apace: loading models ...", flush=True)
    engine, _ = await asyncio.to_thread(build_engine, settings, located)
    try:
        await engine.warm()
        await serve_engine(engine, options, host=host, port=port, tls=tls, access=access,
                           pairing=pairing)
    finally:
        engine.close()


async def serve_engine(
    engine: Engine, options: ServerOptions, *, host: str, port: int,
    tls: ssl.SSLContext | None, access: AccessPolicy | None = None, pairing: str | None = None,
) -> None:
    """Serve `engine` on host:port until a signal, then drain and close. `pairing` is
    the pairing link to print (None: none to print)."""
    app = make_app(engine, options, access)
    # auto_decompress off: a compressed body reaches the handler as it came, to be refused
    # there (415) — never inflated by the HTTP parser first.
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=SHUTDOWN_TIMEOUT_S,
                           auto_decompress=False, keepalive_timeout=KEEPALIVE_S,
                           lingering_time=LINGER_S)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, ssl_context=tls)
        try:
            await site.start()
        except OSError as error:
            raise ValueError(f"cannot listen on {host}:{port}: {error.strerror}") from None
        if pairing is not None:
            print_pairing(pairing)
        scheme = "https" if tls else "http"
        shown = "localhost" if host in LOOPBACK_HOSTS and tls else host
        shown = "127.0.0.1" if shown in ("0.0.0.0", "::", "") else shown
        shown = f"[{shown}]" if ":" in shown else shown
        print(f"apace ready: {scheme}://{shown}:{port}/  (dashboard: /dashboard)", flush=True)
        await _until_signalled(app[SESSIONS])
    finally:
        await runner.cleanup()


async def _until_signalled(sessions: Sessions) -> None:
    """Wait for SIGINT/SIGTERM, then drain; a second signal cuts the drain short."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    draining: list[asyncio.Task[None]] = []

    def on_signal() -> None:
        if draining:
            draining[0].cancel()
        stop.set()

    signals = (signal.SIGINT, signal.SIGTERM)
    for sig in signals:
        loop.add_signal_handler(sig, on_signal)
    try:
        await stop.wait()
        print(f"apace: draining {len(sessions.live)} session(s), at most "
              f"{sessions.options.drain_timeout_s:g} s (signal again to stop now)", flush=True)
        draining.append(asyncio.create_task(sessions.drain(), name="drain"))
        await asyncio.wait(draining)  # a second signal cancels it; that is not an error
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
        for task in draining:
            task.cancel()  # (done already, unless this wait itself was cancelled)


@dataclass(frozen=True, kw_only=True)
class Exposure:
    """How far the server is exposed, from the serve flags."""

    host: str
    port: int
    allow_hosts: tuple[str, ...] = ()
    tls_cert: Path | None = None
    tls_key: Path | None = None
    self_signed: bool = False
    insecure_http: bool = False
    """Serve plain HTTP beyond loopback anyway."""
    require_pairing: bool = False
    """Pairing on loopback too."""
    show_pairing: bool = False
    new_token: bool = False


def secure(exposure: Exposure, config_dir: Path) -> tuple[ssl.SSLContext | None, AccessPolicy,
                                                          str | None]:
    """TLS, the access policy, and the pairing link to print (None: none to print), for
    `exposure`; raises ValueError with the fix when it would be unsafe. Loopback needs
    nothing; beyond it, TLS (unless --insecure-http) and a token, kept in `config_dir`."""
    local = is_loopback(exposure.host)
    hosts = allowed_hosts(exposure.host, exposure.allow_hosts)
    if not local and not (exposure.tls_cert or exposure.self_signed or exposure.insecure_http):
        raise ValueError(
            f"--host {exposure.host} serves beyond this machine: add --self-signed (or "
            "--tls-cert/--tls-key), or --insecure-http to serve plain HTTP anyway (browsers "
            "then refuse the microphone, and the pairing token crosses the network in clear)")
    tls = None
    if not local and exposure.insecure_http and not (exposure.tls_cert or exposure.self_signed):
        print("apace: WARNING: plain HTTP beyond loopback (--insecure-http): browsers refuse "
              "the microphone, and the pairing token and cookie cross the network in clear",
              flush=True)
    if exposure.tls_cert and exposure.tls_key:
        tls = tls_context(exposure.tls_cert, exposure.tls_key)
    elif exposure.self_signed:
        cert, key = self_signed(config_dir / "tls", hosts)
        print(f"apace: self-signed certificate {cert}", flush=True)
        tls = tls_context(cert, key)
    if local and not exposure.require_pairing:
        return tls, AccessPolicy(hosts=hosts, secure_cookie=tls is not None), None
    token, made = load_token(config_dir, renew=exposure.new_token)
    pairing = None
    if made or exposure.show_pairing:
        address = (lan_address() or "127.0.0.1") if is_wildcard(exposure.host) else exposure.host
        pairing = pairing_url("https" if tls else "http", address, exposure.port, token)
    else:
        print(f"apace: pairing required (token in {config_dir / TOKEN_FILE}); paired browsers "
              "stay paired. --show-pairing prints the link again; --new-token unpairs all.",
              flush=True)
    return tls, AccessPolicy(hosts=hosts, token=token, secure_cookie=tls is not None), pairing
