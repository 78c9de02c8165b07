"""Every access rule over real loopback HTTP and websockets: Host allowlist (DNS
rebinding), same origin on state-changing routes and websockets (CSRF, cross-site
websocket hijacking), and pairing: token → HttpOnly SameSite=Strict cookie → access.

In-process server with scripted models (tests.fake_server); one real
`apace serve` child checks the printed pairing link and the token file."""

from __future__ import annotations

import stat
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from http.cookies import SimpleCookie
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from app.process import REPO
from app.security.access import COOKIE, AccessPolicy
from app.server import make_app
from tests.fake_server import FakeServer, fake_engine

pytestmark = pytest.mark.timeout(60)

TOKEN = "pairing-token-for-tests-0123456789abcdefghij"
Http = TestClient[web.Request, web.Application]
PROTECTED = ["/api/turns", "/api/stats", "/metrics", "/dashboard", "/healthz?detail",
             "/v1/later"]
OPEN = ["/", "/static/app.js", "/healthz", "/pair"]


async def _future_route(_request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def _client(policy: AccessPolicy) -> Http:
    app = make_app(fake_engine(), access=policy)
    app.router.add_get("/v1/later", _future_route)  # a route added later is covered too
    client: Http = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()
    return client


@pytest.fixture
async def paired() -> AsyncIterator[Http]:
    """A server that needs pairing (as any non-loopback bind does)."""
    client = await _client(AccessPolicy(token=TOKEN))
    yield client
    await client.close()


@pytest.fixture
async def loopback() -> AsyncIterator[Http]:
    """Loopback's zero-config policy: no credential, but Host and Origin still apply."""
    client = await _client(AccessPolicy())
    yield client
    await client.close()


async def _status(client: Http, path: str, **headers: str) -> tuple[int, dict[str, str]]:
    async with client.get(path, headers=headers, allow_redirects=False) as response:
        body = await response.json() if response.content_type == "application/json" else {}
        return response.status, body


async def test_without_a_credential_everything_but_the_page_is_refused(paired: Http) -> None:
    for path in PROTECTED:
        status, body = await _status(paired, path)
        assert status == 401, path
        assert "not paired" in body["error"], path
    for path in OPEN:
        assert (await _status(paired, path))[0] == 200, path
    async with paired.post("/offer", json={"sdp": "v=0", "type": "offer"}) as response:
        assert response.status == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    for socket in ("/ws/dashboard", "/v1/realtime"):
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await paired.ws_connect(socket)
        assert refused.value.status == 401, socket


async def test_a_bearer_token_opens_the_api_and_metrics(paired: Http) -> None:
    for path in PROTECTED:
        assert (await _status(paired, path, Authorization=f"Bearer {TOKEN}"))[0] == 200, path
    assert (await _status(paired, "/metrics", Authorization=f"Bearer {TOKEN}x"))[0] == 401
    assert (await _status(paired, "/metrics", Authorization=f"Basic {TOKEN}"))[0] == 401


async def test_pairing_trades_the_token_for_a_strict_httponly_cookie(paired: Http) -> None:
    async with paired.post("/pair", json={"token": TOKEN + "x"}) as wrong:
        assert wrong.status == 403 and "wrong pairing token" in (await wrong.json())["error"]
        assert COOKIE not in wrong.cookies
    async with paired.post("/pair", json={"token": TOKEN}) as right:
        assert right.status == 200
        header = right.headers["Set-Cookie"]
    morsel = SimpleCookie(header)[COOKIE]
    assert morsel["httponly"] and morsel["samesite"] == "Strict" and morsel["path"] == "/"
    assert int(morsel["max-age"]) > 0
    for path in PROTECTED:  # the test client keeps the cookie, as a browser does
        assert (await _status(paired, path))[0] == 200, path
    async with paired.ws_connect("/ws/dashboard") as ws:
        assert (await ws.receive_json(timeout=5))["type"] == "stats"
    paired.session.cookie_jar.clear()
    tampered = morsel.value[:-1] + ("0" if morsel.value[-1] != "0" else "1")
    assert (await _status(paired, "/api/turns", Cookie=f"{COOKIE}={tampered}"))[0] == 401
    assert (await _status(paired, "/api/turns", Cookie=f"{COOKIE}={morsel.value}"))[0] == 200


async def test_a_foreign_origin_is_refused_even_with_a_credential(paired: Http) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert paired.port is not None
    for origin in ("http://evil.example", "null", f"http://127.0.0.1:{paired.port + 1}"):
        async with paired.post("/offer", json={}, headers={**bearer, "Origin": origin}) as r:
            assert r.status == 403, origin
            assert "cross-origin" in (await r.json())["error"]
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await paired.ws_connect("/ws/dashboard", headers={**bearer, "Origin": origin})
        assert refused.value.status == 403, origin
    async with paired.post("/pair", json={"token": TOKEN},
                           headers={"Origin": "http://evil.example"}) as r:
        assert r.status == 403  # nor can another site pair the browser with its own token
    same = f"http://127.0.0.1:{paired.port}"
    async with paired.ws_connect("/ws/dashboard", headers={**bearer, "Origin": same}) as ws:
        assert (await ws.receive_json(timeout=5))["type"] == "stats"


async def test_loopback_needs_no_credential_but_checks_origin(loopback: Http) -> None:
    for path in PROTECTED + OPEN:
        assert (await _status(loopback, path))[0] == 200, path
    async with loopback.post("/offer", json={}, headers={"Origin": "http://evil.example"}) as r:
        assert r.status == 403
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await loopback.ws_connect("/ws/dashboard", headers={"Origin": "http://evil.example"})
    assert refused.value.status == 403


async def test_a_foreign_host_name_is_refused_everywhere(loopback: Http) -> None:
    """DNS rebinding: evil.example re-pointed at this box still says `Host: evil.example`."""
    for path in PROTECTED + OPEN:
        status, body = await _status(loopback, path, Host="evil.example")
        assert status == 403, path
        assert "evil.example" in body["error"]
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await loopback.ws_connect("/ws/dashboard", headers={"Host": "evil.example"})
    assert refused.value.status == 403
    assert (await _status(loopback, "/healthz", Host=f"localhost:{loopback.port}"))[0] == 200


async def test_no_other_site_may_frame_the_page(loopback: Http) -> None:
    async with loopback.get("/") as response:
        assert response.headers["X-Frame-Options"] == "DENY"
        assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]


