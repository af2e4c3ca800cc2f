"""Remote hosts: runs on a GPU server reached over SSH, streamed back into the local database.

The system OpenSSH client does the connecting, so ~/.ssh/config, the agent, ProxyJump and known
hosts all behave as in a terminal. On the host, `python -m workbench.remote.agent` does the work
(see that module); the remote database stays the source of truth and the local one mirrors its
rows by primary key (workbench.store.mirror), so a reconnect resumes from the highest id it holds
without duplicates.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import statistics
import subprocess
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

import tomli_w

from workbench import paths, store

DEFAULT_DATA_DIR = "~/.local/share/draftbench"


class RemoteError(Exception):
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
    def parse(cls, spec: str, **kw) -> "RemoteHost":
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

    def call(self, remote_argv: list[str], stdin: str | bytes | None = None, timeout: float = 120,
             binary: bool = False) -> subprocess.CompletedProcess:
        """Run a command on the host and wait; raise RemoteError with one line on failure."""
        try:
            proc = subprocess.run(self.ssh_argv(remote_argv), input=stdin, capture_output=True,
                                  timeout=timeout, text=not binary, stdin=None if stdin is not None else subprocess.DEVNULL)
        except FileNotFoundError:
            raise RemoteError("no `ssh` client on this machine: install OpenSSH (openssh-client)") from None
        except subprocess.TimeoutExpired:
            raise RemoteError(f"{self.label} did not answer within {timeout:.0f} s") from None
        if proc.returncode != 0:
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

    def to_table(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if v not in (None, [], {}) and k != "connect_timeout"}
        if self.connect_timeout != 10:
            out["connect_timeout"] = self.connect_timeout
        return out


def remotes_dir() -> Path:
    return paths.config_dir() / "remotes"


def load(path: Path, **kw) -> RemoteHost:
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
def check(host: RemoteHost, timeout: float = 120) -> dict:
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


def source_of(host: "RemoteHost", db: str) -> str:
    return f"{host.label}:{db}"


@dataclass
class Launched:
    pid: int
    events: str
    db: str
    plan: str
    log: str


def launch(host: RemoteHost, plan_text: str, extra: list[str] | None = None, db: str | None = None) -> Launched:
    """Send the plan and start the remote runner detached; returns where it writes."""
    argv = host.agent_argv("launch", "--data-dir", host.data_dir, *(["--db", db] if db else []), "--", *(extra or []))
    proc = host.call(argv, stdin=plan_text, timeout=120)
    try:
        info = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise RemoteError(f"{host.label}: the remote Draftbench did not say what it started") from None
    return Launched(info["pid"], info["events"], info["db"], info["plan"], info["log"])


class Stream:
    """Follows a remote sweep: events out to `events_out`, rows into the local database; the SSH
    connection is re-established (with backoff) when it drops, resuming where the mirror stands."""

    def __init__(self, host: RemoteHost, launched: Launched, local_db: store.Database,
                 events_out: TextIO, on_rows=None, on_status: Callable[[str], None] | None = None,
                 retry_for_s: float = 600.0):
        self.host = host
        self.launched = launched
        self.mirror = store.Mirror(local_db, source_of(host, launched.db))
        self.events_out = events_out
        self.offset = 0
        self.on_status = on_status or (lambda s: None)
        self.retry_for_s = retry_for_s
        self.proc: subprocess.Popen | None = None
        self._started: dict[int, float] = {}
        self.lags: dict[str, list[float]] = {}  # per table: seconds from a row's time on the host to its commit here
        self.mirror.on_rows = self._rows(on_rows)
        self.connections = 0
        self.stopped = False

    def _rows(self, then):
        def on_rows(table: str, rows: list[dict], now: float) -> None:
            if table in ("samples", "positions", "telemetry", "logs"):
                self.lags.setdefault(table, []).extend(now - self._epoch(table, r) for r in rows if r.get("t"))
            if then:
                then(table, rows, now)
        return on_rows

    def _epoch(self, table: str, row: dict) -> float:
        if table not in ("samples", "positions"):
            return row["t"]
        # Their t counts from the start of the measurement, which follows the run's `started`
        # by the initial scrape: the lag derived from it is an upper bound.
        started = self._started.get(row["run_id"])
        if started is None:
            found = store.run(self.mirror.db, row["run_id"])
            started = self._started[row["run_id"]] = (found["started"] if found else None) or 0.0
        return started + row["t"]

    def lag_summary(self) -> str:
        """Clocks of both ends are compared as they are: on different hosts, keep them in sync (NTP)."""
        parts = []
        for table, lags in sorted(self.lags.items()):
            lags = sorted(lags)
            parts.append(f"{table} {len(lags)} rows p50 {statistics.median(lags) * 1000:.0f} ms "
                         f"p90 {lags[int(0.9 * (len(lags) - 1))] * 1000:.0f} ms max {lags[-1] * 1000:.0f} ms")
        return (f"lag from a row's time on the host to the local database over {self.connections} "
                f"connection(s): " + ("; ".join(parts) or "no timed rows streamed"))

    def local_event(self, line: str) -> str:
        """The event with the host's run and experiment ids replaced by the local ones, so the Live
        page finds the rows it names."""
        try:
            event = json.loads(line)
        except ValueError:
            return line
        for key, table in (("run", "runs"), ("experiment", "experiments")):
            if isinstance(event.get(key), int):
                event[key] = self.mirror.ids[table].get(event[key], event[key])
        return json.dumps(event, separators=(",", ":"))

    def _connect_once(self) -> bool:
        """One SSH connection's worth of streaming; True once the host said the sweep ended."""
        argv = self.host.ssh_argv(self.host.agent_argv(
            "follow", "--db", self.launched.db, "--events", self.launched.events,
            "--offset", str(self.offset), "--pid", str(self.launched.pid)))
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        self.connections += 1
        errors: list[str] = []
        reader = threading.Thread(target=lambda: errors.extend(self.proc.stderr), daemon=True)
        reader.start()
        self.proc.stdin.write(json.dumps(self.mirror.state()) + "\n")
        self.proc.stdin.close()
        ended = False
        self.heard = False
        for line in self.proc.stdout:
            self.heard = True
            try:
                message = json.loads(line)
            except ValueError:
                continue
            kind = message.get("k")
            if kind == "ev":
                self.events_out.write(self.local_event(message["line"]) + "\n")
                self.events_out.flush()
                self.offset = message["off"]
            elif kind in ("rows", "reset"):
                try:
                    self.mirror.apply(message)
                except store.DatabaseError as exc:
                    self.stop()
                    raise RemoteError(f"the local database refused rows of {message.get('t')} "
                                      f"from {self.host.label}: {exc}") from None
            elif kind == "end":
                ended = True
        code = self.proc.wait()
        reader.join(timeout=2)
        if not ended and not self.stopped:
            self.last_error = self.host.explain(code, "".join(errors)) if code else "the stream ended early"
        return ended

    def run(self) -> None:
        deadline = time.time() + self.retry_for_s
        backoff = 0.5
        while not self.stopped:
            if self._connect_once():
                return
            if self.stopped:
                return
            if self.heard:  # the link worked for a while: a fresh allowance for this drop
                deadline, backoff = time.time() + self.retry_for_s, 0.5
            if time.time() > deadline:
                raise RemoteError(f"lost {self.host.label} and could not reconnect: {self.last_error}")
            self.on_status(f"connection to {self.host.label} lost ({self.last_error}); reconnecting")
            time.sleep(backoff)
            backoff = min(backoff * 2, 10.0)

    def cut(self) -> None:
        """Kill the SSH client (the remote sweep goes on); `run` reconnects."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()

    def stop(self) -> None:
        self.stopped = True
        self.cut()


def latest(host: RemoteHost, db: str | None = None) -> Launched:
    """The host's most recent sweep, to follow again after the laptop was closed."""
    proc = host.call(host.agent_argv("latest", "--db", db or remote_db(host)), timeout=60)
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    if not info:
        raise RemoteError(f"{host.label}: no sweep in {db or remote_db(host)}")
    # A finished sweep's pid may belong to another process by now: not followed.
    return Launched(0 if info["finished"] else info["pid"], info["events"] or "", info["db"], "", "")


def stop(host: RemoteHost, launched: Launched) -> bool:
    """Stop the sweep on the host (as Stop does locally); False if it had already ended."""
    proc = host.call(host.agent_argv("stop", "--pid", str(launched.pid)), timeout=60)
    return json.loads(proc.stdout.strip().splitlines()[-1]).get("stopped", False)


def pull(host: RemoteHost, db: str, out: str | Path) -> Path:
    """The host's whole database, copied consistently (SQLite backup on the host), written to out."""
    out = Path(out)
    proc = host.call(host.agent_argv("dump", "--db", db), timeout=3600, binary=True)
    if not proc.stdout.startswith(b"SQLite format 3"):
        raise RemoteError(f"{host.label}: the remote copy of {db} is not an SQLite database")
    tmp = out.with_name(out.name + ".part")
    tmp.write_bytes(proc.stdout)
    tmp.replace(out)
    store.open_db(out, readonly=True)  # says so in one line if what arrived is unusable
    return out


def remote_db(host: RemoteHost) -> str:
    return f"{host.data_dir.rstrip('/')}/results.sqlite"
