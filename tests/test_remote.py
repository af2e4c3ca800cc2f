"""Remote hosts over SSH, against a real OpenSSH server started on 127.0.0.1 with throwaway keys;
the "remote" environment is this machine's Python and this checkout, with its own data folder."""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import sshd as sshd_mod
from conftest import ROOT
from workbench import remote, store

pytestmark = pytest.mark.skipif(not os.path.exists(sshd_mod.SSHD), reason="needs OpenSSH's sshd (scripts/bootstrap.sh installs it)")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    server = sshd_mod.start(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def no_agent(monkeypatch):
    # Only the throwaway keys count, whatever agent the machine running the tests has.
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def test_check_reports_doctor_and_gpus(sshd):
    info = remote.check(sshd.host())
    doctor = dict(map(tuple, info["doctor"]))
    assert doctor["draftbench"] == info["version"]
    assert "vllm" in doctor and "gpus" in doctor
    assert info["accelerator"] in ("none", "cuda", "rocm")
    assert info["python"] == sys.executable


def test_check_from_the_cli(sshd):
    host = sshd.host()
    proc = cli("remote", "check", f"127.0.0.1:{sshd.port}", "--identity", str(sshd.key),
               "--python", sys.executable, "--data-dir", host.data_dir, "--env", f"PYTHONPATH={ROOT}",
               "--ssh-config", str(sshd.client_config),
               "-o", "StrictHostKeyChecking=accept-new", "-o", f"UserKnownHostsFile={sshd.folder / 'known_hosts'}")
    assert proc.returncode == 0, proc.stderr
    assert "reachable" in proc.stdout and "draftbench" in proc.stdout and "gpus" in proc.stdout


@pytest.mark.parametrize("case,expected", [
    ("wrong_key", "refused the key (permission denied)"),
    ("unreachable", "is unreachable: connection refused"),
    ("no_draftbench", "Draftbench is not installed on"),
    ("no_python", "no Python at"),
])
def test_failures_give_one_clear_line(sshd, case, expected):
    if case == "wrong_key":
        host = sshd.host(identity_file=str(sshd.wrong_key))
    elif case == "unreachable":
        host = sshd.host()
        host.port = sshd_mod.free_port()  # nothing listens there
    elif case == "no_draftbench":
        # A bare virtualenv of the same Python: no Draftbench in it and this checkout not on its path.
        bare = sshd.folder / "bare-venv"
        if not bare.exists():
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
        host = sshd.host(env={}, venv=str(bare))
    else:
        host = sshd.host(python="/nonexistent/bin/python3")
    with pytest.raises(remote.RemoteError) as err:
        remote.check(host, timeout=60)
    message = str(err.value)
    assert expected in message, message
    assert "\n" not in message and "Traceback" not in message
    # The CLI says the same in one line, exit status 2.
    args = ["remote", "check", host.label, "--python", host.remote_python, "--data-dir", host.data_dir,
            "--ssh-config", host.config_file, *sum((["-o", o] for o in host.options), [])]
    if host.identity_file:
        args += ["--identity", host.identity_file]
    for k, v in host.env.items():
        args += ["--env", f"{k}={v}"]
    proc = cli(*args, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and expected in proc.stderr, proc.stderr


def test_quoting_keeps_shell_words_inert(sshd, tmp_path):
    # A data dir full of shell syntax reaches the host as one literal path.
    odd = str(sshd.folder / "data dir; touch PWNED $(touch PWNED2) 'q'")
    info = remote.check(sshd.host(data_dir=odd))
    assert info["data_dir"] == odd
    assert not (Path.home() / "PWNED").exists() and not (Path.home() / "PWNED2").exists()
