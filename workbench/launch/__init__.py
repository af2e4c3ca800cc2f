"""Starting and stopping a local vLLM server: a pure `prepare` step, then the process itself."""

from __future__ import annotations

import collections
import os
import re
import secrets
import shlex
import socket
import subprocess
import threading
import time
import urllib.parse
from dataclasses import dataclass, field, replace
from typing import Callable

import httpx
from huggingface_hub import constants as hf_constants

from workbench import methods
from workbench.host import process, vllm_cli
from workbench.host.engine import VllmInstall
from workbench.plan import Server
from workbench.plan.profiles import CUDA_DOCKER_FLAGS, CUDA_IMAGE, ROCM_DOCKER_FLAGS, ROCM_IMAGE, SECRET_ENV

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


def _ephemeral_low(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> int:
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port() -> int:
    """A free port for a server, from below the ephemeral range. A port the kernel hands out for
    bind(0) comes from the range it also takes the source ports of outgoing connections from, so
    between this call and the server's own bind any client's connection on the host (a load
    generator's, another sweep's) could take it, and the launch would fail as "already in use"."""
    top = _ephemeral_low()
    pick = secrets.SystemRandom()
    for _ in range(100):
        port = pick.randint(max(1024, top - 12000), top - 1)
        if not port_in_use(port):
            return port
    with _probe(0) as s:  # the kernel's pick, through the same probe (a forked copy of it is no server either)
        return s.getsockname()[1]


def _probe(port: int) -> socket.socket:
    """A socket bound to the port, as port_in_use tries it; OSError when the port is taken. It is
    SO_REUSEADDR: a process forked by another thread while a probe is bound (a parallel sweep's
    other slot starting its server) holds a copy of it until its exec, and without the flag the
    next probe of that port, the server's own check included, would find it taken by that copy,
    which is no server at all."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((HOST, port))
    except OSError:
        s.close()
        raise
    return s


def port_in_use(port: int) -> bool:
    """Whether something listens on the port, or holds it without SO_REUSEADDR."""
    try:
        _probe(port).close()
    except OSError:
        return True
    return False


def _serve_args(server: Server, vllm: VllmInstall, port: int, host: str) -> list[str]:
    args = ["serve", server.target, "--served-model-name", server.served_name,
            "--host", host, "--port", str(port), "--max-model-len", str(server.max_model_len),
            "--dtype", server.dtype]
    if server.enforce_eager:
        args.append("--enforce-eager")
    if server.what_if:
        # Random weights from config.json alone; the draft inherits the target's load config
        # (vLLM's SpeculativeConfig.draft_load_config), so neither needs its weight files.
        args += ["--load-format", "dummy"]
    args += server.profile.serve_args()
    args += methods.speculative_args(server.speculative_config())
    if server.per_request_metrics and vllm.supports("per-request-spec-decode-metrics"):
        args += ["--per-request-spec-decode-metrics", "summary"]
    args += list(server.extra_args)
    return args


def prepare(server: Server, vllm: VllmInstall, port: int, host_platform: str = "none",
            gpus: tuple[int, ...] | None = None) -> LaunchSpec:
    """The argv and environment that start one server configuration (no side effects).
    `host_platform` is what the host's GPU tools report ('cuda', 'rocm' or 'none'); `gpus`, the
    GPU slot of a parallel sweep, replaces the profile's own GPU selection."""
    if gpus is not None:
        server = replace(server, profile=replace(server.profile, gpus=tuple(gpus)))
    profile = server.profile
    if profile.kind == "attach":
        return LaunchSpec([], [], {}, 0, kind="attach", url=profile.base_url)
    if profile.kind == "docker":
        return _docker(server, vllm, port, host_platform)
    platform = "cpu" if vllm.build == "cpu" else profile.gpu_platform(host_platform)
    args = _serve_args(server, vllm, port, HOST)
    env = {"PYTHONUNBUFFERED": "1", "VLLM_NO_USAGE_STATS": "1"}
    if vllm.build == "cpu":
        env.update(CPU_ENV)
    env.update(profile.server_env(platform))
    env.update(dict(server.env))
    # ROCm's runtime renumbers the GPUs ROCR_VISIBLE_DEVICES leaves visible before HIP sees them,
    # so one inherited from the shell would move HIP_VISIBLE_DEVICES onto other GPUs.
    unset = ("ROCR_VISIBLE_DEVICES",) if platform == "rocm" and profile.gpus else ()
    return LaunchSpec(vllm_cli.argv(vllm.python, args), args, env, port, unset=unset)


def shown_command(spec: LaunchSpec) -> str:
    """A spec prepared with port 0, as shown before it starts and stored with its runs: PORT
    stands for the free port chosen at start (docker publishes it as 127.0.0.1:PORT:PORT)."""
    return spec.command.replace("--port 0", "--port PORT").replace("127.0.0.1:0:0", "127.0.0.1:PORT:PORT")


def _docker(server: Server, vllm: VllmInstall, port: int, host_platform: str) -> LaunchSpec:
    """`docker run` of the official image. The container listens on all its interfaces, but the
    port is published on the host's loopback only; secrets pass by name (`-e NAME`)."""
    profile = server.profile
    platform = profile.gpu_platform(host_platform)
    image = profile.image or (ROCM_IMAGE if platform == "rocm" else CUDA_IMAGE)
    name = f"draftbench-{port}-{secrets.token_hex(3)}"
    argv = [profile.docker, "run", "--rm", "--name", name, "-p", f"{HOST}:{port}:{port}"]
    if platform == "rocm":
        argv += list(ROCM_DOCKER_FLAGS)
    elif platform == "cuda":
        argv += list(CUDA_DOCKER_FLAGS)
        # Inside the container the chosen GPUs are renumbered from 0, so no CUDA_VISIBLE_DEVICES.
        argv += ["--gpus", f'"device={",".join(map(str, profile.gpus))}"' if profile.gpus else "all"]
    cache = profile.hf_cache or hf_constants.HF_HUB_CACHE
    argv += ["-v", f"{cache}:/root/.cache/huggingface/hub"]
    for folder in dict.fromkeys(p for p in (server.target, server.draft) if p and os.path.isabs(p)):
        argv += ["-v", f"{folder}:{folder}:ro"]  # local checkpoints at the same path inside
    env = {"VLLM_NO_USAGE_STATS": "1"}
    env.update(profile.server_env(platform) if platform == "rocm" else dict(profile.env))
    env.update(dict(server.env))
    for k, v in sorted(env.items()):
        argv += ["-e", f"{k}={v}"]
    for k in SECRET_ENV:
        argv += ["-e", k]
    args = _serve_args(server, vllm, port, "0.0.0.0")
    argv += ["--entrypoint", "vllm", image] + args
    return LaunchSpec(argv, args, {}, port, kind="docker",
                      stop_argv=(profile.docker, "stop", "--time", "20", name))


def is_loopback(url: str | None) -> bool:
    host = urllib.parse.urlsplit(url or "").hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def server_version(base_url: str) -> str | None:
    """vLLM's own version as the running server reports it (GET /version): for docker and
    attached servers the only trustworthy source."""
    try:
        r = httpx.get(base_url + "/version", timeout=5)
        return r.json().get("version") if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


# Lines that say why vLLM stopped, most specific first: asked only after the engine's own fatal
# error and the last traceback (see reason_from_log).
_REASONS = [re.compile(p) for p in (
    r"(?:ValueError|RuntimeError|TypeError|KeyError|OSError|AssertionError|pydantic[\w.]*ValidationError)[:\s].*",
    r"Address already in use.*",
    r"ERROR .*",
)]
# Lines that only mention an error: whatever is logged as a warning (vLLM's level field, Python's
# logging and warnings, torch's `[W...]`) and advice. On a host whose fd limit cannot be raised
# vLLM warns at start-up that this "can cause fd limit errors like `OSError: [Errno 24] Too many
# open files`": nothing failed there.
_MENTION = re.compile(r"(?:^|\) )WARNING(?: \d\d-\d\d |:)|^\[W\d{4} |:\d+: \w*Warning: |\bcan cause\b")
# What vLLM's engine-core process logs, with the traceback of its exception, when it dies.
_ENGINE_FATAL = re.compile(r"EngineCore (?:failed to start|encountered a fatal error)\.")
_TRACEBACK = "Traceback (most recent call last):"
# The last line of a traceback: the exception's (possibly dotted) name, then its message.
_EXCEPTION = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)(?::\s.*)?")


