"""The Models page's work with the Hugging Face Hub and the local cache: search, a repo's files and
sizes, downloads, the cached models and their deletion (workbench.checkpoints.hub and hub_api do it)."""

from __future__ import annotations

from pathlib import Path

from workbench.checkpoints import hub, hub_api
from workbench.checkpoints.hub import CONFIG_PATTERNS, CachedRepo, Download
from workbench.checkpoints.hub_api import GatedError, HubError, RemoteRepo, SearchHit, Unreachable

__all__ = ["CONFIG_PATTERNS", "CachedRepo", "Download", "GatedError", "HubError", "RemoteRepo", "SearchHit",
           "Unreachable", "cache_dir", "cached", "delete", "explain", "human", "offline", "remote", "search",
           "token_present"]


# Each call looks the Hub modules' function up when it runs, so a test that replaces one (a slow
# cache scan, say) replaces it for the app too.
def cache_dir() -> Path:
    """The Hugging Face cache this process downloads into."""
    return hub_api.cache_dir()


def offline() -> bool:
    """Whether the Hub is switched off (HF_HUB_OFFLINE)."""
    return hub_api.offline()


def token_present() -> bool:
    """Whether a Hugging Face token is configured, for gated repos."""
    return hub_api.token_present()


def explain(exc: Exception, repo: str) -> HubError:
    """A Hub failure as a one-line error about `repo`."""
    return hub_api.explain(exc, repo)


def search(query: str, limit: int = 30) -> list[SearchHit]:
    return hub_api.search(query, limit)


def remote(repo: str, revision: str | None = None) -> RemoteRepo:
    """A repo's files and sizes on the Hub, before any download."""
    return hub_api.remote(repo, revision)


def human(n: float) -> str:
    """A byte count in words (1.2 GB)."""
    return hub.human(n)


def cached() -> list[CachedRepo]:
    """The models in the local cache."""
    return hub.cached()


def delete(repo: str) -> int:
    """Removes a model from the cache; the bytes freed."""
    return hub.delete(repo)
