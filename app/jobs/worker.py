"""Blocking calls run off the GUI thread: asking the vLLM environment what it has, detecting GPUs,
checking a remote host over SSH. Each can take seconds (or a minute, on a busy or far machine);
the window stays responsive and gets the answer as a callback on the GUI thread."""

from __future__ import annotations

import sys
from typing import Any, Callable

import shiboken6
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot

_pending: set["Call"] = set()  # a Call lives until its answer is handed over
_pool: QThreadPool | None = None


def pool() -> QThreadPool:
    """The app's own pool: these calls mostly wait on a child process or the network, so a few
    run side by side whatever the number of cores (a slow SSH check never queues behind a probe)."""
    global _pool
    if _pool is None:
        _pool = QThreadPool()
        _pool.setMaxThreadCount(8)
    return _pool


class Call(QObject):
    """One blocking call in flight. Lives in the GUI thread; the pool's thread only emits its
    signals, which Qt queues over to the GUI thread."""

    _returned = Signal(object)
    _raised = Signal(object)

    def __init__(self, owner: QObject, on_done: Callable[[Any], None],
                 on_error: Callable[[BaseException], None] | None):
        super().__init__()
        self.owner = owner
        self.on_done = on_done
        self.on_error = on_error
        self._returned.connect(self._deliver)
        self._raised.connect(self._fail)

    @Slot(object)
    def _deliver(self, result: Any) -> None:
        _pending.discard(self)
        # The window or page that asked may be gone by the time the answer comes.
        if shiboken6.isValid(self.owner):
            self.on_done(result)

    @Slot(object)
    def _fail(self, exc: BaseException) -> None:
        _pending.discard(self)
        if not shiboken6.isValid(self.owner):
            return
        if self.on_error is None:
            sys.excepthook(type(exc), exc, exc.__traceback__)
        else:
            self.on_error(exc)


class _Job(QRunnable):
    def __init__(self, fn: Callable[[], Any], call: Call):
        super().__init__()
        self.fn = fn
        self.call = call

    def run(self) -> None:
        try:
            result = self.fn()
        except Exception as exc:  # handed to the GUI thread, which says it in one line
            outcome, value = "_raised", exc
        else:
            outcome, value = "_returned", result
        try:
            getattr(self.call, outcome).emit(value)
        except RuntimeError:
            pass  # the Call is gone: the app is shutting down and nobody waits for the answer


def run(fn: Callable[[], Any], owner: QObject, on_done: Callable[[Any], None],
        on_error: Callable[[BaseException], None] | None = None) -> Call:
    """Calls `fn()` on a pool thread; then `on_done(result)` (or `on_error(exception)`) on the GUI
    thread, unless `owner` has been deleted meanwhile."""
    call = Call(owner, on_done, on_error)
    _pending.add(call)
    pool().start(_Job(fn, call))
    return call


def busy() -> bool:
    """Whether a call is still running or its answer not yet delivered."""
    return bool(_pending)


def wait(timeout_ms: int = 30000) -> bool:
    """Waits for the calls in flight to return (at exit, and in tests); False on timeout."""
    return pool().waitForDone(timeout_ms)