async def test_refusals_are_counted_in_the_metrics(paired: Http) -> None:
    await _status(paired, "/api/turns")
    await _status(paired, "/api/turns", Host="evil.example")
    async with paired.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}) as r:
        text = await r.text()
    assert 'apace_refused_requests_total{reason="access"} 2.0' in text


def test_the_served_command_prints_the_pairing_link_of_its_private_token(
        tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    server = FakeServer("--require-pairing", env=env)
    try:
        token_file = tmp_path / "apace" / "token"
        token = token_file.read_text().strip()
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert f"{server.url}/pair#{token}" in server.log.decode()
        assert _get_status(server.url + "/api/turns") == 401
        assert _get_status(server.url + "/api/turns", token) == 200
    finally:
        server.stop()
    again = FakeServer("--require-pairing", env=env)  # the link is shown once, not again
    try:
        assert token not in again.log.decode() and "--show-pairing" in again.log.decode()
    finally:
        again.stop()


def _get_status(url: str, token: str | None = None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as error:
        return error.code


def test_serving_beyond_loopback_over_plain_http_refuses_to_start() -> None:
    result = subprocess.run([sys.executable, "-m", "app", "serve", "--host", "0.0.0.0"],
                            cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "--self-signed" in result.stderr and "--insecure-http" in result.stderr
    assert "Traceback" not in result.stderr
