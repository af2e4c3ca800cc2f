"""Shared fixtures: the demo model, the vLLM install, and one real vLLM CPU server per configuration."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Settings written by the app under test go to a throwaway folder, never the user's.
os.environ["DRAFTBENCH_CONFIG_DIR"] = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"draftbench-test-config-{os.getpid()}")

from workbench import launch, plan
from workbench.checkpoints import demo
from workbench.host import engine
from workbench.sweep import runner# noqa: E402

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


PLAN = """
name = "{name}"
[target]
model = "demo:smollm2-135m"
served_name = "smollm2"
dtype = "bfloat16"
enforce_eager = true
{methods}
[workload]
num_prompts = 6
max_tokens = 40
warmup = 1
concurrency = [2]
temperature = 0.0
[server]
health_timeout_s = 300
"""
METHODS = """
[[methods]]
method = "ngram"
n = 3
options = { prompt_lookup_min = 2, prompt_lookup_max = 4 }
[[methods]]
method = "draft_model"
draft = "demo:smollm2-135m-draft-noisy-copy"
n = 2
"""


@pytest.fixture(scope="session")
def sweep_db(demo_models, vllm_install, tmp_path_factory):
    path = tmp_path_factory.mktemp("sweep") / "results.sqlite"
    events = []
    p = plan.loads(PLAN.format(name="integration", methods=METHODS))
    summary = runner.Runner(p, str(path), vllm_install, emit=events.append).run()
    return path, summary, events


