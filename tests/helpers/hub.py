"""A stand-in for the Hugging Face Hub, which the machines these tests run on cannot reach: the one
every test that talks to the Hub uses, through huggingface_hub itself (point HF_ENDPOINT at `url`).

It serves real HTTP on the loopback for the few endpoints huggingface_hub calls for search, model
and dataset info, tree listing and file downloads, shaped like the real Hub's answers (ETag /
X-Linked-Etag / X-Linked-Size / X-Repo-Commit headers, a 302 from /resolve/ to a CDN host for LFS
files, Range requests answered with 206, gated repos answered 401 without a token and 403 with an
unapproved one, with X-Error-Code: GatedRepo), for repos whose files the tests make. `demo_repos`
fills it with the models the Hub tests download; a dataset is a Repo of kind "dataset".
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

LFS_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt")


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Repo:
    repo_id: str
    files: dict[str, bytes]
    gated: bool = False
    sha: str = ""
    downloads: int = 0
    kind: str = "model"  # or "dataset": huggingface_hub asks for those under /api/datasets/ and /datasets/

    def __post_init__(self):
        self.sha = self.sha or hashlib.sha1(json.dumps(sorted(self.files)).encode() + self.repo_id.encode()).hexdigest()

    def is_lfs(self, path: str) -> bool:
        return path.endswith(LFS_SUFFIXES)

    def etag(self, path: str) -> str:
        data = self.files[path]
        return hashlib.sha256(data).hexdigest() if self.is_lfs(path) else git_blob_id(data)


@dataclass
class StandInHub:
    repos: dict[str, Repo] = field(default_factory=dict)
    granted_tokens: set[str] = field(default_factory=set)
    chunk: int = 64 * 1024
    delay_s: float = 0.0  # per chunk, so a test can catch a download in flight
    requests: list[dict] = field(default_factory=list)

    def add(self, repo: Repo) -> Repo:
        self.repos[repo.repo_id] = repo
        return repo

    def start(self, host: str = "127.0.0.1", port: int = 0) -> "StandInHub":
        hub = self

        class Handler(_Handler):
            pass

        Handler.hub = hub
        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        # LFS downloads are redirected to another host name, as the Hub sends them to its CDN.
        self.cdn = f"http://localhost:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True, name="stand-in-hub").start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "StandInHub":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def gets(self, path_part: str) -> list[dict]:
        return [r for r in self.requests if r["method"] == "GET" and path_part in r["path"]]


class _Handler(BaseHTTPRequestHandler):
    hub: StandInHub
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    # --- plumbing ---
    def _json(self, status: int, body, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, status: int, code: str | None, message: str) -> None:
        headers = {"X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        self._json(status, {"error": message}, headers)

    def _denied(self, repo: Repo) -> bool:
        """The real Hub's answer to a gated repo: 401 without a token, 403 with one not yet approved."""
        if not repo.gated:
            return False
        auth = self.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip()
        if token and token in self.hub.granted_tokens:
            return False
        if not token:
            self._error(401, "GatedRepo", f"Access to {repo.kind} {repo.repo_id} is restricted. You must have access "
                                          "to it and be authenticated to access it. Please log in.")
        else:
            self._error(403, "GatedRepo", f"Access to {repo.kind} {repo.repo_id} is restricted and you are not in the "
                                          f"authorized list. Visit https://huggingface.co/{repo.repo_id} to ask for access.")
        return True

    def _repo(self, repo_id: str, kind: str = "model") -> Repo | None:
        repo = self.hub.repos.get(repo_id)
        if repo is None or repo.kind != kind:
            repo = None
            self._error(404, "RepoNotFound", "Repository not found")
        return repo

    def _record(self) -> None:
        self.hub.requests.append({"method": self.command, "path": self.path, "range": self.headers.get("Range"),
                                  "auth": bool(self.headers.get("Authorization")), "t": time.time()})

    # --- routes ---
    def do_HEAD(self):
        self._route()

    def do_GET(self):
        self._route()

    def _route(self) -> None:
        self._record()
        url = urlparse(self.path)
        path = unquote(url.path)
        query = parse_qs(url.query)
        if path == "/api/models":
            return self._search(query)
        m = re.match(r"^/api/(models|datasets)/([^/]+/[^/]+)(?:/revision/([^/]+))?$", path)
        if m:
            return self._info(m.group(2), query, m.group(1).removesuffix("s"))
        m = re.match(r"^/api/(models|datasets)/([^/]+/[^/]+)/tree/([^/]+)(/.*)?$", path)
        if m:
            return self._tree(m.group(2), m.group(1).removesuffix("s"))
        m = re.match(r"^/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
        if m:
            return self._resolve(m.group(1), m.group(3), "dataset")
        m = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
        if m:
            return self._resolve(m.group(1), m.group(3))
        m = re.match(r"^/cdn/([0-9a-f]{64})$", path)
        if m:
            return self._cdn(m.group(1))
        self._error(404, None, "Not found")

    def _search(self, query) -> None:
        q = (query.get("search") or [""])[0].lower()
        limit = int((query.get("limit") or ["1000"])[0])
        hits = [r for r in self.hub.repos.values() if q in r.repo_id.lower()]
        hits.sort(key=lambda r: -r.downloads)
        self._json(200, [{"_id": r.sha[:24], "id": r.repo_id, "modelId": r.repo_id, "likes": 0, "downloads": r.downloads,
                          "private": False, "gated": "manual" if r.gated else False, "pipeline_tag": "text-generation",
                          "tags": ["safetensors"], "createdAt": "2026-01-01T00:00:00.000Z"} for r in hits[:limit]])

    def _info(self, repo_id: str, query, kind: str = "model") -> None:
        repo = self._repo(repo_id, kind)
        if repo is None or self._denied(repo):
            return
        blobs = "blobs" in query
        siblings = []
        for p, data in sorted(repo.files.items()):
            s = {"rfilename": p}
            if blobs:
                s.update(size=len(data), blobId=git_blob_id(data))
                if repo.is_lfs(p):
                    s["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            siblings.append(s)
        self._json(200, {"_id": repo.sha[:24], "id": repo.repo_id, "modelId": repo.repo_id, "sha": repo.sha,
                         "private": False, "gated": "manual" if repo.gated else False, "disabled": False,
                         "downloads": repo.downloads, "likes": 0, "tags": ["safetensors"],
                         "pipeline_tag": "text-generation", "lastModified": "2026-01-01T00:00:00.000Z",
                         "siblings": siblings})

    def _tree(self, repo_id: str, kind: str = "model") -> None:
        repo = self._repo(repo_id, kind)
        if repo is None or self._denied(repo):
            return
        entries = []
        for p, data in sorted(repo.files.items()):
            e = {"type": "file", "oid": git_blob_id(data), "size": len(data), "path": p}
            if repo.is_lfs(p):
                e["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            entries.append(e)
        self._json(200, entries)

    def _resolve(self, repo_id: str, filename: str, kind: str = "model") -> None:
        repo = self._repo(repo_id, kind)
        if repo is None or self._denied(repo):
            return
        if filename not in repo.files:
            return self._error(404, "EntryNotFound", f"{filename} does not exist")
        data = repo.files[filename]
        if repo.is_lfs(filename):
            self.send_response(302)
            self.send_header("Location", f"{self.hub.cdn}/cdn/{hashlib.sha256(data).hexdigest()}")
            self.send_header("X-Repo-Commit", repo.sha)
            self.send_header("X-Linked-Etag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.send_header("X-Linked-Size", str(len(data)))
            self.send_header("ETag", f'"{git_blob_id(data)}"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self._body(data, {"X-Repo-Commit": repo.sha, "ETag": f'"{git_blob_id(data)}"'})

    def _cdn(self, sha256: str) -> None:
        for repo in self.hub.repos.values():
            for data in repo.files.values():
                if hashlib.sha256(data).hexdigest() == sha256:
                    return self._body(data, {"ETag": f'"{sha256}"'})
        self._error(404, None, "Not found")

    def _body(self, data: bytes, headers: dict) -> None:
        start = 0
        rng = self.headers.get("Range")
        m = re.match(r"bytes=(\d+)-", rng or "")
        if m:
            start = int(m.group(1))
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(len(data) - start))
        self.send_header("Content-Type", "application/octet-stream")
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command == "HEAD":
            return
        try:
            for i in range(start, len(data), self.hub.chunk):
                self.wfile.write(data[i:i + self.hub.chunk])
                self.wfile.flush()
                if self.hub.delay_s:
                    time.sleep(self.hub.delay_s)
        except (BrokenPipeError, ConnectionResetError):
            pass



# The models the Hub tests download (tests/conftest.py's `stand_in` fixture adds them).
BIG = 40 * 1024 * 1024  # four of huggingface_hub's 10 MiB download chunks
GRANTED = "hf_" + "granted" * 4  # the one token the gated repo lets through


def weights(n: int, seed: int) -> bytes:
    return hashlib.sha256(str(seed).encode()).digest() * (n // 32)


def demo_repos(hub: StandInHub) -> StandInHub:
    hub.add(Repo("acme/tiny-draft", {"config.json": b'{"model_type": "llama", "vocab_size": 49152}',
                                     "model.safetensors": weights(3 * 1024 * 1024, 1)}, downloads=50))
    hub.add(Repo("acme/big-target", {"config.json": b'{"model_type": "llama"}',
                                     "model.safetensors": weights(BIG, 2)}, downloads=900))
    hub.add(Repo("google/gated-assistant", {"config.json": b"{}", "model.safetensors": weights(1 << 20, 3)},
                 gated=True, downloads=10))
    return hub


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".onnx")
CONFIG_FILES = {
    "config.json": b'{"model_type": "qwen3", "vocab_size": 151936}',
    "generation_config.json": b'{"eos_token_id": [151645, 151643]}',
    "tokenizer.json": b'{"model": {"type": "BPE"}}' * 4000,
    "tokenizer_config.json": b'{"tokenizer_class": "Qwen2Tokenizer"}',
    "chat_template.jinja": b"{% for m in messages %}{{ m.content }}{% endfor %}",
    "merges.txt": b"a b\n" * 1000,
    "model.safetensors.index.json": b'{"weight_map": {}}',
}


def add_full_repo(hub: StandInHub) -> Repo:
    """A repo with its configs and every kind of weight file a repo ships."""
    files = {"model-00001-of-00002.safetensors": weights(2 << 20, 4), "model-00002-of-00002.safetensors": weights(1 << 20, 5),
             "pytorch_model.bin": weights(1 << 20, 6), "model-q4.gguf": weights(1 << 20, 7),
             "original/consolidated.pth": weights(1 << 20, 8), "training_args.pt": weights(1 << 16, 9)}
    return hub.add(Repo("acme/full-target", {**CONFIG_FILES, **files}, downloads=5))


def weight_files_in_cache(repo: str) -> list[str]:
    storage = Path(os.environ["HF_HOME"]) / "hub" / ("models--" + repo.replace("/", "--"))
    return [p.name for p in storage.rglob("*") if p.name.endswith(WEIGHT_SUFFIXES)]
