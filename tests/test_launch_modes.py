"""The docker and attach launch modes, end to end with the real runner and a real vLLM CPU server
(what Draftbench says about a wrong attach profile is checked against the stand-in instead).

docker: no docker engine can run here, so tests/helpers/standins/docker stands in for the docker client.
It checks the command line as the engine would and runs the container's command with the real vLLM
CPU build (see its docstring); everything Draftbench does — argv, secrets passed by name, the
published loopback port, stopping the container — goes through it for real.
attach: the shared draft-model server of conftest, started by the test harness as a user would by
hand, is measured without being started or stopped.
"""

import pytest

import json
import sys
from pathlib import Path

import httpx

from helpers.plans import demo_plan
from workbench import launch, plan, store
from workbench.checkpoints import demo
from workbench.sweep import runner
from workbench.plan import sanity

STANDIN = Path(__file__).parent / "helpers" / "standins" / "docker"
SECRET = "hf_standin_token_never_stored_0123456789"



def docker_plan(docker, cache) -> str:
    return demo_plan("docker-mode", profile={
        "kind": "docker", "docker": str(docker), "platform": "cpu", "image": "vllm/vllm-openai-cpu:latest",
        "hf_cache": str(cache),
        "env": {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "VLLM_TARGET_DEVICE": "cpu"}},
        workload={"num_prompts": 3, "max_tokens": 24, "warmup": 0, "concurrency": [1]}, server={"health_timeout_s": 300})


@pytest.mark.vllm
def test_docker_profile_runs_end_to_end(demo_models, vllm_install, tmp_path, monkeypatch):
    state = tmp_path / "standin"
    state.mkdir()
    monkeypatch.setenv("DRAFTBENCH_STANDIN_DIR", str(state))
    monkeypatch.setenv("DRAFTBENCH_STANDIN_PYTHON", sys.executable)
    monkeypatch.setenv("HF_TOKEN", SECRET)
    p = plan.loads(docker_plan(STANDIN, tmp_path / "hf"))
    db_path = tmp_path / "docker.sqlite"
    events: list = []
    summary = runner.Runner(p, str(db_path), vllm_install, emit=events.append).run()
    assert summary["completed"] == 1, [e for e in events if e.KIND == "run_failed"]
    (row,) = store.runs(store.open_db(db_path, readonly=True))
    assert row.output_tokens > 0 and row.output_tok_s > 0
    assert row.command.startswith(f"{STANDIN} run --rm --name draftbench-")
    assert json.loads(row.environment)["kind"] == "docker"
    calls = [json.loads(line) for line in (state / "calls.jsonl").read_text().splitlines()]
    assert [c["call"] for c in calls] == ["run", "stop"]
    assert calls[0]["name"] == calls[1]["name"] and calls[0]["image"] == "vllm/vllm-openai-cpu:latest"
    # The API key and the HF token reached the container by name only.
    assert {"VLLM_API_KEY", "HF_TOKEN"} <= set(calls[0]["env_names"])
    argv = calls[0]["argv"]
    assert "-e" in argv and "HF_TOKEN" in argv and not any(SECRET in a for a in argv)
    assert SECRET not in db_path.read_bytes().decode("latin-1")
    # The container is gone once the sweep ends.
    assert not any(state.glob("*.pid"))


def attach_plan(base_url: str, key_env: str | None, served: str = "smollm2") -> str:
    key = f'api_key_env = "{key_env}"\n' if key_env else ""
    draft = demo.folder(demo.DRAFT_NOISY)
    return (f'name = "attach"\n[target]\nmodel = "demo:smollm2-135m"\nserved_name = "{served}"\n'
            f'[profile]\nkind = "attach"\nbase_url = "{base_url}"\n{key}'
            f'[[methods]]\nmethod = "draft_model"\ndraft = "{draft}"\nn = 3\n'
            '[workload]\nnum_prompts = 4\nmax_tokens = 32\nwarmup = 0\nconcurrency = [2]\ntemperature = 0.0\n')


