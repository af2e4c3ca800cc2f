"""Where a sweep's server jobs run: the runner is given an executor and hands it the work.

`ThreadExecutor` runs them here, one thread per GPU slot; `workbench.sweep.cluster.RayExecutor`
runs them as Ray tasks. Either way every job writes through the runner's one writer
(workbench.sweep.outbox), so the rows are the same wherever the servers ran.
"""

from __future__ import annotations

import queue
import threading
from typing import Protocol

from workbench.host.slots import Slot
from workbench.sweep import outbox
from workbench.sweep.job import Context, ServerJob, Work


class Executor(Protocol):
    def run(self, works: list[Work], ctx: Context, writer: outbox.Writer) -> int:
        """Every piece of work's job run to its end, or until `stop`; returns how many servers it
        started. On an interrupt it stops what is in flight and raises it again."""

    def stop(self) -> None:
        """From another thread (Stop): no new server starts; those in flight stop at once."""


class ThreadExecutor:
    """The jobs on this host: each slot a thread running one job after another, as many servers
    at once as there are slots. One slot is the serial sweep, in plan order."""

    def __init__(self, slots: list[Slot] | None = None):
        self.slots = slots or [Slot(0, None)]
        self.cancelled = False
        self.jobs: list[ServerJob] = []
        self._lock = threading.Lock()

    def run(self, works: list[Work], ctx: Context, writer: outbox.Writer) -> int:
        todo: queue.Queue[Work] = queue.Queue()
        for work in works:
            todo.put(work)
        errors: list[BaseException] = []
        started = [0]

        def slot_loop(slot: Slot) -> None:
            sender = writer.sender()
            while not self.cancelled:
                try:
                    work = todo.get_nowait()
                except queue.Empty:
                    return
                job = ServerJob(ctx, work, slot, sender)
                with self._lock:
                    self.jobs.append(job)
                    started[0] += 1
                    # A Stop that came after this loop's check must still reach the new job.
                    job.cancelled = self.cancelled
                try:
                    job.run()
                except BaseException as exc:  # noqa: BLE001 - raised again in the runner's thread
                    errors.append(exc)
                    return

        threads = [threading.Thread(target=slot_loop, args=(slot,), daemon=True, name=f"slot-{slot.index}")
                   for slot in self.slots[:len(works)]]
        try:
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(0.25)
        except KeyboardInterrupt:
            self.stop()
            for t in threads:
                t.join(60)
            raise
        if errors:
            raise errors[0]
        return started[0]

    def stop(self) -> None:
        """Every server in flight is stopped at once; no new one starts."""
        self.cancelled = True
        with self._lock:
            jobs = list(self.jobs)
        stoppers = [threading.Thread(target=job.stop, daemon=True) for job in jobs]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join(40)
