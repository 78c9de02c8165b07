"""Which LLM and ears plain `apace serve` serves: flag, env var, config file, the best pulled
tier, the embedded one — each branch with a faked set of pulled tiers (a tmp model store of
sparse stand-ins), and what it says about why and how to change it."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from app.cli import main
from app.runtime import Settings, chosen_models
from models.catalog import PREFERRED, TIERS
from models.choice import AUTO, NOISY_ASR_TIER, Choice, choices
from models.load import ModelChoice
from models.locate import ModelError, locate
from tests.unit.test_catalog import pulled

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty model store and config home; no model variables (the suite pins some)."""
    for name in ("APACE_ASR_MODEL", "APACE_LLM_MODEL", "APACE_NOISY_ASR", "APACE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("APACE_MODELS_DIR", str(tmp_path / "store"))
    return tmp_path / "store"


def pull(store: Path, *names: str) -> None:
    for name in names:
        pulled(TIERS[name], store)


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "xdg" / "apace" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def served(models: ModelChoice | None = None) -> dict[str, Choice]:
    chosen = models or ModelChoice()
    return {c.role: c for c in choices(chosen.resolve(), chosen.noisy_asr)}


# --- the LLM -------------------------------------------------------------------------------------


def test_with_nothing_pulled_the_embedded_llm_is_the_fallback_and_it_says_what_to_pull() -> None:
    llm = served()["LLM"]
    assert llm.model == "smollm2-135m"
    assert llm.why == "embedded fallback: qwen2.5-coder-0.5b, preferred, is not pulled"
    assert llm.change.startswith("apace models pull qwen2.5-coder-0.5b; --llm TIER")


def test_the_best_pulled_tier_is_served_and_the_1_5b_is_never_chosen_by_itself(
    store: Path,
) -> None:
    pull(store, "qwen2.5-coder-1.5b")
    assert served()["LLM"].model == "smollm2-135m"  # too slow for a 2-core CPU: named only
    pull(store, "qwen2.5-coder-0.5b")
    llm = served()["LLM"]
    assert (llm.model, llm.why) == ("qwen2.5-coder-0.5b", "best pulled tier, in the order "
                                    "qwen2.5-coder-0.5b > smollm2-135m")
    assert "--llm TIER" in llm.change and 'llm = "TIER" under [models] in ' in llm.change


def test_the_config_file_wins_over_the_best_pulled_tier(store: Path, tmp_path: Path) -> None:
    pull(store, "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
    path = config(tmp_path, '[models]\nllm = "qwen2.5-coder-1.5b"\n')
    llm = served()["LLM"]
    assert (llm.model, llm.why) == ("qwen2.5-coder-1.5b", f"config file {path}")


def test_the_env_var_wins_over_the_config_file(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pull(store, "qwen2.5-coder-0.5b")
    config(tmp_path, '[models]\nllm = "qwen2.5-coder-0.5b"\n')
    monkeypatch.setenv("APACE_LLM_MODEL", "smollm2-135m")
    llm = served()["LLM"]
    assert (llm.model, llm.why) == ("smollm2-135m", "env APACE_LLM_MODEL")


def test_a_flag_wins_over_everything(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pull(store, "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
    config(tmp_path, '[models]\nllm = "qwen2.5-coder-0.5b"\n')
    monkeypatch.setenv("APACE_LLM_MODEL", "qwen2.5-coder-0.5b")
    llm = served(ModelChoice(llm="smollm2-135m"))["LLM"]
    assert (llm.model, llm.why) == ("smollm2-135m", "flag")


# --- the ears ------------------------------------------------------------------------------------


def test_the_ear_is_the_embedded_tiny_en_even_with_base_pulled(store: Path) -> None:
    pull(store, "whisper-base")
    asr = served()["ASR"]
    assert (asr.model, asr.why) == ("whisper-tiny.en", "the preferred tier, embedded")


def test_the_config_file_may_name_the_ear(store: Path, tmp_path: Path) -> None:
    pull(store, "whisper-base")
    path = config(tmp_path, '[models]\nasr = "whisper-base"\n')
    chosen = served()
    assert (chosen["ASR"].model, chosen["ASR"].why) == ("whisper-base", f"config file {path}")
    # the noisy-room ear would be the same model: there is none
    assert (chosen["noisy-room ASR"].model, chosen["noisy-room ASR"].why) == (
        "none", "the same model as the ASR")


def test_the_noisy_room_ear_is_base_where_pulled_else_none_with_how_to_get_it(store: Path) -> None:
    noisy = served()["noisy-room ASR"]
    assert noisy.model == "none" and noisy.change == f"apace models pull {NOISY_ASR_TIER}"
    pull(store, NOISY_ASR_TIER)
    noisy = served()["noisy-room ASR"]
    assert (noisy.model, noisy.why) == (NOISY_ASR_TIER, "pulled, the noisy-room ear by default")


def test_the_config_file_may_turn_the_noisy_room_ear_off_and_a_flag_back_on(
    store: Path, tmp_path: Path
) -> None:
    pull(store, NOISY_ASR_TIER)
    path = config(tmp_path, '[models]\nnoisy_asr = "off"\n')
    noisy = served()["noisy-room ASR"]
    assert (noisy.model, noisy.why) == ("off", f"config file {path}")
    assert noisy.change.startswith("--noisy-asr TIER|DIR|off, or noisy_asr = ")
    noisy = served(ModelChoice(noisy_asr=NOISY_ASR_TIER))["noisy-room ASR"]
    assert (noisy.model, noisy.why) == (NOISY_ASR_TIER, "flag")


# --- what make run serves, and what serve says first -----------------------------------------


def test_make_run_passes_the_tiers_plain_serve_prefers() -> None:
    makefile = (REPO / "Makefile").read_text()

    def default(name: str) -> str:
        found = re.search(rf"^{name} \?= (\S+)$", makefile, flags=re.M)
        assert found is not None, name
        return found.group(1)

    assert default("APACE_LLM") == PREFERRED["llm"][0]
    assert default("APACE_ASR") == PREFERRED["asr"][0]
    assert default("APACE_NOISY_ASR") == NOISY_ASR_TIER


def test_make_runs_tiers_when_pulled_are_what_plain_serve_serves(store: Path) -> None:
    pull(store, "qwen2.5-coder-0.5b", NOISY_ASR_TIER)
    flags = ModelChoice(llm="qwen2.5-coder-0.5b", asr="whisper-tiny.en", noisy_asr=NOISY_ASR_TIER)
    by_make = flags.resolve()
    plain = ModelChoice().resolve()
    assert {k: v.path for k, v in plain.items()} == {k: v.path for k, v in by_make.items()}


def test_serve_starts_by_saying_which_models_why_and_how_to_change(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pull(store, "qwen2.5-coder-0.5b")
    chosen_models(Settings(models=ModelChoice(noisy_asr=AUTO)))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("apace: LLM: qwen2.5-coder-0.5b (best pulled tier")
    assert lines[1].startswith("apace: ASR: whisper-tiny.en (the preferred tier, embedded")
    assert lines[2].startswith("apace: noisy-room ASR: none (whisper-base is not pulled")
    assert all("change: " in line for line in lines)


def test_pulling_a_preferred_tier_says_plain_serve_takes_it_and_another_how_to_use_it() -> None:
    from app.cli import _pulled_use

    assert _pulled_use(TIERS["qwen2.5-coder-0.5b"]).startswith("Plain `apace serve` serves it")
    assert "hears noisy rooms with it" in _pulled_use(TIERS[NOISY_ASR_TIER])
    assert _pulled_use(TIERS["qwen2.5-coder-1.5b"]).startswith(
        'Use it: --llm qwen2.5-coder-1.5b, or llm = "qwen2.5-coder-1.5b" under [models] in ')


# --- a bad config file ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[models]\nlm = "x"\n', r"\[models\] has no key lm\. Fix: use asr, llm, noisy_asr"),
        ('llm = "qwen2.5-coder-0.5b"\n', r"llm is outside \[models\]\. Fix: put the line"),
        ("models = 3\n", r"models must be a table\. Fix: a line \[models\]"),
        ("[models]\nllm = 5\n", r"\[models\] llm = 5 is not a name\. Fix: set llm under"),
        ('[models]\nllm = "qwen-0.5b"\n',
         r"not found at qwen-0\.5b \(from config .*\)\. Fix: set llm under \[models\] in .* to a "
         r"tier \(smollm2-135m, qwen2\.5-coder-0\.5b, qwen2\.5-coder-1\.5b, qwen2\.5-7b\) or an "
         r"existing path"),
        ('[models]\nllm = "whisper-base"\n', r"is an asr tier.*Or: set llm under \[models\]"),
        ('[models]\nllm = "qwen2.5-coder-1.5b"\n',
         r"run `apace models pull qwen2\.5-coder-1\.5b`.*Or: set llm under \[models\]"),
    ],
    ids=["unknown-key", "outside-models", "not-a-table", "not-text", "no-such-tier-or-path",
         "wrong-kind", "not-pulled"],
)
def test_a_bad_config_value_is_an_error_naming_the_file_and_the_fix(
    text: str, message: str, tmp_path: Path
) -> None:
    path = config(tmp_path, text)
    with pytest.raises(ModelError, match=message) as raised:
        locate("llm")
    assert str(path) in str(raised.value)


def test_a_bad_noisy_asr_in_the_config_names_its_key(tmp_path: Path) -> None:
    config(tmp_path, '[models]\nnoisy_asr = "whisper-bass"\n')
    with pytest.raises(ModelError, match=r"Fix: set noisy_asr under \[models\] .*, or off"):
        ModelChoice().resolve()


def test_serve_with_a_bad_config_value_exits_2_before_loading_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config(tmp_path, '[models]\nllm = "qwen2.5-coder-7b"\n')
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["serve", "--port", str(port)]) == 2
    out, err = capsys.readouterr()
    assert "apace: error: LLM (GGUF) model not found at qwen2.5-coder-7b (from config " in err
    assert "Fix: set llm under [models] in " in err and "loading models" not in out


def test_doctor_reports_a_bad_config_value_as_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config(tmp_path, '[models]\nasr = "whisper-small"\n')
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["doctor", "--port", str(port)]) == 1
    out = capsys.readouterr().out
    assert re.search(r"\[FAIL\] model asr .*not found at whisper-small \(from config ", out)
    assert re.search(r"fix: set asr under \[models\] in .* to a tier \(whisper-tiny\.en, "
                     r"whisper-base, whisper-large-v3-turbo\) or an existing path\n", out)