def test_attach_measures_a_server_started_by_hand(draft_server, vllm_install, tmp_path, monkeypatch):
    monkeypatch.setenv("DEMO_SERVER_KEY", draft_server.api_key)
    p = plan.loads(attach_plan(draft_server.spec.base_url, "DEMO_SERVER_KEY"))
    assert sanity.ATTACHED in sanity.for_plan(p)
    db_path = tmp_path / "attach.sqlite"
    summary = runner.Runner(p, str(db_path), vllm_install, emit=lambda e: None).run()
    assert summary["completed"] == 1
    db = store.open_db(db_path, readonly=True)
    (row,) = store.runs(db)
    assert sanity.ATTACHED in json.loads(row.warnings)
    assert row.command == f"(attached to {draft_server.spec.base_url})"
    # Acceptance from vLLM's per-request figures (Draftbench's own requests only).
    reqs = list(db["requests"].rows_where("run_id = ?", [row.id]))
    assert row.drafts == sum(r["spec_drafts"] for r in reqs) > 0
    assert row.accepted == sum(r["spec_accepted"] for r in reqs)
    assert row.mal == 1 + row.accepted / row.drafts
    assert len(row.per_position) == 3
    # Not stopped: the server still answers.
    assert draft_server.alive and httpx.get(draft_server.spec.base_url + "/health").status_code == 200


def test_attach_explains_a_missing_key_and_a_wrong_model(standin_server, demo_models, vllm_install, tmp_path,
                                                         monkeypatch):
    monkeypatch.delenv("NOT_SET_KEY", raising=False)
    p = plan.loads(attach_plan(standin_server.base_url, "NOT_SET_KEY"))
    runner.Runner(p, str(tmp_path / "a.sqlite"), vllm_install, emit=lambda e: None).run()
    (row,) = store.runs(store.open_db(tmp_path / "a.sqlite", readonly=True))
    assert row.status == "failed" and "NOT_SET_KEY" in row.error and "not set" in row.error
    p = plan.loads(attach_plan(standin_server.base_url, None))
    runner.Runner(p, str(tmp_path / "b.sqlite"), vllm_install, emit=lambda e: None).run()
    (row,) = store.runs(store.open_db(tmp_path / "b.sqlite", readonly=True))
    assert row.status == "failed" and "wants an API key" in row.error
    monkeypatch.setenv("DEMO_SERVER_KEY", standin_server.api_key)
    p = plan.loads(attach_plan(standin_server.base_url, "DEMO_SERVER_KEY", served="other-model"))
    runner.Runner(p, str(tmp_path / "c.sqlite"), vllm_install, emit=lambda e: None).run()
    (row,) = store.runs(store.open_db(tmp_path / "c.sqlite", readonly=True))
    assert row.status == "failed" and "serves smollm2, not 'other-model'" in row.error
    port = launch.free_port()
    # Nothing listens there: the shortest wait the plan allows, not the 30 s an attach waits at most.
    p = plan.loads(attach_plan(f"http://127.0.0.1:{port}", None) + "[server]\nhealth_timeout_s = 5\n")
    runner.Runner(p, str(tmp_path / "d.sqlite"), vllm_install, emit=lambda e: None).run()
    (row,) = store.runs(store.open_db(tmp_path / "d.sqlite", readonly=True))
    assert row.status == "failed" and f"no vLLM server answers at http://127.0.0.1:{port}" in row.error


def test_experiment_page_shows_the_foreign_traffic_warning(qtbot, vllm_install, standin_server):
    import tomllib

    from app.pages.experiment import ExperimentPage

    page = ExperimentPage(vllm_install, set())
    qtbot.addWidget(page)
    page.show()
    page.set_document(tomllib.loads(attach_plan(standin_server.base_url, "DEMO_SERVER_KEY")))
    assert page.profile_form.kind.currentData() == "attach"
    assert page.profile_form.warning.isVisible()
    assert "counters include any other traffic" in page.profile_form.warning.text()
    # The plan's findings are checked off the GUI thread; the summary shows first.
    qtbot.waitUntil(lambda: "checking" not in page.status.text(), timeout=10000)
    assert "attached server: its counters include any other traffic" in page.status.text()
    assert "(attached to" in page.commands.toPlainText()
    # Switching to this machine hides the warning and shows the usual vllm serve command.
    page.profile_form.kind.setCurrentIndex(page.profile_form.kind.findData("local"))
    page.validate()
    assert not page.profile_form.warning.isVisible()
    assert page.commands.toPlainText().startswith("vllm serve")
    # Its findings too come from the pool: they end while the page lives.
    qtbot.waitUntil(lambda: "checking" not in page.status.text(), timeout=10000)
    assert "attached server" not in page.status.text()
