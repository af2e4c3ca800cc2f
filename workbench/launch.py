"""Starting and stopping a local vLLM server: a pure `prepare` step, then the process itself."""

from __future__ import annotations

import collections
import os
import re
import secrets
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import httpx

from workbench import methods, vllm_cli
from workbench.engine import VllmInstall
from workbench.plan import Server

HOST = "127.0.0.1"
# Server-side defaults for vLLM's CPU build on small machines (see the README): 1 GiB of KV cache
# instead of 4, and no core held back from the model.
# VLLM_TARGET_DEVICE: the CPU build finds its platform from a version tag that the shim supplies
# too; saying it outright keeps detection independent of how vLLM was installed.
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "VLLM_TARGET_DEVICE": "cpu"}


class LaunchError(Exception):
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

    @property
    def command(self) -> str:
        return vllm_cli.display(self.vllm_args)

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return True
    return False


def prepare(server: Server, vllm: VllmInstall, port: int) -> LaunchSpec:
    """The argv and environment of `vllm serve` for one server configuration (no side effects)."""
    args = ["serve", server.target, "--served-model-name", server.served_name,
            "--host", HOST, "--port", str(port), "--max-model-len", str(server.max_model_len),
            "--dtype", server.dtype]
    if server.enforce_eager:
        args.append("--enforce-eager")
    args += methods.speculative_args(server.speculative_config())
    if server.per_request_metrics and vllm.supports("per-request-spec-decode-metrics"):
        args += ["--per-request-spec-decode-metrics", "summary"]
    args += list(server.extra_args)
    env = {"PYTHONUNBUFFERED": "1", "VLLM_NO_USAGE_STATS": "1"}
    if vllm.build == "cpu":
        env.update(CPU_ENV)
    env.update(dict(server.env))
    return LaunchSpec(vllm_cli.argv(vllm.python, args), args, env, port)


# Lines that say why vLLM stopped, most specific first.
_REASONS = [re.compile(p) for p in (
    r"(?:ValueError|RuntimeError|TypeError|KeyError|OSError|AssertionError|pydantic[\w.]*ValidationError)[:\s].*",
    r"Address already in use.*",
    r"ERROR .*",
)]


def reason_from_log(lines: list[str]) -> str | None:
    for pattern in _REASONS:
        for line in reversed(lines):
            m = pattern.search(line)
            if m:
                return m.group(0).strip()[:400]
    return None


@dataclass
class LocalServer:
    """One vLLM server in its own process group; its output is kept in memory and handed to
    `on_line` as it arrives."""
    spec: LaunchSpec
    on_line: Callable[[str, str], None] | None = None
    api_key: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    proc: subprocess.Popen | None = None
    pgid: int | None = None
    tail: collections.deque = field(default_factory=lambda: collections.deque(maxlen=400))

    def start(self, preexec: Callable[[], None] | None = None) -> None:
        if port_in_use(self.spec.port):
            raise LaunchError(f"port {self.spec.port} on {HOST} is already in use")
        env = dict(os.environ)
        env.update(self.spec.env)
        # The per-run key goes through the environment, so it never shows in `ps` or the stored command.
        env["VLLM_API_KEY"] = self.api_key
        self.proc = subprocess.Popen(
            self.spec.argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True, text=True, errors="replace", bufsize=1,
            preexec_fn=preexec,
        )
        # Its own session, so the group id is its pid: kept, because once a killed leader is reaped
        # the group can no longer be looked up, yet its engine processes may still be running.
        self.pgid = self.proc.pid
        threading.Thread(target=self._pump, daemon=True, name="vllm-log").start()

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

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(list(self.tail)[-n:])

    def wait_healthy(self, timeout_s: float, cancelled: Callable[[], bool] = lambda: False) -> float:
        """Seconds until /health answered 200; raises LaunchError if the server died or timed out."""
        t0 = time.monotonic()
        with httpx.Client(timeout=2.0) as client:
            while True:
                if not self.alive:
                    time.sleep(0.3)  # let the pump read the last lines
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
        """SIGTERM to the whole group, then SIGKILL whatever is left after the grace period."""
        if self.proc is None:
            return
        pgid = self.pgid
        if pgid is not None:
            try:
                os.killpg(pgid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        if pgid is not None:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.pgid = None  # the number may be reused by an unrelated group from now on
