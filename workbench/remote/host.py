"""A remote host reached over SSH: how to address it, run the agent there and explain failures;
hosts saved by name in the config dir (load/save), and the reachability check."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, overload

import tomli_w

from workbench import paths
from workbench.errors import DraftbenchError

DEFAULT_DATA_DIR = "~/.local/share/draftbench"


class RemoteError(DraftbenchError):
    """A one-line reason the remote host cannot be used."""


@dataclass
class RemoteHost:
    host: str
    user: str | None = None
    port: int | None = None
    identity_file: str | None = None
    python: str = "python3"          # the interpreter on the host that has Draftbench (and vLLM)
    venv: str | None = None          # or a virtualenv on the host: its bin/python is used
    data_dir: str = DEFAULT_DATA_DIR
    env: dict[str, str] = field(default_factory=dict)   # extra environment for the remote commands
    options: list[str] = field(default_factory=list)    # extra `-o Key=Value` for ssh
    config_file: str | None = None   # an ssh_config other than ~/.ssh/config
    connect_timeout: int = 10

    @property
    def label(self) -> str:
        return (f"{self.user}@" if self.user else "") + self.host + (f":{self.port}" if self.port else "")

    @property
    def remote_python(self) -> str:
        return f"{self.venv.rstrip('/')}/bin/python" if self.venv else self.python

    @classmethod
    def parse(cls, spec: str, **kw: Any) -> "RemoteHost":
        """`[user@]host[:port]`, or the name of a host saved in the config dir."""
        saved = remotes_dir() / f"{spec}.toml"
        if re.fullmatch(r"[\w.-]+", spec) and saved.is_file():
            return load(saved, **kw)
        m = re.fullmatch(r"(?:([^@\s:]+)@)?([^@\s:]+|\[[0-9a-fA-F:]+\])(?::(\d+))?", spec)
        if not m or m.group(2).startswith("-"):
            raise RemoteError(f"{spec!r} is not a host: write [user@]host[:port] or a saved host's name")
        return cls(host=m.group(2).strip("[]"), user=m.group(1), port=int(m.group(3)) if m.group(3) else None, **kw)

    def ssh_argv(self, remote_argv: list[str], extra: tuple[str, ...] = ()) -> list[str]:
        argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={self.connect_timeout}",
                # A dead link is noticed in ~30 s instead of the TCP timeout's many minutes.
                "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3"]
        if self.config_file:
            argv += ["-F", self.config_file]
        if self.port:
            argv += ["-p", str(self.port)]
        if self.user:
            argv += ["-l", self.user]
        if self.identity_file:
            argv += ["-i", os.path.expanduser(self.identity_file), "-o", "IdentitiesOnly=yes"]
        for opt in self.options:
            argv += ["-o", opt]
        argv += [*extra, "--", self.host, self.remote_command(remote_argv)]
        return argv

    def remote_command(self, remote_argv: list[str]) -> str:
        # sshd hands the command to the user's login shell as ONE string, whatever argv ssh got:
        # every word is quoted, or a path with a space, a `;` or `$(...)` in a plan name or a
        # data dir would be run by that shell.
        words = [f"{k}={v}" for k, v in self.env.items() if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)]
        prefix = ["env", *words] if words else []
        return " ".join(shlex.quote(w) for w in [*prefix, *remote_argv])

    def agent_argv(self, *args: str) -> list[str]:
        return [self.remote_python, "-m", "workbench.remote.agent", *args]

    # Its output is text unless `binary` asks for bytes: the overloads tell callers which they get.
    @overload
    def call(self, remote_argv: list[str], stdin: str | bytes | None = None, timeout: float = 120,
             binary: Literal[False] = False, check: bool = True) -> subprocess.CompletedProcess[str]: ...

    @overload
    def call(self, remote_argv: list[str], stdin: str | bytes | None = None, timeout: float = 120, *,
             binary: Literal[True], check: bool = True) -> subprocess.CompletedProcess[bytes]: ...

    def call(self, remote_argv: list[str], stdin: str | bytes | None = None, timeout: float = 120,
             binary: bool = False, check: bool = True) -> subprocess.CompletedProcess[str] | subprocess.CompletedProcess[bytes]:
        """Run a command on the host and wait; raise RemoteError with one line on failure (without
        `check`, only when it could not run: the caller reads the exit status)."""
        try:
            proc = subprocess.run(self.ssh_argv(remote_argv), input=stdin, capture_output=True,
                                  timeout=timeout, text=not binary, stdin=None if stdin is not None else subprocess.DEVNULL)
        except FileNotFoundError:
            raise RemoteError("no `ssh` client on this machine: install OpenSSH (openssh-client)") from None
        except subprocess.TimeoutExpired:
            raise RemoteError(f"{self.label} did not answer within {timeout:.0f} s") from None
        if proc.returncode != 0 and check:
            err = proc.stderr.decode("utf-8", "replace") if binary else proc.stderr
            raise RemoteError(self.explain(proc.returncode, err))
        return proc

    def explain(self, code: int, stderr: str) -> str:
        """The one line that says why a command over SSH failed."""
        err = stderr.strip()
        last = err.splitlines()[-1] if err else ""
        if code == 255:
            low = err.lower()
            if "permission denied" in low:
                return (f"{self.label} refused the key (permission denied): check the identity file "
                        "or that its public key is in the host's authorized_keys")
            if "could not resolve hostname" in low or "name or service not known" in low:
                return f"{self.label} is unreachable: the host name does not resolve"
            if "connection refused" in low:
                return f"{self.label} is unreachable: connection refused (no SSH server on that port?)"
            if "timed out" in low or "no route to host" in low or "network is unreachable" in low:
                return f"{self.label} is unreachable: {last.split(': ')[-1]}"
            if "host key verification failed" in low:
                return f"{self.label}: host key verification failed (connect once with ssh to accept the key)"
            return f"{self.label}: ssh failed: {last or 'exit status 255'}"
        if "No module named workbench" in err or "No module named 'workbench'" in err:
            return f"Draftbench is not installed on {self.label} (in {self.remote_python}): install it there, or set the remote environment"
        if code == 127 or "No such file or directory" in last or "not found" in last:
            return f"no Python at {self.remote_python} on {self.label}: set the remote environment (venv or python)"
        return f"{self.label}: {last or f'remote command failed with status {code}'}"

    def to_table(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if v not in (None, [], {}) and k != "connect_timeout"}
        if self.connect_timeout != 10:
            out["connect_timeout"] = self.connect_timeout
        return out


def remotes_dir() -> Path:
    return paths.config_dir() / "remotes"


def load(path: Path, **kw: Any) -> RemoteHost:
    try:
        table = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RemoteError(f"cannot read the host file {path}: {exc}") from None
    table = {**table.get("remote", table), **kw}
    try:
        return RemoteHost(**table)
    except TypeError as exc:
        raise RemoteError(f"{path}: {exc}") from None


def save(name: str, host: RemoteHost) -> Path:
    if not re.fullmatch(r"[\w.-]+", name):
        raise RemoteError(f"{name!r}: a host name may use letters, digits, '.', '-' and '_'")

    remotes_dir().mkdir(parents=True, exist_ok=True)
    path = remotes_dir() / f"{name}.toml"
    paths.write_atomic(path, tomli_w.dumps({"remote": host.to_table()}))
    return path


# --- check -------------------------------------------------------------------------------------
def check(host: RemoteHost, timeout: float = 120) -> dict[str, Any]:
    """Reachable, Draftbench there, what its `doctor` says and which GPUs it sees; or RemoteError."""
    t0 = time.time()
    proc = host.call(host.agent_argv("check", "--data-dir", host.data_dir), timeout=timeout)
    try:
        info = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise RemoteError(f"{host.label}: the remote Draftbench gave no answer to the check "
                          "(an older version?)") from None
    info["seconds"] = time.time() - t0
    return info
