"""Blocking calls run off the GUI thread: asking the vLLM environment what it has, detecting GPUs,
checking a remote host over SSH. Each can take seconds (or a minute, on a busy or far machine);
the window stays responsive and gets the answer as a callback on the GUI thread."""

from __future__ import annotations

import itertools
import sys
import threading
import time
from typing import Any, Callable

import shiboken6
from PySide6.QtCore import QObject, Signal, Slot

# A Python thread per call, not QThreadPool's: a QRunnable subclass is released on the pool's
# thread, and shiboken then defers its deletion to the GUI thread, where PySide 6.10 called a null
# deleter (a segfault in BindingManager::runDeletionInMainThread that a loaded machine showed).
# The same happens to any Qt wrapper whose last reference goes on another thread, and a call's
# function and callbacks hold the page that asked: so the GUI thread owns every call (`_calls`),
# the thread gets only its number, and it lets go of what it borrowed before it says it is done.
# The calls mostly wait on a child process or the network, and are few (a probe, a GPU detection,
# an SSH check), so each has its own thread: a slow SSH check never queues behind a probe. Daemon
# threads, so quitting never waits for a probe's timeout.
_calls: dict[int, "Call"] = {}  # a Call lives here until its answer is handed over
_running: set[threading.Thread] = set()
_lock = threading.Lock()
_numbers = itertools.count()
_dispatcher: "_Dispatcher | None" = None


class _Dispatcher(QObject):
    """One QObject for the app's lifetime, in the GUI thread: the calls' threads emit its signal
    with a call's number, which Qt queues over."""

    answered = Signal(int)

    def __init__(self):
        super().__init__()
        self.answered.connect(self._hand_over)

    @Slot(int)
    def _hand_over(self, number: int) -> None:
        call = _calls.pop(number, None)
        if call is not None:
            call.finish()


class Call:
    """One blocking call in flight; its answer is handed over on the GUI thread."""

    def __init__(self, fn: Callable[[], Any], owner: QObject, on_done: Callable[[Any], None],
                 on_error: Callable[[BaseException], None] | None):
        self.fn = fn
        self.owner = owner
        self.on_done = on_done
        self.on_error = on_error
        self.outcome: tuple[bool, Any] | None = None

    def finish(self) -> None:
        ok, value = self.outcome
        # The window or page that asked may be gone by the time the answer comes.
        if not shiboken6.isValid(self.owner):
            return
        if ok:
            self.on_done(value)
        elif self.on_error is None:
            sys.excepthook(type(value), value, value.__traceback__)
        else:
            self.on_error(value)


def _job(number: int, dispatcher: "_Dispatcher") -> None:
    call = _calls[number]
    try:
        outcome = (True, call.fn())
    except Exception as exc:  # handed to the GUI thread, which says it in one line
        outcome = (False, exc)
    call.outcome = outcome
    del call, outcome  # the GUI thread holds them until it has handed the answer over
    try:
        dispatcher.answered.emit(number)
    except RuntimeError:
        pass  # the dispatcher is gone: the app is shutting down and nobody waits for the answer
    finally:
        with _lock:
            _running.discard(threading.current_thread())


def run(fn: Callable[[], Any], owner: QObject, on_done: Callable[[Any], None],
        on_error: Callable[[BaseException], None] | None = None) -> Call:
    """Calls `fn()` on a thread of its own; then `on_done(result)` (or `on_error(exception)`) on
    the GUI thread, unless `owner` has been deleted meanwhile."""
    global _dispatcher
    if _dispatcher is None:  # created on the GUI thread, where run() is called
        _dispatcher = _Dispatcher()
    number = next(_numbers)
    call = _calls[number] = Call(fn, owner, on_done, on_error)
    thread = threading.Thread(target=_job, args=(number, _dispatcher), name="draftbench-call", daemon=True)
    with _lock:
        _running.add(thread)
    thread.start()
    return call


def active() -> int:
    """How many calls are still running."""
    with _lock:
        return len(_running)


def wait(timeout_ms: int = 30000) -> bool:
    """Waits for the calls in flight to return (at exit, and in tests); False on timeout."""
    deadline = time.monotonic() + timeout_ms / 1000
    with _lock:
        running = list(_running)
    for thread in running:
        thread.join(max(0.0, deadline - time.monotonic()))
    return active() == 0
