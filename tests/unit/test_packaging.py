"""What the wheel carries (pyproject.toml's package list) against the tree, and where the
code finds the page's files in a checkout and in an install. The wheel itself is built,
installed and served in tests/integration/test_wheel.py."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from app.web_dir import web_dir

REPO = Path(__file__).resolve().parents[2]
SETUPTOOLS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
CODE = ("app", "pipeline", "models")
DATA_ONLY = {"app.web", "pipeline.skills.sentences"}
"""Packages of data alone (the page; the skills' hassil sentences): setuptools wants a
folder of package data listed as a package of its own, or it warns at every install."""


def package_folder(name: str) -> Path:
    mapped = SETUPTOOLS.get("package-dir", {})
    return REPO / (mapped[name] if name in mapped else name.replace(".", "/"))


def test_every_folder_of_code_is_a_package_of_the_wheel_and_nothing_else_is() -> None:
    in_tree = {str(path.parent.relative_to(REPO)).replace("/", ".")
               for top in CODE for path in (REPO / top).rglob("*.py")}
    listed = set(SETUPTOOLS["packages"])
    assert in_tree - listed == set(), "add these to [tool.setuptools] packages"
    assert listed - in_tree == DATA_ONLY  # the page's files, below
    assert {name.split(".")[0] for name in listed} == set(CODE)


def test_every_package_of_code_has_an_init_file() -> None:
    # A folder without one is a namespace package: setuptools' discovery skips those.
    for name in SETUPTOOLS["packages"]:
        if name not in DATA_ONLY:
            assert (package_folder(name) / "__init__.py").is_file(), name


def test_the_page_folder_is_the_app_web_package_and_every_file_in_it_is_package_data() -> None:
    assert package_folder("app.web") == REPO / "web"
    patterns = SETUPTOOLS["package-data"]["app.web"]
    files = [path.name for path in (REPO / "web").iterdir() if path.is_file()]
    assert {"index.html", "dashboard.html", "pair.html"} <= set(files)
    assert [name for name in files if not any(fnmatch.fnmatch(name, p) for p in patterns)] == []


def test_the_bench_data_files_are_package_data() -> None:
    patterns = SETUPTOOLS["package-data"]["app"]
    data = [path.relative_to(REPO / "app").as_posix() for path in (REPO / "app" / "bench").iterdir()
            if path.suffix not in (".py", ".pyc") and path.is_file()]
    assert data and [name for name in data
                     if not any(fnmatch.fnmatch(name, p) for p in patterns)] == []


def test_every_data_only_package_ships_all_its_files() -> None:
    for name in DATA_ONLY - {"app.web"}:
        patterns = SETUPTOOLS["package-data"][name]
        files = [path.name for path in package_folder(name).iterdir() if path.is_file()]
        assert files and [f for f in files if not any(fnmatch.fnmatch(f, p) for p in patterns)] == []


def test_in_a_checkout_the_page_is_web_at_the_top() -> None:
    assert web_dir() == REPO / "web"


def test_installed_the_page_is_app_web_even_beside_another_web_package(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    (site / "app" / "web").mkdir(parents=True)
    (site / "app" / "web" / "index.html").write_text("<html>")
    (site / "web").mkdir()  # web.py, say: a package of that name from another distribution
    (site / "web" / "index.html").write_text("not ours")
    assert web_dir(site / "app") == site / "app" / "web"
