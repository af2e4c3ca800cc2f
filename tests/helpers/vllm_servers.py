"""Real vLLM CPU servers for the slow tier: the configuration of one, and starting it."""

from __future__ import annotations

import pytest

from workbench import launch, plan
from workbench.host import cpu, engine, process


def server_config(target: str, method: str = "baseline", n=None, draft=None, options=()) -> plan.Server:
    return plan.Server(target=target, served_name="smollm2", method=method, n=n, draft=draft,
                       options=tuple(options), max_model_len=2048, dtype=cpu.demo_dtype(), extra_args=(),
                       env=(), enforce_eager=True, per_request_metrics=method != "baseline")


def start_server(config: plan.Server, install: engine.VllmInstall) -> launch.LocalServer:
    srv = launch.LocalServer(launch.prepare(config, install, launch.free_port()))
    # An interrupted or killed test run cannot stop its session's server; the kernel does, so no
    # orphaned server keeps a core busy under the next run.
    srv.start(preexec=process.die_with_parent)
    try:
        srv.wait_healthy(300)
    except launch.LaunchError as exc:
        srv.stop()
        pytest.fail(f"{exc}\n{exc.log_tail}")
    return srv