def _exception_after(lines: list[str], start: int, prefix: str) -> str | None:
    """The exception line that ends the traceback beginning after lines[start], looking only at
    lines with the same log prefix (other processes' lines interleave with it)."""
    for line in lines[start + 1:]:
        if not line.startswith(prefix):
            continue
        text = line[len(prefix):]
        if not text or text[0].isspace() or text.startswith(_TRACEBACK):
            continue  # a frame, its source line, its ^^^ marks, a chained traceback
        if _EXCEPTION.fullmatch(text.rstrip()):
            return text.strip()
    return None


def reason_from_log(lines: list[str]) -> str | None:
    """One line that says why vLLM stopped, from its output: the exception the engine core died of,
    else the exception that ended the last traceback, else the most specific error line. Lines
    that only mention an error (see _MENTION) are never the reason."""
    lines = [line for line in lines if not _MENTION.search(line)]
    for i in range(len(lines) - 1, -1, -1):
        m = _ENGINE_FATAL.search(lines[i])
        if m:
            return (_exception_after(lines, i, lines[i][:m.start()]) or m.group(0))[:400]
    for i in range(len(lines) - 1, -1, -1):
        at = lines[i].find(_TRACEBACK)
        if at >= 0:
            why = _exception_after(lines, i, lines[i][:at])
            if why:
                return why[:400]
            break
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


