"""A real OpenSSH server on 127.0.0.1 for the remote-host tests: a throwaway host key and client
key in a temporary folder, its own config and pid file; nothing of the system's ssh setup is used."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from workbench import launch, remote

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


@dataclass
class Sshd:
    port: int
    folder: Path
    key: Path          # the authorized client key
    wrong_key: Path    # a key the server does not know
    client_config: Path
    proc: subprocess.Popen

    def host(self, **kw) -> remote.RemoteHost:
        """This machine's Python and this checkout, reached over SSH as if it were a GPU server."""
        root = Path(__file__).resolve().parents[2]
        kw.setdefault("identity_file", str(self.key))
        kw.setdefault("python", sys.executable)
        kw.setdefault("data_dir", str(self.folder / "remote-data"))
        kw.setdefault("env", {"PYTHONPATH": str(root)})
        return remote.RemoteHost(
            host="127.0.0.1", port=self.port, config_file=str(self.client_config),
            options=["StrictHostKeyChecking=accept-new", f"UserKnownHostsFile={self.folder / 'known_hosts'}"],
            connect_timeout=10, **kw)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def free_port() -> int:
    # Below the ephemeral range, as for a vLLM server: a client's connection cannot take it first.
    return launch.free_port()


def keygen(path: Path, kind: str = "ed25519") -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "draftbench-test", "-f", str(path)],
                   check=True, stdin=subprocess.DEVNULL)
    return path


def start(folder: Path) -> Sshd:
    folder.mkdir(parents=True, exist_ok=True)
    host_key = keygen(folder / "host_key")
    key = keygen(folder / "client_key")
    wrong = keygen(folder / "wrong_key")
    shutil.copy(folder / "client_key.pub", folder / "authorized_keys")
    port = free_port()
    config = folder / "sshd_config"
    config.write_text(f"""
Port {port}
ListenAddress 127.0.0.1
HostKey {host_key}
PidFile {folder / 'sshd.pid'}
AuthorizedKeysFile {folder / 'authorized_keys'}
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
LogLevel ERROR
""")
    client = folder / "ssh_config"
    client.write_text("# empty: the tests do not read the user's ~/.ssh/config\n")
    if os.geteuid() == 0 and not os.path.isdir("/run/sshd"):
        # sshd run by root insists on its (empty) privilege-separation folder, which the init
        # system normally creates at boot.
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    proc = subprocess.Popen([SSHD, "-f", str(config), "-D", "-e"], stdin=subprocess.DEVNULL,
                            stdout=open(folder / "sshd.log", "ab"), stderr=subprocess.STDOUT)
    deadline = time.time() + 20
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("sshd exited: " + (folder / "sshd.log").read_text()[-2000:])
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    return Sshd(port, folder, key, wrong, client, proc)
