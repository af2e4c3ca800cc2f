"""What starts one server: its argv, environment and port (LaunchSpec), and the error a launch
fails with."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from workbench.errors import DraftbenchError
from workbench.host import vllm_cli

HOST = "127.0.0.1"


class LaunchError(DraftbenchError):
    """A server that could not be started, with a one-line reason and its log tail."""

    def __init__(self, message: str, log_tail: str = ""):
        super().__init__(message)
        self.log_tail = log_tail


@dataclass(frozen=True)
class LaunchSpec:
    argv: list[str]          # the full process argv
    vllm_args: list[str]     # what follows `vllm` on a command line
    env: dict[str, str]      # added to the environment; never holds secrets
    port: int
    kind: str = "local"      # local | docker | attach
    stop_argv: tuple[str, ...] = ()   # run before signalling the process (docker: stop the container)
    url: str | None = None   # attach: the server's own base URL
    unset: tuple[str, ...] = ()  # removed from the inherited environment (one that would contradict ours)

    @property
    def command(self) -> str:
        if self.kind == "docker":
            return shlex.join(self.argv)
        if self.kind == "attach":
            return f"(attached to {self.url})"
        return vllm_cli.display(self.vllm_args)

    @property
    def base_url(self) -> str:
        return self.url or f"http://{HOST}:{self.port}"
