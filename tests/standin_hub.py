"""A stand-in for the Hugging Face Hub, which cannot be reached from the machines these tests run
on. It answers the four requests `huggingface_hub.snapshot_download` makes (repo info, tree
listing, HEAD and GET of a file) in the shapes the Hub documents, or refuses them the way the Hub
refuses a gated repository to a caller without a token (HTTP 401 with `X-Error-Code: GatedRepo`).
Point `HF_ENDPOINT` at `url`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class StandinHub:
    def __init__(self, files: dict[str, bytes], gated: bool = False):
        self.files = files
        self.gated = gated
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, body: bytes = b"", headers: dict | None = None, head: bool = False):
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def _answer(self, head: bool):
                hub.requests.append(f"{self.command} {self.path}")
                if hub.gated and "authorization" not in {k.lower() for k in self.headers}:
                    body = json.dumps({"error": "Access to dataset is restricted. You must have access to it "
                                                "and be authenticated to access it. Please log in."}).encode()
                    return self._send(401, body, {"X-Error-Code": "GatedRepo", "Content-Type": "application/json"},
                                      head)
                path = self.path.split("?")[0]
                if path.startswith("/api/datasets/") and "/revision/" in path:
                    repo = path[len("/api/datasets/"):].split("/revision/")[0]
                    body = {"id": repo, "sha": COMMIT, "private": False, "gated": False,
                            "siblings": [{"rfilename": name} for name in hub.files]}
                    return self._send(200, json.dumps(body).encode(), {"Content-Type": "application/json"}, head)
                if path.startswith("/api/datasets/") and f"/tree/{COMMIT}" in path:
                    body = [{"type": "file", "path": name, "size": len(data),
                             "oid": hashlib.sha1(data).hexdigest()} for name, data in hub.files.items()]
                    return self._send(200, json.dumps(body).encode(), {"Content-Type": "application/json"}, head)
                if path.startswith("/datasets/") and f"/resolve/{COMMIT}/" in path:
                    name = path.split(f"/resolve/{COMMIT}/", 1)[1]
                    if name in hub.files:
                        data = hub.files[name]
                        headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{hashlib.sha1(data).hexdigest()}"',
                                   "Content-Type": "application/octet-stream"}
                        return self._send(200, data, headers, head)
                return self._send(404, b'{"error": "Entry not found"}', {"X-Error-Code": "EntryNotFound"}, head)

            def do_GET(self):
                self._answer(head=False)

            def do_HEAD(self):
                self._answer(head=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "StandinHub":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
