"""The README stays a front door (short, the two commands first) and every relative link in
it and in docs/ reaches a file that exists, and a heading that exists where it names one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, ROOT / "deploy" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^ *```.*?^ *```", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _prose(text: str) -> str:
    """The text without code, where brackets are not links."""
    return _CODE.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to '-'."""
    text = _CODE.sub(lambda match: match.group(0).strip("`"), heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor a page's headings make (a repeated heading gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for heading in _HEADING.findall(_FENCE.sub("", page.read_text())):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def broken_links(page: Path) -> list[str]:
    """The relative links of a page whose file or heading does not exist."""
    broken = []
    for target in _LINK.findall(_prose(page.read_text())):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            broken.append(f"{target} (no such heading)")
    return broken


def test_slug_matches_githubs_anchors() -> None:
    assert slug("Container (`deploy/Dockerfile`)") == "container-deploydockerfile"
    assert slug("A 4 GB box: the low-memory profile") == "a-4-gb-box-the-low-memory-profile"
    assert slug("What it says") == "what-it-says"


def test_a_missing_file_or_heading_is_reported(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Here\n")
    page.write_text("[a](other.md#here) [b](other.md#gone) [c](nowhere.md) [d](#top)\n"
                    "`[e](ignored.md)` [f](https://example.org/x)\n\n# Top\n")
    assert broken_links(page) == ["other.md#gone (no such heading)", "nowhere.md (no such file)"]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_the_readme_is_a_front_door() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move detail to docs/"
    first_block = _FENCE.search(README.read_text())
    assert first_block is not None
    commands = [line.split()[:2] for line in first_block.group(0).splitlines()[1:-1]]
    assert commands == [["make", "run"], ["make", "test"]]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^run:", makefile, re.MULTILINE)
    assert re.search(r"^test:", makefile, re.MULTILINE)
