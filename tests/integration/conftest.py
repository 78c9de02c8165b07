"""Fixtures for integration tests: the real embedded models and spoken questions."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.bench.utterances import speak
from app.process import REPO, ServerProcess
from models.load import load_synthesizer
from models.locate import locate
from models.piper import PiperSynthesizer
from models.wav_files import write_wav
from pipeline.answer.tts import TtsOptions
from tests.integration import synthetic

pytestmark = pytest.mark.integration

SERVER_LOG_LINES = 120


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """A failed test that used a server gets the end of that server's log in its report
    (a rare failure on a CI machine is otherwise not explained)."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    for name, value in getattr(item, "funcargs", {}).items():
        if isinstance(value, ServerProcess):
            tail = value.log.decode(errors="replace").splitlines()[-SERVER_LOG_LINES:]
            report.sections.append((f"server log ({name}), last lines", "\n".join(tail)))


@pytest.fixture(scope="session")
def voice() -> PiperSynthesizer:
    """The embedded voice without its random variation: the questions tests ask are the same
    audio every run, so what Whisper hears is too (with variation, a fresh-clone run heard
    "What is 12 times 7?" as "What is 12, time 7?")."""
    return load_synthesizer(locate("tts").path, TtsOptions(variation=False))


@pytest.fixture(scope="session")
def ask(voice: PiperSynthesizer, tmp_path_factory: pytest.TempPathFactory):
    """ask(text) → path of a WAV of `text` spoken, with silence before and after."""
    folder = tmp_path_factory.mktemp("questions")

    def make(text: str, **kwargs: float | str) -> Path:
        path = folder / (re.sub(r"\W+", "_", text).strip("_").lower() + ".wav")
        if not path.exists():
            write_wav(path, speak(voice, text, **kwargs))  # type: ignore[arg-type]
        return path

    return make


def apace(*args: str | Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run the real `apace` command line."""
    return subprocess.run(
        [sys.executable, "-m", "app", *map(str, args)],
        capture_output=True, text=True, timeout=timeout, cwd=REPO,
    )


@pytest.fixture
async def synthetic_server() -> AsyncIterator[str]:
    """The URL of a real server with scripted models and a known reply delay."""
    async for url in synthetic.synthetic_server():
        yield url
