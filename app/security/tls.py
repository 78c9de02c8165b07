"""TLS for a LAN box: the user's certificate, or a self-signed one made on request.

The self-signed certificate names every name the server will be reached by (for a
wildcard bind: every interface address). It is kept and reused while it still names them
all and is not near expiry; a changed --host or a new address makes a new one. The key
is written with mode 0600 from creation, never chmod'ed after the fact.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Iterable
from pathlib import Path

from app.security.pairing import write_private

VALID_DAYS = 825
"""The longest validity Apple platforms accept for a TLS server certificate."""
RENEW_DAYS = 30


def certificate_names(cert_path: Path) -> set[str] | None:
    """The DNS names and IP addresses `cert_path` is valid for, or None when it is
    unreadable or expires within RENEW_DAYS."""
    from cryptography import x509

    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (OSError, ValueError, x509.ExtensionNotFound):
        return None
    soon = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=RENEW_DAYS)
    if cert.not_valid_after_utc < soon:
        return None
    return ({name.lower() for name in names.get_values_for_type(x509.DNSName)}
            | {str(address) for address in names.get_values_for_type(x509.IPAddress)})


def self_signed(folder: Path, names: Iterable[str]) -> tuple[Path, Path]:
    """A certificate for `names` (DNS names or IP addresses) in `folder`: the kept one if
    it names them all, else a new one. Returns (cert.pem, key.pem)."""
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    wanted = {name.lower() for name in names if name}
    if key_path.exists() and (have := certificate_names(cert_path)) is not None \
            and wanted <= have:
        return cert_path, key_path
    folder.mkdir(parents=True, exist_ok=True)
    key_pem, cert_pem = _make(sorted(wanted))
    write_private(key_path, key_pem)
    write_private(cert_path, cert_pem)  # (a certificate is public; 0600 does no harm)
    return cert_path, key_path


def _make(names: list[str]) -> tuple[bytes, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    alternatives: list[x509.GeneralName] = []
    for name in names:
        try:
            alternatives.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alternatives.append(x509.DNSName(name))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "apace")])
    today = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(today - datetime.timedelta(days=1))
        .not_valid_after(today + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return key_pem, cert.public_bytes(serialization.Encoding.PEM)


def tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as error:
        raise ValueError(f"cannot load TLS certificate {cert} / key {key}: {error}") from None
    return context
