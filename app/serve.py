"""Running the server: loopback ICE, TLS (given or self-signed), start-up and shutdown."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import logging
import signal
import socket
import ssl
from pathlib import Path

from aiohttp import web

from app.runtime import Settings, build_engine
from app.server import ServerOptions, make_app

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}


def use_loopback_candidates() -> None:
    """Make aioice offer 127.0.0.1, which it never does by itself (DESIGN.md): a browser
    on the same machine, or one in a network namespace holding only `lo`, can then reach
    the server's media socket."""
    import aioice.ice

    aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"] if use_ipv4 else []


def self_signed(folder: Path, host: str) -> tuple[Path, Path]:
    """A self-signed certificate for localhost, this host's name and `host` (kept and
    reused; browsers show a warning once, then allow the microphone over HTTPS)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.DNSName(socket.gethostname())]
    for address in {"127.0.0.1", host} - {"0.0.0.0", "::", ""}:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(address)))
        except ValueError:
            names.append(x509.DNSName(address))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "apace")])
    today = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(today - datetime.timedelta(days=1))
        .not_valid_after(today + datetime.timedelta(days=825))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as error:
        raise ValueError(f"cannot load TLS certificate {cert} / key {key}: {error}") from None
    return context


async def serve(
    settings: Settings, options: ServerOptions, *, host: str, port: int,
    loopback: bool, tls: ssl.SSLContext | None,
) -> None:
    """Load and warm every model, then serve until SIGINT/SIGTERM."""
    if loopback:
        use_loopback_candidates()
    print("apace: loading models ...", flush=True)
    engine, _ = await asyncio.to_thread(build_engine, settings)
    await engine.warm()
    runner = web.AppRunner(make_app(engine, options), handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, ssl_context=tls)
        try:
            await site.start()
        except OSError as error:
            raise ValueError(f"cannot listen on {host}:{port}: {error.strerror}") from None
        scheme = "https" if tls else "http"
        shown = "localhost" if host in LOOPBACK_HOSTS and tls else host
        shown = "127.0.0.1" if shown == "0.0.0.0" else shown
        print(f"apace ready: {scheme}://{shown}:{port}/  (dashboard: /dashboard)", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()
        engine.close()
