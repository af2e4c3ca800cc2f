"""bench/gpu_fidelity.py can keep a configuration's server for the next command: the record it
leaves is attached to only for the same configuration and while the server answers, and ending it
ends the whole process group. Checked against a real process in its own group (a small HTTP server
that answers /health), as vLLM's would be."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx

from helpers.recorded import bench_module
from workbench import launch

fidelity = bench_module("gpu_fidelity")

SERVER = """
import http.server, sys
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
"""


def _serve(port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(port)], start_new_session=True)
    for _ in range(100):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("the stand-in server did not answer")


def test_a_kept_server_is_attached_for_its_own_config_and_ended_with_its_group(tmp_path):
    port = launch.free_port()
    proc = _serve(port)
    record = {"label": "baseline", "base_url": f"http://127.0.0.1:{port}", "api_key": "k", "pgid": proc.pid}
    kept = tmp_path / "server.json"
    kept.write_text(json.dumps(record))
    try:
        assert fidelity.attach(str(kept), "baseline") == record
        assert fidelity.attach(str(kept), "ngram-n2") is None  # another config starts its own server
        assert fidelity.attach(None, "baseline") is None
        fidelity.stop_kept(str(kept))
        assert proc.wait(timeout=10) is not None
        assert not kept.exists()
    finally:
        proc.kill()
    # A record whose server is gone is not attached to, and ending it again is harmless.
    kept.write_text(json.dumps(record))
    assert fidelity.attach(str(kept), "baseline") is None
    fidelity.stop_kept(str(kept))
    assert not kept.exists()


def test_keep_server_without_a_file_is_refused_in_one_line(capsys):
    sys_argv = sys.argv
    sys.argv = ["gpu_fidelity.py", "--keep-server", "--out", "x"]
    try:
        try:
            fidelity.main()
        except SystemExit as e:
            assert e.code == 2
        else:
            raise AssertionError("--keep-server without --server-file was accepted")
    finally:
        sys.argv = sys_argv
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("--keep-server needs --server-file: the next command finds the kept server through it")
