"""What a training step is given: the services of the pipeline that runs it (its folder, its
settings, cancel, the target's server, subprocesses). A protocol, so the steps need not import the
pipeline that imports them."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable, Protocol, TextIO

from workbench import events
from workbench.train.config import TrainConfig


class StepContext(Protocol):
    config: TrainConfig
    cancel_event: threading.Event
    vllm_python: str | None
    server_log: TextIO | None

    @property
    def emit(self) -> events.Emit: ...

    @property
    def out(self) -> Path: ...

    @property
    def target(self) -> str: ...

    def manifest(self) -> dict[str, Any]: ...

    def check(self) -> None: ...

    def server_endpoint(self) -> tuple[str, str | None]: ...

    def run_subprocess(self, argv: list[str], step: str,
                       on_metrics: Callable[[dict[str, Any]], None] | None = None) -> None: ...


class Step(Protocol):
    name: str

    def run(self, p: StepContext) -> dict[str, Any]: ...
