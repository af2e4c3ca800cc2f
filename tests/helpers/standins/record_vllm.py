"""Records what a real vLLM CPU server sends, for the stand-in in vllm_server.py to replay.

    python tests/helpers/standins/record_vllm.py [OUT_DIR]     (default: tests/fixtures/vllm)

Starts the demo target twice (baseline; the noisy-copy draft with N=3 and per-request
spec-decode metrics), the way the runner does, and writes for each: the answers to the plain GET
endpoints with and without the run key, refusals (no key, unknown model), /metrics before and
after, every streamed chat completion of the built-in prompts (each SSE line with its arrival
time), and the server's own output. The counters' advance over the recording is checked against
the sum of the per-request figures before anything is written: the stand-in relies on it.
Also saves `vllm bench serve --save-result` against the draft server.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from workbench import launch, metrics, plan  # noqa: E402
from workbench.checkpoints import demo  # noqa: E402
from workbench.host import engine, vllm_cli  # noqa: E402
from workbench.load import workloads  # noqa: E402
from workbench.sweep import runner  # noqa: E402

SERVED = "smollm2"
CONCURRENCY = 4


def scrub(text: str) -> str:
    """This machine's folders out of what is kept: the repository, the models, the home folder."""
    models = str(demo.folder(demo.TARGET).parent)
    for local, kept in ((models, "~/.local/share/draftbench/models"), (str(ROOT), "REPO"),
                        (os.path.expanduser("~"), "~"), (tempfile.gettempdir(), "TMP")):
        text = text.replace(local, kept)
    return text


def server(method: str, models: dict[str, Path]) -> plan.Server:
    speculative = method != "baseline"
    return plan.Server(target=str(models[demo.TARGET.name]), served_name=SERVED, method=method,
                       n=3 if speculative else None,
                       draft=str(models[demo.DRAFT_NOISY.name]) if speculative else None,
                       options=(), max_model_len=2048, dtype="bfloat16", extra_args=(), env=(),
                       enforce_eager=True, per_request_metrics=speculative)


def answer(r: httpx.Response) -> dict:
    keep = {k: v for k, v in r.headers.items() if k.lower() in ("content-type", "www-authenticate")}
    return {"status": r.status_code, "headers": keep, "body": scrub(r.text)}


async def stream(client: httpx.AsyncClient, url: str, prompt: workloads.Prompt, max_tokens: int) -> dict:
    body = {"model": SERVED, "messages": [{"role": "user", "content": prompt.text}], "max_tokens": max_tokens,
            "temperature": 0.0, "top_p": 1.0, "stream": True, "stream_options": {"include_usage": True}}
    t0 = time.perf_counter()
    lines = []
    async with client.stream("POST", url, json=body) as r:
        headers = {k: v for k, v in r.headers.items() if k.lower() == "content-type"}
        async for line in r.aiter_lines():
            if line:
                lines.append([round(time.perf_counter() - t0, 4), line])
    return {"prompt": prompt.text, "max_tokens": max_tokens, "status": r.status_code, "headers": headers,
            "lines": lines}


async def stream_all(base: str, key: str, jobs: list[tuple[workloads.Prompt, int]]) -> list[dict]:
    gate = asyncio.Semaphore(CONCURRENCY)
    async with httpx.AsyncClient(timeout=600, headers={"Authorization": f"Bearer {key}"}) as client:
        async def one(job):
            async with gate:
                return await stream(client, base + "/v1/chat/completions", *job)
        return await asyncio.gather(*(one(j) for j in jobs))


def final(record: dict) -> dict:
    for _, line in reversed(record["lines"]):
        if line.startswith("data: {") and '"usage"' in line:
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                return chunk
    raise AssertionError(f"no usage chunk for {record['prompt'][:40]!r}")


def check_counters(before: metrics.Snapshot, after: metrics.Snapshot, records: list[dict]) -> dict:
    """The counters' window equals the sum of what the requests reported (the stand-in's model)."""
    w = metrics.window(before, after)
    chunks = [final(r) for r in records]
    completion = sum(c["usage"]["completion_tokens"] for c in chunks)
    assert w.generation_tokens == completion, (w.generation_tokens, completion)
    specs = [(c.get("metrics") or {}).get("speculative_decoding") for c in chunks]
    if not any(specs):
        return {"generation_tokens": completion}
    assert w.drafts == sum(s["num_spec_steps"] for s in specs)
    assert w.draft_tokens == sum(s["num_draft_tokens"] for s in specs)
    assert w.accepted == sum(s["num_accepted_draft_tokens"] for s in specs)
    per_pos = [sum(sum(s["acceptance_histogram"][i + 1:]) for s in specs) for i in range(len(w.accepted_per_position))]
    assert list(w.accepted_per_position) == per_pos, (w.accepted_per_position, per_pos)
    return {"generation_tokens": completion, "drafts": w.drafts, "accepted": w.accepted}


