"""Access rules as pure functions: Host names, same origin, session cookies, the token
file, the certificate, and what each bind needs before the server may start."""

from __future__ import annotations

import io
import stat
from pathlib import Path

import pytest

from app.security.access import (
    COOKIE_MAX_AGE_S,
    AccessPolicy,
    allowed_hosts,
    host_name,
    interface_addresses,
    same_origin,
)
from app.security.pairing import load_token, pairing_url, print_pairing, write_private
from app.security.tls import certificate_names, self_signed
from app.serve import Exposure, secure


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(
    ("header", "name"),
    [("127.0.0.1:8080", "127.0.0.1"), ("LocalHost", "localhost"), ("[::1]:8080", "::1"),
     ("box.lan.:443", "box.lan"), ("evil.example", "evil.example")],
)
def test_host_name_drops_port_brackets_case_and_trailing_dot(header: str, name: str) -> None:
    assert host_name(header) == name


@pytest.mark.parametrize(
    ("origin", "host", "same"),
    [
        ("http://127.0.0.1:8080", "127.0.0.1:8080", True),
        ("https://Box.lan", "box.lan:443", True),
        ("http://box.lan", "box.lan", True),
        ("http://[::1]:8080", "[::1]:8080", True),
        ("http://evil.example", "127.0.0.1:8080", False),
        ("http://127.0.0.1:3000", "127.0.0.1:8080", False),  # another app on the same host
        ("https://box.lan", "box.lan:80", False),
        ("null", "127.0.0.1:8080", False),
        ("file://", "127.0.0.1:8080", False),
        ("http://127.0.0.1:99999", "127.0.0.1:8080", False),
    ],
)
def test_same_origin_means_same_host_and_port(origin: str, host: str, same: bool) -> None:
    assert same_origin(origin, host) is same


def test_a_session_cookie_is_valid_until_it_expires_or_the_token_changes() -> None:
    policy = AccessPolicy(token="a" * 43)
    cookie = policy.cookie_value(issued=1_000_000)
    assert policy.cookie_valid(cookie, now=1_000_000 + 3600)
    assert not policy.cookie_valid(cookie, now=1_000_000 + COOKIE_MAX_AGE_S + 1)
    assert not AccessPolicy(token="b" * 43).cookie_valid(cookie, now=1_000_000)
    stamp, mac = cookie.split(".")
    assert not policy.cookie_valid(f"{int(stamp) + 1}.{mac}", now=1_000_000)  # re-dated
    assert not policy.cookie_valid("garbage", now=1_000_000)
    assert not AccessPolicy().cookie_valid(cookie)  # no token: no cookie means anything


def test_token_comparison() -> None:
    policy = AccessPolicy(token="s3cret-token-of-some-length")
    assert policy.token_valid("s3cret-token-of-some-length")
    assert not policy.token_valid("s3cret-token-of-some-lengtH")
    assert not AccessPolicy().token_valid("")


def test_the_token_is_made_private_kept_and_renewed(tmp_path: Path) -> None:
    token, made = load_token(tmp_path)
    assert made and len(token) >= 40
    assert _mode(tmp_path / "token") == 0o600
    assert load_token(tmp_path) == (token, False)
    renewed, made = load_token(tmp_path, renew=True)
    assert made and renewed != token


def test_a_token_file_readable_by_others_is_made_private(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("x" * 43)
    (tmp_path / "token").chmod(0o644)
    assert load_token(tmp_path) == ("x" * 43, False)
    assert _mode(tmp_path / "token") == 0o600


def test_private_files_are_never_group_or_world_readable(tmp_path: Path) -> None:
    import os

    old = os.umask(0)  # the most permissive umask: creation mode alone must protect it
    try:
        write_private(tmp_path / "key.pem", b"secret")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "key.pem") == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["key.pem"]  # no temporary left


def test_allowed_hosts_for_loopback_a_wildcard_and_extra_names() -> None:
    local = allowed_hosts("127.0.0.1")
    assert {"localhost", "127.0.0.1", "::1"} <= local
    assert "evil.example" not in local
    everywhere = allowed_hosts("0.0.0.0", ["Box.Example.", "proxy:8443"])
    assert set(interface_addresses()) <= everywhere
    assert {"box.example", "proxy"} <= everywhere


def test_the_self_signed_certificate_is_reused_only_while_it_names_every_host(
        tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path, ["localhost", "127.0.0.1"])
    assert _mode(key) == 0o600
    assert certificate_names(cert) == {"localhost", "127.0.0.1"}
    first = cert.read_bytes()
    self_signed(tmp_path, ["127.0.0.1"])
    assert cert.read_bytes() == first  # still names what is asked
    self_signed(tmp_path, ["localhost", "127.0.0.1", "192.0.2.7", "box.lan"])
    assert certificate_names(cert) == {"localhost", "127.0.0.1", "192.0.2.7", "box.lan"}


def test_loopback_needs_no_token(tmp_path: Path) -> None:
    tls, policy, pairing = secure(Exposure(host="127.0.0.1", port=8080), tmp_path)
    assert tls is None and policy.token is None and pairing is None
    assert not (tmp_path / "token").exists()


def test_beyond_loopback_plain_http_refuses_to_start(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--self-signed"):
        secure(Exposure(host="0.0.0.0", port=8080), tmp_path)
    with pytest.raises(ValueError, match="--insecure-http"):
        secure(Exposure(host="192.0.2.7", port=8080), tmp_path)


def test_beyond_loopback_a_token_is_made_and_its_link_shown_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exposure = Exposure(host="0.0.0.0", port=8443, self_signed=True)
    tls, policy, pairing = secure(exposure, tmp_path)
    assert tls is not None and policy.secure_cookie
    token = (tmp_path / "token").read_text().strip()
    assert policy.token == token
    assert pairing is not None and pairing.startswith("https://") and pairing.endswith(
        f":8443/pair#{token}")
    again = secure(exposure, tmp_path)
    assert again[1].token == token and again[2] is None
    assert "--show-pairing" in capsys.readouterr().out
    assert secure(Exposure(host="0.0.0.0", port=8443, self_signed=True, show_pairing=True),
                  tmp_path)[2] == pairing


def test_require_pairing_asks_for_a_token_on_loopback_too(tmp_path: Path) -> None:
    _, policy, pairing = secure(Exposure(host="127.0.0.1", port=9000, require_pairing=True),
                                tmp_path)
    assert policy.token is not None
    assert pairing == pairing_url("http", "127.0.0.1", 9000, policy.token)


def test_the_pairing_link_is_printed_without_segno() -> None:
    out = io.StringIO()
    print_pairing("https://192.0.2.7:8080/pair#t0ken", out)
    assert "https://192.0.2.7:8080/pair#t0ken" in out.getvalue()
