"""Blocking calls run off the GUI thread: asking the vLLM environment what it has, detecting GPUs,
checking a remote host over SSH, the preflight, opening and checking a results database, reading
History's runs and the latest experiment Compare opens on, the Hub's searches, downloads and cache
scans and deletes. Each can take seconds (or a minute, on a busy or far machine); the window stays
responsive and gets the answer (and a download its progress) as a callback on the GUI thread. This
is the app's one mechanism for them: child processes (sweeps, training) are followed by their own
timers, which only read a file."""

from __future__ import annotations

import gc
import itertools
import sys
import threading
import time
from typing import Any, Callable

import shiboken6
from PySide6.QtCore import QObject, Signal, Slot
from pyqtgraph.util.garbage_collector import GarbageCollector

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
_collector: GarbageCollector | None = None


def collect_on_gui_thread() -> GarbageCollector:
    """Python's cyclic garbage collector runs on whichever thread happens to allocate, and a
    call's thread allocates plenty: collecting there a cycle that holds Qt wrappers (the charts'
    pyqtgraph items make many) has shiboken defer their deletion to the GUI thread, which runs it
    at its next call into Qt -- once in the middle of a widget's destructor, and the window hung on
    a Qt mutex it already held. pyqtgraph's collector turns the automatic collection off and
    collects on a timer of the GUI thread instead, with the same thresholds. Once per process.

    What is alive at that moment (the modules, the app's own objects) is moved out of the
    collector's sight (gc.freeze), so that a full collection on the GUI thread walks only what was
    made since: the app's heap took 80 ms to walk, more than a frame."""
    global _collector
    if _collector is None:
        _collector = GarbageCollector(interval=1.0)
        gc.collect()
        gc.freeze()
    return _collector


class _Dispatcher(QObject):
    """One QObject for the app's lifetime, in the GUI thread: the calls' threads emit its signal
    with a call's number, which Qt queues over."""

    answered = Signal(int)
    progressed = Signal(int, object)

    def __init__(self) -> None:
        super().__init__()
        self.answered.connect(self._hand_over)
        self.progressed.connect(self._hand_progress)

    @Slot(int, object)
    def _hand_progress(self, number: int, args: tuple[Any, ...]) -> None:
        call = _calls.get(number)
        if call is not None and call.on_progress is not None and shiboken6.isValid(call.owner):
            call.on_progress(*args)

    @Slot(int)
    def _hand_over(self, number: int) -> None:
        call = _calls.pop(number, None)
        if call is not None:
            call.finish()


class Call:
    """One blocking call in flight; its answer is handed over on the GUI thread."""

    def __init__(self, fn: Callable[..., Any], owner: QObject, on_done: Callable[[Any], None],
                 on_error: Callable[[Exception], None] | None,
                 on_progress: Callable[..., None] | None = None):
        self.fn = fn
        self.owner = owner
        self.on_done = on_done
        self.on_error = on_error
        self.on_progress = on_progress
        self.outcome: tuple[bool, Any] | None = None
        self.done = threading.Event()  # set on the call's thread once it has returned

    def wait(self, timeout_s: float) -> bool:
        """Waits for the call itself to return (its answer is still handed over on the GUI thread)."""
        return self.done.wait(timeout_s)

    def finish(self) -> None:
        assert self.outcome is not None  # its thread set it before saying the call was answered
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
        if call.on_progress is None:
            outcome = (True, call.fn())
        else:
            outcome = (True, call.fn(lambda *args: dispatcher.progressed.emit(number, args)))
    except Exception as exc:  # noqa: BLE001 - handed to the GUI thread, which says it in one line
        outcome = (False, exc)
    call.outcome = outcome
    done = call.done
    del call, outcome  # the GUI thread holds them until it has handed the answer over
    done.set()
    try:
        dispatcher.answered.emit(number)
    except RuntimeError:
        pass  # the dispatcher is gone: the app is shutting down and nobody waits for the answer
    finally:
        with _lock:
            _running.discard(threading.current_thread())


def run(fn: Callable[..., Any], owner: QObject, on_done: Callable[[Any], None],
        on_error: Callable[[Exception], None] | None = None,
        on_progress: Callable[..., None] | None = None) -> Call:
    """Calls `fn()` on a thread of its own; then `on_done(result)` (or `on_error(exception)`) on
    the GUI thread, unless `owner` has been deleted meanwhile. With `on_progress`, `fn(progress)`
    is called instead, and each `progress(*args)` it makes reaches `on_progress(*args)` on the GUI
    thread, in order, before the answer."""
    global _dispatcher
    if _dispatcher is None:  # created on the GUI thread, where run() is called
        _dispatcher = _Dispatcher()
        collect_on_gui_thread()
    number = next(_numbers)
    call = _calls[number] = Call(fn, owner, on_done, on_error, on_progress)
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


class Latest:
    """Calls of which only the newest answer counts: an older call answering late (a view of an
    earlier selection, a read of an earlier file) is dropped, not shown over the newer one."""

    def __init__(self) -> None:
        self._asked = 0

    def run(self, fn: Callable[[], Any], owner: QObject, on_done: Callable[[Any], None],
            on_error: Callable[[Exception], None]) -> Call:
        asked = self.drop()

        def done(value: Any) -> None:
            if asked == self._asked:
                on_done(value)

        def failed(exc: Exception) -> None:
            if asked == self._asked:
                on_error(exc)

        return run(fn, owner, done, failed)

    def drop(self) -> int:
        """No call in flight is answered any more (something newer was shown without one)."""
        self._asked += 1
        return self._asked
