"""Pairing a browser with the server: a token kept in the config dir, a link that holds
it, and `POST /pair` that trades it for a session cookie.

The token travels in the link's fragment (`/pair#TOKEN`): a fragment is never sent in a
request, so it is not in any server or proxy log. The pairing page's script posts it to
`/pair` and goes on to `/`; from then on the browser carries an HttpOnly SameSite=Strict
cookie that scripts cannot read and other sites cannot make it send.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
import sys
from pathlib import Path
from typing import TextIO

from aiohttp import web

from app.security.access import COOKIE, COOKIE_MAX_AGE_S, AccessPolicy
from app.security.limits import Refused, parse_json, read_body
from app.web_dir import WEB_DIR

log = logging.getLogger(__name__)

TOKEN_FILE = "token"
PAIR_PAGE = WEB_DIR / "pair.html"
ACCESS: web.AppKey[AccessPolicy] = web.AppKey("access", AccessPolicy)


def load_token(folder: Path, *, renew: bool = False) -> tuple[str, bool]:
    """The server's token from `folder`/token, made (0600 from the first byte, never
    readable by others even for an instant) when missing or when `renew` is asked.
    Returns (token, made_now)."""
    path = folder / TOKEN_FILE
    if path.exists() and not renew:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            log.warning("%s was readable by others (mode %o): now 0600", path, mode)
            path.chmod(0o600)
        token = path.read_text().strip()
        if len(token) >= 16:
            return token, False
        log.warning("%s holds no usable token: making a new one", path)
    folder.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    write_private(path, token + "\n")
    return token, True


def write_private(path: Path, text: str | bytes) -> None:
    """Write `path` atomically with mode 0600 from creation (not chmod'ed afterwards)."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(text.encode() if isinstance(text, str) else text)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def pairing_url(scheme: str, host: str, port: int, token: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port}/pair#{token}"


def print_pairing(url: str, out: TextIO = sys.stdout) -> None:
    """The link, and a QR code of it for a phone when `segno` is installed."""
    print(f"apace: pair a browser by opening {url}", file=out)
    try:
        import segno  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return
    segno.make(url, error="m").terminal(out=out, compact=True)


async def pair_page(_request: web.Request) -> web.FileResponse:
    """GET /pair: the page whose script posts the link's fragment to POST /pair."""
    return web.FileResponse(PAIR_PAGE, headers={"Cache-Control": "no-store",
                                                "Referrer-Policy": "no-referrer"})


async def pair(request: web.Request) -> web.Response:
    """POST /pair {"token": ...}: a session cookie for the right token, else 403."""
    policy = request.app[ACCESS]
    data = parse_json(await read_body(request, limit=1024), max_bytes=1024, max_depth=2)
    offered = data.get("token") if isinstance(data, dict) else None
    if policy.token is None:
        return web.json_response({"paired": True, "needed": False})
    if not isinstance(offered, str) or not policy.token_valid(offered):
        raise Refused(403, "wrong pairing token: open the link `apace serve` printed")
    response = web.json_response({"paired": True, "needed": True})
    response.set_cookie(COOKIE, policy.cookie_value(), max_age=COOKIE_MAX_AGE_S, path="/",
                        httponly=True, samesite="Strict", secure=policy.secure_cookie)
    return response
