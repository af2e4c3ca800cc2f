"""Facts about a server's URL and what it answers there."""

from __future__ import annotations

import urllib.parse

import httpx


def is_loopback(url: str | None) -> bool:
    host = urllib.parse.urlsplit(url or "").hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def server_version(base_url: str) -> str | None:
    """vLLM's own version as the running server reports it (GET /version): for docker and
    attached servers the only trustworthy source."""
    try:
        r = httpx.get(base_url + "/version", timeout=5)
        return r.json().get("version") if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
