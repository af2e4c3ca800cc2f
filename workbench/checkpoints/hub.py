"""Checkpoints from the Hugging Face Hub in the shared cache (the one vLLM reads): downloads into it
with progress, cancel and resume, its contents and their deletion. Asking the Hub itself (search,
sizes, gated repos, its failures as one line) is workbench.checkpoints.hub_api."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Self

from huggingface_hub import constants, scan_cache_dir, snapshot_download
from huggingface_hub.file_download import get_hf_file_metadata, hf_hub_url, http_get, repo_folder_name
from huggingface_hub.utils import WeakFileLock, build_hf_headers

from workbench.checkpoints.hub_api import (HubError, RemoteFile, cache_dir, check_repo_id, endpoint, explain, offline,
                                           remote)

Progress = Callable[[int, int, str], None]  # bytes done, bytes in all, file being fetched
SHA256 = re.compile(r"^[0-9a-f]{64}$")
# A model without its weights (no pattern matches a weight file): configs, tokenizers, chat
# templates and remote-code configs; enough to read its shape or serve it with --load-format dummy.
CONFIG_PATTERNS = ["*.json", "*.jinja", "*.txt", "*.model", "*.tiktoken", "*.py"]


class Cancelled(HubError):  # noqa: N818 - a signal, not an error
    """The download was cancelled; what was fetched so far stays in the cache and is resumed next time."""


# --- the local cache -----------------------------------------------------------------------------------
def _storage(repo: str) -> Path:
    return cache_dir() / repo_folder_name(repo_id=repo, repo_type="model")


def cached_path(repo: str, sha: str, filename: str) -> Path:
    return _storage(repo) / "snapshots" / sha / filename


def free_bytes(path: Path) -> int:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def check_disk(repo: str, needed: int) -> None:
    free = free_bytes(cache_dir())
    if needed > free:
        raise HubError(f"{repo} needs {human(needed)} more in {cache_dir()}, but only {human(free)} is free: "
                       "free some space (`draftbench models --delete REPO`) or point HF_HOME elsewhere")


def human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


@dataclass(frozen=True)
class CachedRepo:
    repo: str
    size: int
    files: int
    revisions: tuple[str, ...]
    refs: tuple[str, ...]
    partial: int  # bytes of interrupted downloads waiting to be resumed
    path: Path


def cached() -> list[CachedRepo]:
    """Models in the Hugging Face cache (the one vLLM reads), largest first."""
    folder = cache_dir()
    if not folder.exists():
        return []
    info = scan_cache_dir(folder)
    partial: dict[Path, int] = {}
    for f in info.incomplete_files:
        repo_path = f.file_path.parent.parent
        partial[repo_path] = partial.get(repo_path, 0) + f.size_on_disk
    rows = [CachedRepo(r.repo_id, r.size_on_disk, r.nb_files, tuple(sorted(rev.commit_hash for rev in r.revisions)),
                       tuple(sorted(ref for rev in r.revisions for ref in rev.refs)),
                       partial.pop(r.repo_path, 0), r.repo_path)
            for r in info.repos if r.repo_type == "model"]
    # A download interrupted before its first file completed has no revision yet, only partial bytes.
    for repo_path, size in partial.items():
        name = repo_path.name
        if name.startswith("models--"):
            rows.append(CachedRepo(name[len("models--"):].replace("--", "/"), 0, 0, (), (), size, repo_path))
    return sorted(rows, key=lambda r: -(r.size + r.partial))


def delete(repo: str) -> int:
    """Remove a model from the cache; returns the bytes freed."""
    for row in cached():
        if row.repo.lower() == repo.strip().lower():
            freed = row.size + row.partial
            if row.revisions:
                scan_cache_dir(cache_dir()).delete_revisions(*row.revisions).execute()
            shutil.rmtree(row.path, ignore_errors=True)
            return freed
    raise HubError(f"{repo} is not in the Hugging Face cache ({cache_dir()})")


# --- downloading -----------------------------------------------------------------------------------------
@dataclass
class Download:
    """One repo's download: `run()` in a worker thread, `cancel()` from any other."""
    repo: str
    revision: str | None = None
    allow_patterns: list[str] | None = None
    progress: Progress | None = None
    _cancel: threading.Event = field(default_factory=threading.Event)
    done: int = 0
    total: int = 0  # bytes of the files wanted
    repo_size: int = 0  # bytes of the whole repo (0 until the Hub answered)

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def run(self) -> Path:
        repo = check_repo_id(self.repo)
        if offline():
            try:
                return Path(snapshot_download(repo, revision=self.revision, cache_dir=cache_dir(),
                                              allow_patterns=self.allow_patterns, local_files_only=True))
            except Exception as exc:  # noqa: BLE001
                raise explain(exc, repo) from None
        info = remote(repo, self.revision)
        files = list(info.matching(self.allow_patterns))
        self.total = sum(f.size for f in files)
        self.repo_size = info.size
        todo = [f for f in files if not cached_path(repo, info.sha, f.path).exists()]
        self.done = self.total - sum(f.size for f in todo)
        check_disk(repo, max(0, sum(f.size for f in todo) - _partial_bytes(repo)))
        self._report(files[0].path if files else "")
        try:
            for f in todo:
                if self.cancelled:
                    raise Cancelled(f"download of {repo} cancelled; run it again to resume")
                self._fetch(repo, info.sha, f)
            # huggingface_hub itself links the fetched blobs into the snapshot, writes refs/ and
            # its tree cache, and checks that the snapshot is complete.
            folder = snapshot_download(repo, revision=info.sha, cache_dir=cache_dir(), endpoint=endpoint(),
                                       allow_patterns=self.allow_patterns, tqdm_class=_Silent)
            _write_ref(_storage(repo), self.revision or constants.DEFAULT_REVISION, info.sha)
        except (Cancelled, HubError):
            raise
        except Exception as exc:  # noqa: BLE001
            raise explain(exc, repo) from None
        return Path(folder)

    def _report(self, filename: str) -> None:
        if self.progress:
            self.progress(self.done, self.total, filename)

    def _fetch(self, repo: str, sha: str, f: RemoteFile) -> None:
        """One file into blobs/<etag>, resuming `<etag>.incomplete` left by an interrupted run
        (huggingface_hub 1.x restarts interrupted files from zero, so the resume is ours)."""
        url = hf_hub_url(repo, f.path, revision=sha, endpoint=endpoint())
        meta = get_hf_file_metadata(url, endpoint=endpoint())
        if meta.etag is None or meta.location is None:
            raise HubError(f"{repo}: the Hub gave no ETag for {f.path}")
        storage = _storage(repo)
        blob = storage / "blobs" / meta.etag
        if blob.exists():
            return
        blob.parent.mkdir(parents=True, exist_ok=True)
        partial = blob.with_name(blob.name + ".incomplete")
        lock = cache_dir() / ".locks" / storage.name / f"{meta.etag}.lock"
        lock.parent.mkdir(parents=True, exist_ok=True)
        with WeakFileLock(str(lock)):
            resume = partial.stat().st_size if partial.exists() else 0
            expected = meta.size if meta.size is not None else f.size
            if resume > expected:
                partial.unlink()
                resume = 0
            owner = self
            start = self.done

            class Bar(_Silent):
                def update(self, n: int = 1) -> None:
                    owner.done = start + (self.n + n - resume)
                    self.n += n or 0
                    owner._report(f.path)
                    if owner.cancelled:
                        raise Cancelled(f"download of {repo} cancelled; run it again to resume")

            self.done = start + resume
            self._report(f.path)
            with open(partial, "ab") as out:
                http_get(meta.location, out, resume_size=resume, headers=build_hf_headers(),
                         expected_size=expected, displayed_filename=f.path, tqdm_class=Bar)
            if SHA256.match(meta.etag) and _sha256(partial) != meta.etag:
                partial.unlink()
                raise HubError(f"{repo}: {f.path} arrived damaged (checksum mismatch); run it again")
            os.replace(partial, blob)
            self.done = start + expected


def _partial_bytes(repo: str) -> int:
    return sum(p.stat().st_size for p in (_storage(repo) / "blobs").glob("*.incomplete"))


def _write_ref(storage: Path, revision: str, sha: str) -> None:
    if revision == sha:
        return
    ref = storage / "refs" / revision
    ref.parent.mkdir(parents=True, exist_ok=True)
    ref.write_text(sha)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class _Silent:
    """A tqdm stand-in that draws nothing (huggingface_hub accepts any class with this shape)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.n = kwargs.get("initial", 0) or 0
        self.total = kwargs.get("total")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        return False

    def update(self, n: int = 1) -> None:
        self.n += n or 0

    def close(self) -> None:
        pass

    def refresh(self) -> None:
        pass

    def set_description(self, *args: Any, **kwargs: Any) -> None:
        pass

    set_description_str = set_postfix_str = set_description
