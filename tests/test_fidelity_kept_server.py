"""bench/gpu_fidelity.py can keep a configuration's server for the next command: the record it
leaves is attached to only for the same configuration and while the server answers, and ending it
ends the whole process group. Checked against a real process in its own group (a small HTTP server
that answers /health), as vLLM's would be."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from helpers.recorded import bench_module
from workbench import launch
from workbench.host import process

fidelity = bench_module("gpu_fidelity")

SERVER = """
import http.server, subprocess, sys
# An engine process beside it in its group, deaf to SIGTERM: only the group's SIGKILL ends it.
child = subprocess.Popen([sys.executable, "-c",
                          "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
open(sys.argv[2], "w").write(str(child.pid))
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
"""


def _serve(port: int, child_pid: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(port), str(child_pid)], start_new_session=True)
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
    proc = _serve(port, tmp_path / "child.pid")
    base = f"http://127.0.0.1:{port}"
    kept = tmp_path / "server.json"
    fidelity.record(str(kept), "baseline", "Server(max_num_seqs=256)", base, "k", proc.pid)
    child = int((tmp_path / "child.pid").read_text())
    try:
        assert fidelity.attach(str(kept), "baseline", "Server(max_num_seqs=256)")["base_url"] == base
        # Another config, or the same label served differently, starts a server of its own.
        assert fidelity.attach(str(kept), "ngram-n2", "Server(max_num_seqs=256)") is None
        assert fidelity.attach(str(kept), "baseline", "Server(max_num_seqs=64)") is None
        assert fidelity.attach(None, "baseline", "Server(max_num_seqs=256)") is None
        assert process.alive(child)
        fidelity.stop_kept(str(kept))
        assert not process.alive(proc.pid), "the kept server was left running"
        for _ in range(50):
            if not process.alive(child):
                break
            time.sleep(0.1)
        assert not process.alive(child), "the process beside the leader was left running"
        assert not kept.exists()
    finally:
        proc.kill()
        process.send(child, signal.SIGKILL)
    # A record whose server is gone is not attached to, and ending it again is harmless.
    fidelity.record(str(kept), "baseline", "Server(max_num_seqs=256)", base, "k", proc.pid)
    assert fidelity.attach(str(kept), "baseline", "Server(max_num_seqs=256)") is None
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
