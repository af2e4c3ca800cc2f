"""Sweeps on a remote host: start one (launch), find the latest, stop it, pull its database, and
where it writes (remote_db, source_of)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from workbench import messages, store
from workbench.remote.host import RemoteError, RemoteHost


def source_of(host: "RemoteHost", db: str) -> str:
    return f"{host.label}:{db}"


@dataclass
class Launched:
    """Where a remote sweep writes, as the agent's `launch` says it (workbench.messages' record)."""
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
        return messages.decode(json.loads(proc.stdout.strip().splitlines()[-1]), Launched)
    except (ValueError, IndexError):  # not JSON, or not the record (messages.MessageError)
        raise RemoteError(f"{host.label}: the remote Draftbench did not say what it started") from None


def dry_run(host: RemoteHost, plan_text: str, extra: list[str] | None = None,
            db: str | None = None) -> subprocess.CompletedProcess[str]:
    """`draftbench run --dry-run` of the plan on the host (against its vLLM and its database), for
    the runs `extra` asks for: what it printed, on stdout and stderr; nothing starts there.
    RemoteError in one line: the host's own line when its runner refuses the plan (a plan with
    nothing to add repeats to)."""
    argv = host.agent_argv("dry-run", "--data-dir", host.data_dir, *(["--db", db] if db else []), "--", *(extra or []))
    # As long as a launch's preflight may take on the host: a docker image's vLLM is asked by running it.
    proc = host.call(argv, stdin=plan_text, timeout=600, check=False)
    if proc.returncode == 0:
        return proc
    lines = proc.stderr.strip().splitlines()
    if proc.returncode in (1, 2) and lines and lines[-1].startswith("draftbench: "):
        raise RemoteError(f"{host.label}: {lines[-1].removeprefix('draftbench: ')}")
    raise RemoteError(host.explain(proc.returncode, proc.stderr))


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
