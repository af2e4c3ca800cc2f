"""The vLLM stand-in (tests/helpers/standins/vllm_server.py) against the real output it replays, and the
runner measuring it through the attach profile: what the fast tier relies on instead of a server."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import time
from pathlib import Path

import httpx
import pytest

from helpers.plans import attach_plan
from helpers.standins.vllm_server import StandinVllm, counted_at, final_chunk, finishes, recording
from workbench import launch, load, metrics, plan, store
from workbench.analysis import compare
from workbench.load import workloads
from workbench.sweep import runner

SCRIPT = Path(__file__).parent / "helpers" / "standins" / "vllm_server.py"


def _spec(chunk: dict) -> dict:
    return (chunk.get("metrics") or {}).get("speculative_decoding") or {}


@pytest.mark.parametrize("name", ["draft_model_n3", "baseline"])
def test_the_real_counters_advanced_by_what_the_requests_reported(name):
    """The stand-in's model, checked on the recording itself: between the two recorded scrapes,
    vLLM's counters grew by exactly the usage and per-request figures of the recorded answers."""
    rec = recording(name)
    w = metrics.window(metrics.parse(rec.meta["metrics_before"]), metrics.parse(rec.meta["metrics_after"]))
    chunks = [final_chunk(r) for r in rec.streams.values()]
    assert len(chunks) == len(rec.streams) > 40
    assert w.generation_tokens == sum(c["usage"]["completion_tokens"] for c in chunks) > 0
    assert w.prompt_tokens == sum(c["usage"]["prompt_tokens"] for c in chunks)
    assert w.requests_finished == len(chunks)
    specs = [_spec(c) for c in chunks]
    if name == "baseline":
        assert not any(specs) and w.drafts == 0
        return
    assert w.drafts == sum(s["num_spec_steps"] for s in specs) > 0
    assert w.draft_tokens == sum(s["num_draft_tokens"] for s in specs) == 3 * w.drafts
    assert w.accepted == sum(s["num_accepted_draft_tokens"] for s in specs)
    assert list(w.accepted_per_position) == [sum(sum(s["acceptance_histogram"][i + 1:]) for s in specs)
                                             for i in range(3)]