@dataclass
class AttachedServer:
    """A server someone else started: measured, never started or stopped. Its counters are
    server-wide, so other clients' traffic lands in them (see sanity.ATTACHED)."""
    spec: LaunchSpec
    api_key: str | None = None
    served_models: list[str] = field(default_factory=list)
    tail: collections.deque = field(default_factory=lambda: collections.deque(maxlen=1))
    proc: None = None

    def start(self, preexec=None) -> None:
        pass

    @property
    def alive(self) -> bool:
        try:
            return httpx.get(self.spec.base_url + "/health", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def log_tail(self, n: int = 40) -> str:
        return ""

    def wait_healthy(self, timeout_s: float, cancelled: Callable[[], bool] = lambda: False) -> float:
        t0 = time.monotonic()
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        with httpx.Client(timeout=5.0, headers=headers) as client:
            while True:
                try:
                    if client.get(self.spec.base_url + "/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if cancelled():
                    raise LaunchError("cancelled while waiting for the attached server")
                if time.monotonic() - t0 > min(timeout_s, 30):
                    raise LaunchError(f"no vLLM server answers at {self.spec.base_url} (GET /health)")
                time.sleep(0.5)
            try:
                r = client.get(self.spec.base_url + "/v1/models")
            except httpx.HTTPError as exc:
                raise LaunchError(f"{self.spec.base_url}/v1/models failed: {exc}") from None
            if r.status_code == 401:
                raise LaunchError(f"the server at {self.spec.base_url} wants an API key: put it in an "
                                  "environment variable and name it in the profile's api_key_env")
            if r.status_code != 200:
                raise LaunchError(f"{self.spec.base_url}/v1/models answered HTTP {r.status_code}")
            self.served_models = [m.get("id") for m in r.json().get("data", [])]
        return time.monotonic() - t0

    def stop(self, grace_s: float = 20.0) -> None:
        pass
