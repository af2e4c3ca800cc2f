"""A server someone else started, attached to by URL."""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field
from typing import Callable

import httpx

from workbench.launch.spec import LaunchError, LaunchSpec


@dataclass
class AttachedServer:
    """A server someone else started: measured, never started or stopped. Its counters are
    server-wide, so other clients' traffic lands in them (see sanity.ATTACHED)."""
    spec: LaunchSpec
    api_key: str | None = None
    served_models: list[str] = field(default_factory=list)
    tail: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=1))
    proc: None = None

    def start(self, preexec: Callable[[], object] | None = None) -> None:
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