def bench(base: str, key: str, install: engine.VllmInstall, models: dict[str, Path], out: Path) -> None:
    prompts = workloads.sample(workloads.load("builtin"), 6, seed=9)
    dataset = out / "bench-prompts.jsonl"
    dataset.write_text("".join(json.dumps({"prompt": p.text}) + "\n" for p in prompts))
    result = out / "bench_serve_draft_model_n3.json"
    args = ["bench", "serve", "--backend", "openai-chat", "--endpoint", "/v1/chat/completions",
            "--base-url", base, "--model", SERVED, "--tokenizer", str(models[demo.TARGET.name]),
            "--dataset-name", "custom", "--dataset-path", str(dataset), "--num-prompts", "6",
            "--custom-output-len", "40", "--max-concurrency", "2", "--temperature", "0", "--num-warmups", "0",
            "--disable-tqdm", "--save-result", "--result-filename", str(result)]
    done = subprocess.run(vllm_cli.argv(install.python, args), capture_output=True, text=True, timeout=900,
                          env={**os.environ, "OPENAI_API_KEY": key})
    dataset.unlink()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result.write_text(scrub(json.dumps(json.loads(result.read_text()), indent=1)) + "\n")


def record(method: str, lengths: tuple[int, ...], install, models, out: Path) -> None:
    log: list[str] = []
    srv = launch.LocalServer(launch.prepare(server(method, models), install, launch.free_port()),
                             on_line=lambda _stream, line: log.append(line))
    srv.start()
    try:
        srv.wait_healthy(600)
        base, key = srv.spec.base_url, srv.api_key
        auth = {"Authorization": f"Bearer {key}"}
        get = {}
        for path in ("/health", "/version", "/v1/models", "/metrics"):
            get[path] = answer(httpx.get(base + path, headers=auth, timeout=60))
            get[path + " without key"] = answer(httpx.get(base + path, timeout=60))
        for key in ("/metrics", "/metrics without key"):
            get[key]["body"] = "(metrics_before below)"  # the page itself is kept once
        hello = {"model": SERVED, "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4}
        refusals = {
            "no key": answer(httpx.post(base + "/v1/chat/completions", json=hello, timeout=60)),
            "wrong key": answer(httpx.post(base + "/v1/chat/completions", json=hello, timeout=60,
                                           headers={"Authorization": "Bearer not-the-key"})),
            "unknown model": answer(httpx.post(base + "/v1/chat/completions", json={**hello, "model": "other"},
                                               headers=auth, timeout=60)),
        }
        before_text = httpx.get(base + "/metrics", timeout=60).text
        prompts = [runner.WARMUP_PROMPT] + workloads.load("builtin")
        jobs = [(p, n) for n in lengths for p in prompts]
        records = asyncio.run(stream_all(base, key, jobs))
        time.sleep(1.0)  # the last step's counters reach /metrics a moment after the response ends
        after_text = httpx.get(base + "/metrics", timeout=60).text
        checked = check_counters(metrics.parse(before_text), metrics.parse(after_text), records)
        if method != "baseline":
            bench(base, key, install, models, out)
    finally:
        srv.stop()
    name = "baseline" if method == "baseline" else f"{method}_n3"
    with gzip.open(out / f"{name}_streams.jsonl.gz", "wt", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    meta = {"served_name": SERVED, "method": method, "n": 3 if method != "baseline" else None,
            "command": scrub(srv.spec.command),
            "vllm": install.version, "torch": install.torch, "recorded": time.strftime("%Y-%m-%d"),
            "concurrency": CONCURRENCY, "max_tokens": list(lengths), "checked": checked,
            "get": get, "refusals": refusals, "metrics_before": scrub(before_text), "metrics_after": scrub(after_text)}
    (out / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")
    (out / f"{name}_server.log").write_text(scrub("\n".join(log)) + "\n")


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests" / "fixtures" / "vllm"
    out.mkdir(parents=True, exist_ok=True)
    models = demo.ensure()
    install = engine.probe(sys.executable)
    record("draft_model", (32, 48), install, models, out)
    record("baseline", (32,), install, models, out)
    print(f"recorded into {out}")


if __name__ == "__main__":
    main()
