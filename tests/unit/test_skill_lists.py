"""Shopping list and notes: understood phrasings, replies, commit-time changes, persistence."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from models.list_store import ListStoreError, SqliteListStore, default_data_dir, default_db_path
from pipeline.skills import ListSkill, ListStore, SkillContext, SkillReply, normalise

NOW = datetime(2024, 5, 1, 8, 0, tzinfo=ZoneInfo("Europe/London"))
CTX = SkillContext(now=NOW, monotonic=0.0, owner="a")


@pytest.fixture
def store(tmp_path: Path) -> ListStore:
    return SqliteListStore(tmp_path / "data" / "apace.sqlite3")


def ask(skill: ListSkill, transcript: str, ctx: SkillContext = CTX) -> SkillReply | None:
    return skill.answer(normalise(transcript), ctx)


def commit(skill: ListSkill, transcript: str, ctx: SkillContext = CTX) -> str:
    reply = ask(skill, transcript, ctx)
    assert reply is not None, transcript
    if reply.action is not None:
        reply.action()
    return reply.text


def test_add_two_items_then_read_the_list(store: ListStore) -> None:
    skill = ListSkill(store)
    assert commit(skill, "Add eggs and butter to my shopping list.") == (
        "Added eggs and butter to your shopping list."
    )
    assert commit(skill, "put milk on the shopping list") == "Added milk to your shopping list."
    assert commit(skill, "What's on my shopping list?") == (
        "Your shopping list has 3 items: eggs, butter and milk."
    )
    assert commit(skill, "Read me my shopping list.") == (
        "Your shopping list has 3 items: eggs, butter and milk."
    )


def test_a_duplicate_is_not_added_twice(store: ListStore) -> None:
    skill = ListSkill(store)
    commit(skill, "add milk to my shopping list")
    assert commit(skill, "Add Milk and bread to my shopping list") == (
        "Added bread to your shopping list. Milk is already on it."
    )
    reply = ask(skill, "put milk on my shopping list")
    assert reply is not None and reply.action is None
    assert reply.text == "Milk is already on it."
    assert store.items("a", "shopping") == ["milk", "bread"]


def test_remove_and_clear(store: ListStore) -> None:
    skill = ListSkill(store)
    commit(skill, "add eggs and milk to my shopping list")
    assert commit(skill, "Remove milk from my shopping list.") == (
        "Removed milk from your shopping list."
    )
    assert commit(skill, "remove cheese from my shopping list") == (
        "Cheese is not on your shopping list."
    )
    assert commit(skill, "Clear my shopping list.") == "Cleared your shopping list."
    assert commit(skill, "what's on my shopping list") == "Your shopping list is empty."


def test_an_item_misheard_for_one_on_the_list_is_taken_for_it(store: ListStore) -> None:
    """Removing or asking about what is on the list: a near miss ("red" for "bread") is
    the item on the list, and the reply names it; adding never guesses."""
    skill = ListSkill(store)
    commit(skill, "add milk and eggs to my shopping list")
    commit(skill, "put bread on my shopping list")
    assert commit(skill, "Is red on my shopping list?") == "Yes, bread is on your shopping list."
    assert commit(skill, "Take red off the shopping list.") == (
        "Removed bread from your shopping list.")
    assert commit(skill, "Remove rice from my shopping list.") == (
        "Rice is not on your shopping list.")  # nothing like it there
    assert commit(skill, "Add red to my shopping list.") == "Added red to your shopping list."
    assert store.items("a", "shopping") == ["milk", "eggs", "red"]


def test_nothing_changes_until_the_action_runs(store: ListStore) -> None:
    skill = ListSkill(store)
    reply = ask(skill, "add eggs to my shopping list")
    assert reply is not None and reply.action is not None
    assert store.items("a", "shopping") == []
    reply.action()
    assert store.items("a", "shopping") == ["eggs"]


def test_a_read_reflects_the_store_at_match_time(store: ListStore) -> None:
    skill = ListSkill(store)
    store.add("a", "shopping", ["eggs"])
    reply = ask(skill, "what's on my shopping list")
    store.add("a", "shopping", ["milk"])
    assert reply is not None and reply.text == "Your shopping list has 1 item: eggs."


def test_notes_are_taken_read_and_deleted(store: ListStore) -> None:
    skill = ListSkill(store)
    assert commit(skill, "Take a note: call the plumber on Monday.") == (
        "Noted: call the plumber on monday."
    )
    assert commit(skill, "Note that the wifi password is on the fridge.") == (
        "Noted: the wifi password is on the fridge."
    )
    assert commit(skill, "Read my notes.") == (
        "You have 2 notes. Note 1: call the plumber on monday. "
        "Note 2: the wifi password is on the fridge."
    )
    assert commit(skill, "Delete my notes.") == "Deleted your 2 notes."
    assert commit(skill, "read my notes") == "You have no notes."


@pytest.mark.parametrize("transcript", [
    "How many items are on my list now?", "What's on my shopping list right now?",
    "Is there anything on my list at the moment?", "Read me my shopping list, please.",
])
def test_a_question_about_the_list_may_end_with_now(store: ListStore, transcript: str) -> None:
    skill = ListSkill(store)
    commit(skill, "Add eggs and milk to my shopping list.")
    assert commit(skill, transcript) == "Your shopping list has 2 items: eggs and milk."


def test_an_add_or_remove_may_leave_out_the_article(store: ListStore) -> None:
    skill = ListSkill(store)
    assert commit(skill, "add dish soap to list") == "Added dish soap to your shopping list."
    assert commit(skill, "Put eggs in shopping list.") == "Added eggs to your shopping list."
    assert commit(skill, "remove eggs from list") == "Removed eggs from your shopping list."
    assert store.items("a", "shopping") == ["dish soap"]


@pytest.mark.parametrize("transcript", ["What is a linked list?", "What is list comprehension?",
                                        "Put the kettle on.", "Read the list of planets."])
def test_a_bare_list_in_a_question_is_left_to_the_llm(store: ListStore, transcript: str) -> None:
    assert ask(ListSkill(store), transcript) is None


@pytest.mark.parametrize(
    "transcript",
    ["What is a shopping list?", "Is the list now ready?", "Make a list of fruits.",
     "What's a good note-taking app?", "List the planets.", "Tell me about musical notes."],
)
def test_near_misses_are_left_to_the_llm(store: ListStore, transcript: str) -> None:
    assert ask(ListSkill(store), transcript) is None


def test_lists_persist_across_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "apace.sqlite3"
    first = SqliteListStore(path)
    commit(ListSkill(first), "add eggs and butter to my shopping list")
    first.close()
    assert SqliteListStore(path).items("a", "shopping") == ["eggs", "butter"]


def test_an_owner_never_sees_another_owners_list(store: ListStore) -> None:
    skill = ListSkill(store)
    commit(skill, "add eggs to my shopping list")
    other = SkillContext(now=NOW, monotonic=0.0, owner="b")
    assert commit(skill, "what's on my shopping list", other) == "Your shopping list is empty."
    commit(skill, "clear my shopping list", other)
    assert store.items("a", "shopping") == ["eggs"]


def test_a_corrupt_database_raises_a_clear_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "apace.sqlite3"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ListStoreError) as caught:
        SqliteListStore(path)
    assert str(path) in str(caught.value) and "move it aside" in str(caught.value)


def test_concurrent_adds_from_threads_all_land(store: ListStore) -> None:
    def add(n: int) -> None:
        for i in range(20):
            store.add("a", "shopping", [f"item {n} {i}"])

    threads = [threading.Thread(target=add, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store.items("a", "shopping")) == 80


def test_default_data_dir_prefers_apace_then_xdg_then_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("APACE_DATA_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == tmp_path / "explicit"
    assert default_db_path() == tmp_path / "explicit" / "apace.sqlite3"
    monkeypatch.delenv("APACE_DATA_DIR")
    assert default_data_dir() == tmp_path / "xdg" / "apace"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_data_dir() == tmp_path / "home" / ".local" / "share" / "apace"


def test_items_whisper_separated_with_commas_are_separate_items(tmp_path: Path) -> None:
    store = SqliteListStore(tmp_path / "db.sqlite3")
    skill = ListSkill(store)
    transcript = "Add apples, pears and bananas to my shopping list."
    ctx = SkillContext(now=datetime(2026, 12, 1, 9, tzinfo=ZoneInfo("UTC")), monotonic=0.0,
                       transcript=transcript)
    reply = skill.answer(normalise(transcript), ctx)
    assert reply is not None and reply.action is not None
    reply.action()
    assert store.items("default", "shopping") == ["apples", "pears", "bananas"]
