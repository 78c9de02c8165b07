"""The harness's servers (app.process) keep off the user's lists and timers."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.process import server_env


def test_a_harness_server_gets_a_data_folder_of_its_own(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    monkeypatch.setenv("APACE_DATA_DIR", "/home/someone/.local/share/apace")
    env = server_env(("--wyoming", "10700"), None, tmp_path)
    assert env["APACE_DATA_DIR"] == str(tmp_path)
    assert env["PYTHONUNBUFFERED"] == "1"


@pytest.mark.parametrize(("args", "env"), [
    (("--data-dir", "/srv/apace"), None),
    (("--data-dir=/srv/apace",), None),
    ((), {"APACE_DATA_DIR": "/srv/apace"}),
])
def test_a_data_folder_the_caller_names_is_kept(args: tuple[str, ...], env: dict[str, str] | None,
                                               monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.delenv("APACE_DATA_DIR", raising=False)
    made = server_env(args, env, tmp_path)
    assert made.get("APACE_DATA_DIR", "/srv/apace") == "/srv/apace"
    assert str(tmp_path) not in made.values()
