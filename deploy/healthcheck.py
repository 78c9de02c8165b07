"""Container health check: /healthz on the local port answers ok (HTTP, or HTTPS with the
self-signed certificate, which is not verified here: this is the box talking to itself)."""

from __future__ import annotations

import json
import os
import ssl
import sys
import urllib.request

PORT = int(os.environ.get("APACE_PORT", "8080"))


def healthy() -> bool:
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    for scheme in ("https", "http"):
        try:
            with urllib.request.urlopen(f"{scheme}://127.0.0.1:{PORT}/healthz", timeout=3,
                                        context=insecure if scheme == "https" else None) as r:
                return bool(json.loads(r.read()).get("ok"))
        except (OSError, ValueError):
            continue
    return False


if __name__ == "__main__":
    sys.exit(0 if healthy() else 1)
