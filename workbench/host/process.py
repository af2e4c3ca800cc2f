"""Child processes in a process group of their own: started, signalled, stopped with a grace
period, and asked after by pid.

Its own session (hence group) lets one signal reach everything a child started (vLLM's engine
processes, a trainer's workers) and keeps a terminal's Ctrl+C or hang-up from reaching it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from typing import Any


# Popen[Any]: text or bytes on its pipes is the caller's choice, made in the keywords.
def start(argv: list[str], **popen: Any) -> subprocess.Popen[Any]:
    """`argv` in a new session; keyword arguments go to Popen. Its group id is its pid."""
    return subprocess.Popen(argv, start_new_session=True, **popen)


def die_with_parent() -> None:
    """A preexec function: the kernel kills the child when the process that started it dies,
    even by SIGKILL, which leaves it no chance to stop the child itself (Linux only)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def signal_group(pgid: int, sig: int = signal.SIGTERM) -> bool:
    """False when no such group exists (any more)."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


def send(pid: int, sig: int = signal.SIGTERM) -> bool:
    """`sig` to one process; False when it is gone."""
    if pid <= 0:  # 0 and negative numbers would signal whole groups
        return False
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def stop_group(proc: subprocess.Popen[Any], pgid: int | None = None, grace_s: float = 20.0,
               sig: int = signal.SIGTERM) -> int | None:
    """`sig` to the whole group, then SIGKILL to whatever is left of it after `grace_s` — also
    when the leader has exited, since processes it started may still run. Returns the leader's
    exit status (None if it could not be reaped). `pgid` defaults to the leader's pid; pass the
    one kept at start when the leader may already be reaped."""
    pgid = proc.pid if pgid is None else pgid
    signal_group(pgid, sig)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    signal_group(pgid, signal.SIGKILL)
    try:
        return proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        return None


def alive(pid: int) -> bool:
    """Whether `pid` runs: a zombie is not running, whether it is our child (reaped here) or not.
    For a child held as a Popen, ask `proc.poll()` instead, which keeps its exit status."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        pass  # not our child: only /proc tells a zombie apart
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
