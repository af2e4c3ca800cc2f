"""This CPU's float32-against-bf16 timing (workbench.host.cpu), measured once per test session and
put into every cache folder the tests' processes use. Without it each xdist worker, and each
`draftbench run` child given a cache folder of its own, imported torch to time the same matmuls
again (two seconds on an idle machine, several on a loaded one) before a demo sweep could start.
The tests of the measurement itself (tests/test_demo_cpu.py, tests/test_demo_build_gui.py) use
empty folders of their own."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from workbench.host import cpu

# The process that loaded the tests first (xdist's controller, or pytest alone): its workers inherit it.
SESSION = os.environ.setdefault("DRAFTBENCH_TEST_SESSION", str(os.getpid()))
MEASURED = Path(os.environ.get("TMPDIR", "/tmp")) / f"draftbench-test-cpu-tuning-{SESSION}.json"


def measure_once() -> None:
    """Called by the session's first process, before any worker starts."""
    if SESSION == str(os.getpid()) and not MEASURED.exists():
        cpu.demo_choice(store=MEASURED)


def seeded(cache: Path) -> Path:
    """`cache`, holding this session's measurement."""
    cache.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(MEASURED, cache / cpu.STORE)
    return cache


def forget() -> None:
    """At the end of the session's first process."""
    if SESSION == str(os.getpid()):
        MEASURED.unlink(missing_ok=True)
