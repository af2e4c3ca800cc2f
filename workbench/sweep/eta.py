"""What is left of a running sweep, from what its own servers and runs took so far.

A sweep's time goes mostly to starting servers (25–130 s each for the demo target on a 2-core CPU),
not to its runs (seconds each), so an estimate per completed run is wrong twice: far too high
right after a server start, far too low just before the next. This clock counts the two apart:
the servers still to start times the mean start measured so far, plus the runs still to finish
times the mean run. Until one server has started and one run has finished in this sweep, it uses
what the same model's servers and runs took on this machine before (`known`, stored by
workbench.host.cpu after each local sweep); with neither, it says it cannot tell yet rather than
guess."""

from __future__ import annotations

import statistics
import time
from typing import Callable, Protocol

from workbench import events
from workbench.host import cpu


class RecordTiming(Protocol):
    """Stores what a server start or a run of a model took on this machine (as cpu.record does)."""

    def __call__(self, target: str, start_s: float | None = None, run_s: float | None = None) -> None: ...


class SweepClock:
    def __init__(self, now: Callable[[], float] = time.monotonic,
                 known: dict[str, dict[str, float]] | None = None) -> None:
        self.now = now
        self.known = known or {}   # model folder -> {'start_s', 'run_s'} measured here before
        self.prior: dict[str, float] = {}  # the entry of `known` whose model this sweep serves
        self.servers_total = 0     # servers this sweep starts (as the runner counts them)
        self.servers_started = 0
        self.starting_since: float | None = None
        self.start_s: list[float] = []
        self.runs_total = 0
        self.runs_done = 0
        self.run_since: float | None = None
        self.run_s: list[float] = []
        self.slots: set[int] = set()
        self.finished = False

    def feed(self, event: events.Event) -> None:
        t = self.now()
        if isinstance(event, events.SweepStarted):
            self.runs_total = event.pending
        elif isinstance(event, events.ServerStarting):
            if event.run is None:       # a training server, not one of the sweep's
                return
            if not self.prior:
                # The command names the model it serves: the longest matching folder, so that a
                # draft folder named after its target never stands for the target.
                hits = [m for m in self.known if m and m in event.command]
                self.prior = self.known[max(hits, key=len)] if hits else {}
            self.servers_total = max(self.servers_total, event.servers or 0)
            self.servers_started = max(self.servers_started + 1, event.index or 0)
            self.starting_since = t
            if event.slot is not None:
                self.slots.add(event.slot)
        elif isinstance(event, events.ServerReady):
            self.start_s.append(event.seconds)
            self.starting_since = None
        elif isinstance(event, events.RunStarted):
            self.runs_total = max(self.runs_total, event.total)
            self.run_since = t
        elif isinstance(event, events.RunFailed):
            self.runs_done += 1
            self.run_since = None
        elif isinstance(event, events.RunFinished):
            self.runs_done += 1
            if self.run_since is not None:
                self.run_s.append(t - self.run_since)
            self.run_since = None
        elif isinstance(event, events.SweepFinished):
            self.finished = True

    def seconds_left(self) -> float | None:
        """None until a server start and a run have been measured (in this sweep, or before on this
        machine), or once the sweep has ended."""
        start = statistics.fmean(self.start_s) if self.start_s else self.prior.get("start_s")
        run = statistics.fmean(self.run_s) if self.run_s else self.prior.get("run_s")
        if self.finished or start is None or run is None:
            return None
        t = self.now()
        left = max(0, self.servers_total - self.servers_started) * start
        if self.starting_since is not None:
            left += max(0.0, start - (t - self.starting_since))
        runs_left = max(0, self.runs_total - self.runs_done)
        left += runs_left * run
        if self.run_since is not None and runs_left:
            left -= min(run, t - self.run_since)
        # Servers on parallel slots start and run side by side.
        return max(0.0, left) / max(1, len(self.slots))

    def text(self) -> str:
        left = self.seconds_left()
        if left is None:
            if self.finished:
                return ""
            return ("ETA once a server has started and a run has finished "
                    "(server starts take most of a sweep)")
        minutes, seconds = divmod(int(round(left)), 60)
        if not self.start_s or not self.run_s:
            return f"ETA {minutes} min {seconds:02d} s (from this machine's earlier servers and runs of this model)"
        return f"ETA {minutes} min {seconds:02d} s"


def recording(emit: events.Emit, target: str, record: RecordTiming = cpu.record,
              now: Callable[[], float] = time.monotonic) -> events.Emit:
    """`emit`, also storing what each server start and run of `target` (its model folder) took on
    this machine: the next sweep's ETA, and the Quick demo's tooltip, start from them."""
    started: dict[int, float] = {}

    def wrapped(event: events.Event) -> None:
        if isinstance(event, events.ServerReady):
            record(target, start_s=event.seconds)
        elif isinstance(event, events.RunStarted):
            started[event.run] = now()
        elif isinstance(event, events.RunFinished) and event.run in started:
            record(target, run_s=now() - started.pop(event.run))
        emit(event)

    return wrapped
