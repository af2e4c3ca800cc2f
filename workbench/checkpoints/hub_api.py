"""Asking the Hugging Face Hub through huggingface_hub: where it is and whether it may be asked,
its failures as one line a user can act on, search, and a repo's files and sizes before any download.
The token is whatever huggingface_hub finds (HF_TOKEN, or `hf auth login`); Draftbench only ever
asks whether one is present and never stores, logs or exports it."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from huggingface_hub import HfApi, constants, get_token
from huggingface_hub import errors as hub_errors

import httpx

from workbench.errors import DraftbenchError

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class HubError(DraftbenchError):
    """A one-line reason a Hub operation failed."""


class GatedError(HubError):
    """The repo needs a token whose account accepted its licence; `url` is the page to accept it on."""

    def __init__(self, message: str, repo: str, url: str):
        super().__init__(message)
        self.repo = repo
        self.url = url


class Unreachable(HubError):  # noqa: N818 - a state the caller branches on: only the cache serves
    """The Hub is not asked (offline mode) or does not answer: only the cache and local folders serve."""


# Read at call time (not at import, as huggingface_hub's constants are) so tests and the app can
# point at another endpoint or cache without restarting.
def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def cache_dir() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path(constants.HF_HUB_CACHE)


def offline() -> bool:
    value = os.environ.get("HF_HUB_OFFLINE")
    return constants.HF_HUB_OFFLINE if value is None else value.strip().lower() in ("1", "true", "yes", "on")


def token_present() -> bool:
    return bool(get_token())


def model_page(repo: str) -> str:
    return f"{endpoint()}/{repo}"


def _api() -> HfApi:
    return HfApi(endpoint=endpoint())


def check_repo_id(repo: str) -> str:
    repo = repo.strip()
    if not REPO_ID.match(repo):
        raise HubError(f"{repo!r} is not a Hub repo id (owner/name)")
    return repo


def explain(exc: Exception, repo: str) -> HubError:
    """huggingface_hub's errors as one line a user can act on."""
    if isinstance(exc, HubError):
        return exc
    if isinstance(exc, hub_errors.GatedRepoError):
        url = model_page(repo)
        why = ("no Hugging Face token is set (HF_TOKEN or `hf auth login`)" if not token_present()
               else "the token's account has not been granted access yet")
        return GatedError(f"{repo} is gated: accept its licence at {url}, then retry; {why}", repo, url)
    if isinstance(exc, hub_errors.RepositoryNotFoundError):
        return HubError(f"{repo} was not found on the Hub (a private repo also needs a token)")
    if isinstance(exc, hub_errors.RevisionNotFoundError):
        return HubError(f"{repo} has no such revision")
    if isinstance(exc, hub_errors.OfflineModeIsEnabled) or isinstance(exc, hub_errors.LocalEntryNotFoundError):
        return Unreachable(f"{repo} is not in the Hugging Face cache and the Hub is not being asked (offline mode, HF_HUB_OFFLINE=1, or no connection)")
    if isinstance(exc, (httpx.ConnectError, httpx.TimeoutException)):
        return Unreachable(f"cannot reach the Hub at {endpoint()} ({type(exc).__name__}); set HF_HUB_OFFLINE=1 to use only what is cached")
    if isinstance(exc, hub_errors.HfHubHTTPError):
        status = exc.response.status_code if exc.response is not None else "?"
        return HubError(f"the Hub answered {status} for {repo}")
    if isinstance(exc, OSError):
        return HubError(f"{repo}: {exc.strerror or exc}")
    return HubError(f"{repo}: {type(exc).__name__}: {exc}")


# --- asking the Hub --------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchHit:
    repo: str
    downloads: int | None
    likes: int | None
    gated: bool
    pipeline: str | None


def search(query: str, limit: int = 30) -> list[SearchHit]:
    if offline():
        raise Unreachable("searching needs the Hub, and offline mode is on (HF_HUB_OFFLINE=1)")
    try:
        models = list(_api().list_models(search=query.strip() or None, limit=limit, sort="downloads"))
    except Exception as exc:  # noqa: BLE001 - every failure becomes one line for the user
        raise explain(exc, query) from None
    return [SearchHit(m.id, m.downloads, m.likes, bool(m.gated), m.pipeline_tag) for m in models]


@dataclass(frozen=True)
class RemoteFile:
    path: str
    size: int


@dataclass(frozen=True)
class RemoteRepo:
    repo: str
    sha: str
    files: tuple[RemoteFile, ...]
    gated: bool

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    def matching(self, patterns: list[str] | None) -> tuple[RemoteFile, ...]:
        return tuple(f for f in self.files if _wanted(f.path, patterns))


def remote(repo: str, revision: str | None = None) -> RemoteRepo:
    """The files and sizes of a repo, asked before anything is downloaded."""
    repo = check_repo_id(repo)
    if offline():
        raise Unreachable(f"the size of {repo} needs the Hub, and offline mode is on (HF_HUB_OFFLINE=1)")
    try:
        info = _api().model_info(repo, revision=revision, files_metadata=True)
    except Exception as exc:  # noqa: BLE001
        raise explain(exc, repo) from None
    files = tuple(RemoteFile(s.rfilename, s.size or 0) for s in info.siblings or [])
    if info.sha is None:  # the Hub names the commit of every repo it answers for
        raise HubError(f"the Hub gave no revision for {repo}")
    return RemoteRepo(repo, info.sha, files, bool(info.gated))


def _wanted(path: str, patterns: list[str] | None) -> bool:
    return patterns is None or any(fnmatch(path, p) for p in patterns)
