"""The one child-process helper: own group, stop with a grace period, and `alive` by pid."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from workbench.host import process

# A leader that starts a grandchild in its group and ignores SIGTERM, so only SIGKILL ends them.
STUBBORN = r"""
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"])
print(child.pid, flush=True)
time.sleep(60)
"""


def _gone(pid: int, within_s: float = 5.0) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < within_s:
        if not process.alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_child_runs_in_its_own_group_and_alive_tells_a_zombie_from_a_running_process():
    proc = process.start([sys.executable, "-c", "import time; time.sleep(0.5)"])
    try:
        assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)
        assert process.alive(proc.pid)
    finally:
        proc.wait(5)
    # Exited and reaped: gone. A pid of no process, 0 and negative numbers are never alive.
    assert not process.alive(proc.pid)
    assert not process.alive(0) and not process.alive(-1)
    assert not process.send(0) and not process.send(proc.pid)


def test_alive_reaps_an_exited_child_that_nobody_waited_for():
    pid = subprocess.Popen([sys.executable, "-c", "pass"]).pid
    assert _gone(pid)


def test_stop_group_kills_what_ignores_sigterm_after_the_grace_period():
    proc = process.start([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, text=True)
    grandchild = int(proc.stdout.readline())
    assert process.alive(grandchild)
    t0 = time.monotonic()
    code = process.stop_group(proc, grace_s=0.5)
    assert code == -signal.SIGKILL and time.monotonic() - t0 < 10
    assert _gone(grandchild)  # not only the leader: the whole group
