"""Where the page's files are: web/ at the top of a checkout, app/web/ in an installed wheel.

The wheel carries web/ as the package data of `app.web` (pyproject.toml), so an install
needs no checkout beside it. The installed place is looked at first: beside an installed
`app`, site-packages/web/ may be another distribution's package of that name.
"""

from __future__ import annotations

from pathlib import Path

_APP = Path(__file__).resolve().parent


def web_dir(app_folder: Path = _APP) -> Path:
    """The folder holding index.html, dashboard.html, pair.html and their assets."""
    installed = app_folder / "web"
    if (installed / "index.html").is_file():
        return installed
    return app_folder.parent / "web"


WEB_DIR = web_dir()
