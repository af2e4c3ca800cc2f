"""Shared fixtures: the demo model, the vLLM install, and one real vLLM CPU server per configuration."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from workbench import demo, engine, launch, plan  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def demo_models() -> dict[str, Path]:
    return demo.ensure()


@pytest.fixture(scope="session")
def vllm_install() -> engine.VllmInstall:
    install = engine.probe(sys.executable)
    assert install.found, "the test environment must have vLLM (the `cpu` extra)"
    return install


def server_config(target: str, method: str = "baseline", n=None, draft=None, options=()) -> plan.Server:
    return plan.Server(target=target, served_name="smollm2", method=method, n=n, draft=draft,
                       options=tuple(options), max_model_len=2048, dtype="bfloat16", extra_args=(),
                       env=(), enforce_eager=True, per_request_metrics=method != "baseline")


def start_server(config: plan.Server, install: engine.VllmInstall) -> launch.LocalServer:
    srv = launch.LocalServer(launch.prepare(config, install, launch.free_port()))
    srv.start()
    try:
        srv.wait_healthy(300)
    except launch.LaunchError as exc:
        srv.stop()
        pytest.fail(f"{exc}\n{exc.log_tail}")
    return srv


@pytest.fixture(scope="session")
def draft_server(demo_models, vllm_install):
    """The demo target with the noisy-copy draft, N=3: shared by every test that only reads from it."""
    config = server_config(str(demo_models[demo.TARGET.name]), "draft_model", 3,
                           str(demo_models[demo.DRAFT_NOISY.name]))
    srv = start_server(config, vllm_install)
    yield srv
    srv.stop()
