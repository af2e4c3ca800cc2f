"""The desktop app's own CPU over a measurement window, stored with the run (`app_cpu_s`) beside
the load generator's (`client_cpu_s`).

On a small host the app shares the cores with the server it measures: a GUI drawing at full rate
slows a vLLM CPU server and can change which configuration wins. The app names itself to the
runner it starts (DRAFTBENCH_APP_PID); the runner reads that process's CPU time (user + system,
all its threads, not its children: the runner is one) at the window's start and end, as the
client processes read their own. A run where the app took more than 5 % of one core is flagged.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

import psutil

APP_PID_ENV = "DRAFTBENCH_APP_PID"
# Above this share of one core over the window, the app may have slowed what was measured.
SHARE_WARNING = 0.05


@dataclass(frozen=True)
class Watched:
    """The app's process: its pid, when it started (a pid the kernel gives to another process
    later is not read), and the host it runs on (a job on another host reads nothing)."""
    pid: int
    started: float
    host: str


def from_env(environ: dict[str, str] | None = None) -> Watched | None:
    """The process DRAFTBENCH_APP_PID names, or None when it is unset, not a pid, or gone."""
    raw = (os.environ if environ is None else environ).get(APP_PID_ENV, "").strip()
    if not raw.isdigit() or int(raw) <= 0:
        return None
    try:
        started = psutil.Process(int(raw)).create_time()
    except (psutil.Error, OSError):
        return None
    return Watched(int(raw), started, platform.node())


def cpu_seconds(app: Watched | None) -> float | None:
    """The process's CPU time so far (user + system), or None where it cannot be read: no app,
    another host, the app gone (closed during the run) or its pid reused."""
    if app is None or app.host != platform.node():
        return None
    try:
        proc = psutil.Process(app.pid)
        if abs(proc.create_time() - app.started) > 0.01:
            return None
        times = proc.cpu_times()
    except (psutil.Error, OSError):
        return None
    return times.user + times.system


class Window:
    """The app's CPU over one window: made at its start, `stop` at its end."""

    def __init__(self, app: Watched | None):
        self.app = app
        self.start = cpu_seconds(app)

    def stop(self) -> float | None:
        end = cpu_seconds(self.app)
        if self.start is None or end is None:
            return None
        return max(0.0, end - self.start)


def warning(app_cpu_s: float | None, window_s: float | None) -> str | None:
    """The run's warning when the app took more than SHARE_WARNING of one core over the window."""
    if app_cpu_s is None or not window_s or window_s <= 0:
        return None
    share = app_cpu_s / window_s
    if share <= SHARE_WARNING:
        return None
    return (f"the Draftbench app used {100 * share:.1f} % of one CPU core during the window (more than "
            f"{100 * SHARE_WARNING:.0f} %): it shares the host with the server it measures and may have "
            "slowed it; keep the Live page hidden or the app closed during windows that matter")
