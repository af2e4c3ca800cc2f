"""A vLLM server started here, in its own process group."""

from __future__ import annotations

import collections
import os
import secrets
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import httpx

from workbench.host import process
from workbench.launch.log_reason import reason_from_log
from workbench.launch.ports import port_in_use
from workbench.launch.spec import HOST, LaunchError, LaunchSpec


@dataclass
class LocalServer:
    """One vLLM server in its own process group; its output is kept in memory and handed to
    `on_line` as it arrives."""
    spec: LaunchSpec
    on_line: Callable[[str, str], object] | None = None  # what it returns is ignored
    api_key: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    proc: subprocess.Popen[str] | None = None
    pgid: int | None = None
    tail: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=400))
    pump: threading.Thread | None = None

    def start(self, preexec: Callable[[], None] | None = None) -> None:
        if port_in_use(self.spec.port):
            raise LaunchError(f"port {self.spec.port} on {HOST} is already in use")
        env = dict(os.environ)
        for name in self.spec.unset:
            env.pop(name, None)
        env.update(self.spec.env)
        # The per-run key goes through the environment, so it never shows in `ps` or the stored command.
        env["VLLM_API_KEY"] = self.api_key
        self.proc = process.start(
            self.spec.argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1, preexec_fn=preexec,
        )
        # The group id is its pid: kept, because once a killed leader is reaped the group can no
        # longer be looked up, yet its engine processes may still be running.
        self.pgid = self.proc.pid
        self.pump = threading.Thread(target=self._pump, daemon=True, name="vllm-log")
        self.pump.start()

    def _pump(self) -> None:
        assert self.proc and self.proc.stdout
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.tail.append(line)
            if self.on_line:
                self.on_line("stdout", line)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def drain(self, timeout_s: float = 2.0) -> None:
        """Wait until the log pump has read everything an exited server wrote. The pipe closes only
        when every process holding it has exited (engine processes may outlive the leader), hence
        the bound: the lines read by then are what there is."""
        if self.pump is not None:
            self.pump.join(timeout_s)

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(list(self.tail)[-n:])

    def wait_healthy(self, timeout_s: float, cancelled: Callable[[], bool] = lambda: False) -> float:
        """Seconds until /health answered 200; raises LaunchError if the server died or timed out."""
        t0 = time.monotonic()
        with httpx.Client(timeout=2.0) as client:
            while True:
                if not self.alive:
                    self.drain()  # the last lines name the reason
                    lines = list(self.tail)
                    why = reason_from_log(lines) or f"exit code {self.proc.returncode if self.proc else '?'}"
                    raise LaunchError(f"vLLM exited during start-up: {why}", self.log_tail())
                try:
                    if client.get(self.spec.base_url + "/health").status_code == 200:
                        return time.monotonic() - t0
                except httpx.HTTPError:
                    pass
                if cancelled():
                    raise LaunchError("cancelled while vLLM was starting", self.log_tail())
                if time.monotonic() - t0 > timeout_s:
                    raise LaunchError(f"vLLM did not become healthy within {timeout_s:.0f} s", self.log_tail())
                time.sleep(0.5)

    def stop(self, grace_s: float = 20.0) -> None:
        """SIGTERM to the whole group, then SIGKILL whatever is left after the grace period.
        A container outlives its client, so it is stopped through the engine first."""
        if self.proc is None:
            return
        if self.spec.stop_argv and self.proc.poll() is None:
            try:
                subprocess.run(list(self.spec.stop_argv), stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=grace_s + 10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if self.pgid is not None:
            process.stop_group(self.proc, self.pgid, grace_s)
        self.pgid = None  # the number may be reused by an unrelated group from now on
