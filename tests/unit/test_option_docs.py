"""An options field's docstring says what the option does and its default; the reasons and
the figures behind it live in docs/, so a field docstring carries no lab notes: no commit
hash, no date, no "measured" or "bench" figures, no "was X, now Y" history."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pipeline", "models", "app")

# Each marker is a sign of a measurement log, not of a description of the option.
MARKERS = {
    "a commit hash": re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),
    "'measured'": re.compile(r"\bmeasur", re.IGNORECASE),
    "'bench'": re.compile(r"\bbench", re.IGNORECASE),
    "a date": re.compile(r"\b20\d\d-\d\d"),
    "'was ... now'": re.compile(r"\bwas\b.*\bnow\b", re.IGNORECASE | re.DOTALL),
}


def _is_options_dataclass(node: ast.ClassDef) -> bool:
    def is_dataclass(decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return isinstance(target, ast.Name) and target.id == "dataclass"

    return node.name.endswith("Options") and any(map(is_dataclass, node.decorator_list))


def field_docs(source: str) -> Iterator[tuple[str, str, str]]:
    """(class, field, docstring) for each documented field of an *Options dataclass: a
    string expression right after an annotated assignment in the class body."""
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.ClassDef) and _is_options_dataclass(node)):
            continue
        for field, doc in zip(node.body, node.body[1:], strict=False):
            if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                    and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
                    and isinstance(doc.value.value, str)):
                yield node.name, field.target.id, doc.value.value


def lab_notes(doc: str) -> list[str]:
    """The lab-note markers a docstring carries."""
    return [name for name, marker in MARKERS.items() if marker.search(doc)]


def _modules() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def test_field_docs_finds_options_fields_only() -> None:
    source = '''
@dataclass(frozen=True, kw_only=True)
class FooOptions:
    """The class."""
    a: int = 1
    """What a does."""
    b: int = 2
    c: str = "x"
    """What c does."""

@dataclass
class Foo:
    d: int = 3
    """Not an options class."""
'''
    assert list(field_docs(source)) == [("FooOptions", "a", "What a does."),
                                         ("FooOptions", "c", "What c does.")]


@pytest.mark.parametrize(("doc", "found"), [
    ("Seconds of silence before the turn ends (default 0.5).", []),
    ("Measured 2026-11-30 at 4ac3a52: 12 % faster.", ["a commit hash", "'measured'", "a date"]),
    ("The latency bench gave 380 ms.", ["'bench'"]),
    ("It was 600 ms; now 400 ms.", ["'was ... now'"]),
    ("16000 samples, 1e6 steps, deadbeefcafe", []),
])
def test_lab_notes_are_recognised(doc: str, found: list[str]) -> None:
    assert lab_notes(doc) == found


def test_every_options_class_is_found() -> None:
    names = {name for path in _modules() for name, _, _ in field_docs(path.read_text())}
    assert {"ConversationOptions", "VadOptions", "EndpointOptions", "ClauseOptions",
            "IntegrityOptions", "LlmOptions", "AsrOptions", "RoomOptions",
            "EngineOptions"} <= names


def test_options_field_docs_carry_no_lab_notes() -> None:
    found = [f"{path.relative_to(ROOT)}: {cls}.{field}: {', '.join(markers)}"
             for path in _modules()
             for cls, field, doc in field_docs(path.read_text())
             if (markers := lab_notes(doc))]
    assert found == [], "move the reasons and figures to docs/:\n" + "\n".join(found)


MAX_LINES = 3


def test_options_field_docs_are_short() -> None:
    """What the option does and its default fit in three lines; the reasons go to docs/."""
    long = [f"{path.relative_to(ROOT)}: {cls}.{field}: {len(doc.strip().splitlines())} lines"
            for path in _modules()
            for cls, field, doc in field_docs(path.read_text())
            if len(doc.strip().splitlines()) > MAX_LINES]
    assert long == [], "shorten to what it does and its default:\n" + "\n".join(long)
