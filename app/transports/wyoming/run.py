"""Running the Wyoming server: on its own (`apace wyoming`), or beside the web server in
one process (`apace serve --wyoming PORT`), the two sharing one engine — one copy of each
model in memory, one CPU lock across every way in.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import ssl
from collections.abc import AsyncIterator

from app.runtime import Settings, build_engine, chosen_models
from app.security.access import AccessPolicy, is_wildcard, lan_address
from app.server import ServerOptions
from app.transports.wyoming.info import ProgramNames
from app.transports.wyoming.server import WyomingOptions, WyomingServer
from app.transports.wyoming.zeroconf import announce
from models.catalog import TIERS
from models.locate import Located
from pipeline.engine import Engine


def program_names(settings: Settings, located: dict[str, Located], engine: Engine) -> ProgramNames:
    """What `info` calls the models: a tier's name, else the file's."""

    def name(choice: str | None, kind: str, default: str) -> str:
        if choice and choice in TIERS:
            return choice
        found = located.get(kind)
        if found is None:
            return default
        if found.tier is not None:
            return found.tier
        return found.path.stem if found.path.is_file() else found.path.name

    models = settings.models
    return ProgramNames(asr_model=name(models.asr, "asr", "whisper-tiny.en"),
                        llm_model=name(models.llm, "llm", "smollm2-135m"),
                        tts_voice=engine.synthesizer.voice_id)


@contextlib.asynccontextmanager
async def wyoming_running(engine: Engine, names: ProgramNames, options: WyomingOptions,
                          zeroconf: str | None = None) -> AsyncIterator[WyomingServer]:
    """The Wyoming server listening (and announced, with `zeroconf` as its name) while
    inside; every connection and conversation closed on exit."""
    server = WyomingServer(engine, names, options)
    await server.start()
    try:
        print(f"apace wyoming ready: tcp://{options.host}:{server.port}  "
              "(Home Assistant: Settings → Devices & services → Add → Wyoming Protocol)",
              flush=True)
        async with contextlib.AsyncExitStack() as stack:
            if zeroconf is not None:
                address = (lan_address() or "127.0.0.1") if is_wildcard(options.host) \
                    else options.host
                await stack.enter_async_context(announce(zeroconf, server.port, address))
            yield server
    finally:
        await server.close()


async def run_wyoming(settings: Settings, options: WyomingOptions, *,
                      zeroconf: str | None = None) -> None:
    """`apace wyoming`: load and warm the models, serve until SIGINT/SIGTERM."""
    located = chosen_models(settings)
    print("apace: loading models ...", flush=True)
    engine, located = await asyncio.to_thread(build_engine, settings, located)
    try:
        await engine.warm()
        async with wyoming_running(engine, program_names(settings, located, engine), options,
                                   zeroconf):
            await _until_signalled()
    finally:
        engine.close()


async def serve_with_wyoming(
    settings: Settings, options: ServerOptions, wyoming: WyomingOptions, *, host: str,
    port: int, loopback: bool, tls: ssl.SSLContext | None, access: AccessPolicy | None = None,
    pairing: str | None = None, zeroconf: str | None = None,
) -> None:
    """`apace serve --wyoming PORT`: app.serve.serve, with the Wyoming server beside it."""
    from app.serve import serve_engine, use_loopback_candidates

    located = chosen_models(settings)
    if loopback:
        use_loopback_candidates()
    print("apace: loading models ...", flush=True)
    engine, located = await asyncio.to_thread(build_engine, settings, located)
    try:
        await engine.warm()
        async with wyoming_running(engine, program_names(settings, located, engine), wyoming,
                                   zeroconf):
            await serve_engine(engine, options, host=host, port=port, tls=tls, access=access,
                               pairing=pairing)
    finally:
        engine.close()


async def _until_signalled() -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = (signal.SIGINT, signal.SIGTERM)
    for sig in signals:
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
