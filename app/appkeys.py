"""Typed keys for what the aiohttp application holds (aiohttp's AppKey)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from app.server import Sessions

SESSIONS: web.AppKey[Sessions] = web.AppKey("sessions")
