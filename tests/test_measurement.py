"""Our window figures against the server's own counters and against `vllm bench serve`, on one
shared real vLLM CPU server (demo target + noisy-copy draft, N=3)."""

import asyncio
import json
import os
import re
import subprocess

import httpx
import pytest

from workbench import load, metrics
from workbench.checkpoints import demo
from workbench.host import vllm_cli
from workbench.load import workloads

COUNTER = re.compile(r'^(vllm:spec_decode_num_(?:drafts|draft_tokens|accepted_tokens)_total)\{[^}]*\} ([\d.e+]+)$', re.M)
PER_POS = re.compile(r'^vllm:spec_decode_num_accepted_tokens_per_pos_total\{[^}]*position="(\d+)"[^}]*\} ([\d.e+]+)$', re.M)


def raw_counters(base_url: str) -> dict:
    """A deliberately independent reading of /metrics: plain regular expressions, no prometheus_client."""
    text = httpx.get(base_url + "/metrics").text
    out = {name: float(v) for name, v in COUNTER.findall(text)}
    out.update({f"pos{p}": float(v) for p, v in PER_POS.findall(text)})
    return out


def test_window_equals_the_servers_own_counters(draft_server):
    prompts = workloads.sample(workloads.load("builtin"), 6, seed=3)
    before_raw = raw_counters(draft_server.spec.base_url)
    before = metrics.parse(httpx.get(draft_server.spec.base_url + "/metrics").text)
    results = asyncio.run(load.generate(draft_server.spec.base_url, draft_server.api_key, "smollm2", prompts,
                                        load.Sampling(40, 0.0), concurrency=2))
    after = metrics.parse(httpx.get(draft_server.spec.base_url + "/metrics").text)
    after_raw = raw_counters(draft_server.spec.base_url)
    assert all(r.ok for r in results)
    w = metrics.window(before, after)
    d = {k: after_raw[k] - before_raw.get(k, 0.0) for k in after_raw}
    assert w.drafts == d["vllm:spec_decode_num_drafts_total"] > 0
    assert w.draft_tokens == d["vllm:spec_decode_num_draft_tokens_total"]
    assert w.accepted == d["vllm:spec_decode_num_accepted_tokens_total"]
    assert list(w.accepted_per_position) == [d["pos0"], d["pos1"], d["pos2"]]
    # Per-request attribution (vLLM's own, per completion) adds up to the same window.
    assert sum(r.spec["num_spec_steps"] for r in results) == w.drafts
    assert sum(r.spec["num_accepted_draft_tokens"] for r in results) == w.accepted


def run_bench(server, install, demo_models, tmp_path, seed=5):
    """`vllm bench serve --save-result` against a running server; returns the result file."""
    prompts = workloads.sample(workloads.load("builtin"), 6, seed=seed)
    dataset = tmp_path / "prompts.jsonl"
    dataset.write_text("".join(json.dumps({"prompt": p.text}) + "\n" for p in prompts))
    result = tmp_path / "bench.json"
    args = ["bench", "serve", "--backend", "openai-chat", "--endpoint", "/v1/chat/completions",
            "--base-url", server.spec.base_url, "--model", "smollm2",
            "--tokenizer", str(demo_models[demo.TARGET.name]), "--dataset-name", "custom",
            "--dataset-path", str(dataset), "--num-prompts", "6", "--custom-output-len", "40",
            "--max-concurrency", "2", "--temperature", "0", "--num-warmups", "0", "--disable-tqdm",
            "--save-result", "--result-filename", str(result)]
    done = subprocess.run(vllm_cli.argv(install.python, args), capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OPENAI_API_KEY": server.api_key})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return result


def test_vllm_bench_serve_reports_the_same_acceptance(draft_server, vllm_install, demo_models, tmp_path):
    before = metrics.parse(httpx.get(draft_server.spec.base_url + "/metrics").text)
    result = run_bench(draft_server, vllm_install, demo_models, tmp_path)
    after = metrics.parse(httpx.get(draft_server.spec.base_url + "/metrics").text)
    bench = json.loads(result.read_text())
    assert bench["completed"] == 6
    w = metrics.window(before, after)
    assert bench["spec_decode_num_drafts"] == w.drafts
    assert bench["spec_decode_accepted_tokens"] == w.accepted
    # vLLM bench reports the acceptance rate in percent and per-position rates as fractions.
    assert bench["spec_decode_acceptance_rate"] == pytest.approx(100 * w.acceptance_rate, abs=1e-9)
    assert bench["spec_decode_acceptance_length"] == pytest.approx(w.mean_acceptance_length, abs=1e-9)
    assert bench["spec_decode_per_position_acceptance_rates"] == pytest.approx(w.per_position, abs=1e-9)
    assert bench["total_output_tokens"] == w.generation_tokens
