"""HTTPS for LAN edge boxes: a self-signed certificate made on request, and bad TLS flags."""

from __future__ import annotations

import http.client
import ssl
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from app.process import REPO, ServerProcess

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def test_self_signed_serves_the_page_over_https(tmp_path: Path) -> None:
    server = ServerProcess("--self-signed", env={"XDG_CONFIG_HOME": str(tmp_path)})
    try:
        cert = tmp_path / "apace" / "tls" / "cert.pem"
        assert cert.exists() and (tmp_path / "apace" / "tls" / "key.pem").exists()
        context = ssl.create_default_context(cafile=str(cert))
        context.check_hostname = False  # the certificate names localhost, we dial 127.0.0.1
        with urllib.request.urlopen(server.url + "/", context=context, timeout=10) as page:
            assert page.status == 200 and b"apace" in page.read()
        with pytest.raises((OSError, http.client.HTTPException)):  # no plain HTTP
            urllib.request.urlopen(server.url.replace("https", "http") + "/", timeout=5)
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/nonexistent/key.pem"],
         "cannot load TLS certificate"),
        (["--tls-cert", "/nonexistent/cert.pem"], "go together"),
        (["--port", "70000"], "--port must be"),
        (["--jitter-hold", "9"], "--jitter-hold must be 0-8"),
        (["--caption-interval", "0"], "--caption-interval must be 0.2-10"),
    ],
)
def test_bad_serve_flags_are_clear_errors(args: list[str], message: str) -> None:
    result = subprocess.run([sys.executable, "-m", "app", "serve", *args], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