def test_answers_and_refusals_are_the_recorded_ones(standin_server):
    base, key = standin_server.base_url, standin_server.api_key
    rec = standin_server.recording.meta
    assert httpx.get(base + "/health").status_code == 200
    version = httpx.get(base + "/version").json()
    assert version == json.loads(rec["get"]["/version"]["body"]) and version["version"].startswith("0.32.0")
    refused = httpx.get(base + "/v1/models")
    assert refused.status_code == 401 and refused.text == rec["get"]["/v1/models without key"]["body"]
    models = httpx.get(base + "/v1/models", headers={"Authorization": f"Bearer {key}"}).json()
    assert [m["id"] for m in models["data"]] == ["smollm2"]
    body = {"model": "smollm2", "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4, "stream": True}
    assert httpx.post(base + "/v1/chat/completions", json=body).status_code == 401
    wrong = httpx.post(base + "/v1/chat/completions", json={**body, "model": "nope"},
                       headers={"Authorization": f"Bearer {key}"})
    assert wrong.status_code == 404 and "`nope`" in wrong.text


def test_streamed_answers_advance_the_counters_as_vllms_do(standin_server):
    base, key = standin_server.base_url, standin_server.api_key
    prompts = workloads.sample(workloads.load("builtin"), 6, seed=3)
    before = metrics.parse(httpx.get(base + "/metrics").text)
    results = asyncio.run(load.generate(base, key, "smollm2", prompts, load.Sampling(32, 0.0), concurrency=2))
    after = metrics.parse(httpx.get(base + "/metrics").text)
    assert all(r.ok for r in results) and all(q["exact"] for q in standin_server.requests[-6:])
    for p, r in zip(prompts, results):
        chunk = final_chunk(standin_server.recording.streams[(p.text, 32)])
        assert r.output_tokens == chunk["usage"]["completion_tokens"] > 0 and r.spec == _spec(chunk)
        assert r.ttft_ms is not None and r.finish_reason in ("stop", "length")
    w = metrics.window(before, after)
    assert w.drafts == sum(r.spec["num_spec_steps"] for r in results) > 0
    assert w.accepted == sum(r.spec["num_accepted_draft_tokens"] for r in results)
    assert w.generation_tokens == sum(r.output_tokens for r in results) and w.requests_finished == 6
    summed = [sum(sum(r.spec["acceptance_histogram"][i + 1:]) for r in results) for i in range(3)]
    assert list(w.accepted_per_position) == summed


def test_a_request_is_in_metrics_once_its_last_token_has_reached_the_client():
    """As in vLLM, where an engine step's stats are recorded before its outputs go out: a scrape
    made on the chunk with the finish reason already counts the request, even while the rest of
    the stream (usage, [DONE]) is still to come, held back here by 5 s. Checked by order, not time:
    when the scrape answers, the request is still running on the server."""
    rec = recording("draft_model_n3")
    (prompt, max_tokens), record = next(iter(rec.streams.items()))
    at = counted_at(record)
    assert finishes(record["lines"][at][1]) and at < len(record["lines"]) - 1
    held = {**record, "lines": record["lines"][:at + 1] + [(t + 500.0, line) for t, line in record["lines"][at + 1:]]}
    with StandinVllm("draft_model_n3") as server:
        server.recording = dataclasses.replace(rec, streams={(prompt, max_tokens): held})
        before = metrics.parse(httpx.get(server.base_url + "/metrics").text)
        body = {"model": "smollm2", "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
                "stream": True, "stream_options": {"include_usage": True}}
        with httpx.stream("POST", server.base_url + "/v1/chat/completions", json=body, timeout=30) as r:
            for line in r.iter_lines():
                if finishes(line):
                    mid = metrics.parse(httpx.get(server.base_url + "/metrics").text)
                    still_running = server.running
                    break
        assert still_running == 1  # the scrape came before the held-back lines
    w = metrics.window(before, mid)
    assert w.generation_tokens == final_chunk(record)["usage"]["completion_tokens"] > 0
    assert w.requests_finished == 1 and w.drafts == _spec(final_chunk(record))["num_spec_steps"] > 0




def test_the_runner_measures_the_standin_through_attach(standin_server, demo_models, vllm_install, tmp_path,
                                                        monkeypatch):
    from workbench.checkpoints import demo

    monkeypatch.setenv("STANDIN_KEY", standin_server.api_key)
    p = plan.loads(attach_plan(standin_server.base_url, demo_models[demo.DRAFT_NOISY.name]))
    db_path = tmp_path / "attach.sqlite"
    summary = runner.Runner(p, str(db_path), vllm_install, emit=lambda e: None, scrape_interval_s=0.1).run()
    assert summary["completed"] == 1
    db = store.open_db(db_path, readonly=True)
    (row,) = store.runs(db)
    reqs = list(db["requests"].rows_where("run_id = ?", [row.id], order_by="idx"))
    # The six measured prompts were answered with their own recordings, and the row adds them up.
    sent = workloads.sample(workloads.load("builtin"), 6, seed=row.repeat)
    chunks = [final_chunk(standin_server.recording.streams[(q.text, 32)]) for q in sent]
    assert [r["output_tokens"] for r in reqs] == [c["usage"]["completion_tokens"] for c in chunks]
    assert row.output_tokens == sum(r["output_tokens"] for r in reqs) > 0
    assert row.drafts == sum(_spec(c)["num_spec_steps"] for c in chunks) == sum(r["spec_drafts"] for r in reqs)
    assert row.accepted == sum(r["spec_accepted"] for r in reqs)
    assert row.mal == pytest.approx(1 + row.accepted / row.drafts)
    survival = [0.0] * 3
    for r in reqs:
        for i, s in enumerate(compare.survival_from_histogram(json.loads(r["spec_histogram"]))):
            survival[i] += s * r["spec_drafts"]
    assert list(row.per_position) == pytest.approx([s / row.drafts for s in survival])
    assert db.execute("SELECT count(*) FROM samples WHERE run_id = ?", [row.id]).fetchone()[0] >= 1
    assert json.loads(row.environment)["vllm_server"] == httpx.get(standin_server.base_url + "/version").json()["version"]


def test_the_standin_runs_as_a_server_process_with_vllms_output():
    """As `vllm serve` would be: its own process, the run key from VLLM_API_KEY, the recorded
    start-up output on stdout, stopped with its process group."""
    port = launch.free_port()
    srv = launch.LocalServer(launch.LaunchSpec([sys.executable, str(SCRIPT), "--port", str(port)], [], {}, port))
    srv.start()
    try:
        srv.wait_healthy(60)
        base = srv.spec.base_url
        assert httpx.get(base + "/v1/models").status_code == 401
        assert httpx.get(base + "/v1/models", headers={"Authorization": f"Bearer {srv.api_key}"}).status_code == 200
        # The log is read by a thread of its own: wait for the lines, then check their order.
        deadline = time.monotonic() + 30
        while not any("Application startup complete" in line for line in srv.tail) and time.monotonic() < deadline:
            time.sleep(0.05)
        lines = list(srv.tail)
        starting = next(i for i, line in enumerate(lines) if "Starting vLLM" in line)
        assert any("Application startup complete" in line for line in lines[starting + 1:]), lines
    finally:
        srv.stop()
    assert not srv.alive


def test_the_periodic_log_lines_say_what_was_served():
    def figures() -> list[dict]:
        return [metrics.parse_log_line(line) for line in server.log if metrics.LOG_MARK in line]

    with StandinVllm(log_interval_s=0.3) as server:
        prompts = workloads.sample(workloads.load("builtin"), 4, seed=1)
        results = asyncio.run(load.generate(server.base_url, "", "smollm2", prompts, load.Sampling(32, 0.0), 2))
        drafted = sum(r.spec["num_draft_tokens"] for r in results)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and sum(f["drafted"] for f in figures()) < drafted:
            time.sleep(0.1)
    assert sum(f["drafted"] for f in figures()) == drafted > 0
    assert sum(f["accepted"] for f in figures()) == sum(r.spec["num_accepted_draft_tokens"] for r in results)
    assert all(len(f["per_position"]) == 3 for f in figures())
    assert sum('"POST /v1/chat/completions HTTP/1.1" 200' in line for line in server.log) == 4


def test_a_real_server_started_outside_the_vllm_tier_fails_the_test():
    """The guard in conftest.py: this test has no `vllm` marker, so starting vLLM fails it at once
    (before any process starts), which keeps the fast tier free of real servers."""
    from workbench.host import vllm_cli

    port = launch.free_port()
    srv = launch.LocalServer(launch.LaunchSpec(vllm_cli.argv(sys.executable, ["serve", "x"]), ["serve", "x"], {}, port))
    with pytest.raises(pytest.fail.Exception, match="mark it `vllm`"):
        srv.start()
    assert srv.proc is None
