"""The load generator's ceiling: output tok/s and client CPU per 10k tok/s against a stand-in
server that streams as fast as it can (bench/sse_standin.py), for Draftbench's client pool and,
for reference, the httpx line reader Draftbench used before.

The figure that matters is CPU-seconds per 10k output tokens (the same as cores per 10k tok/s):
at most 0.3 keeps the client from limiting any server it measures. The tok/s column is the
ceiling on this host, where the stand-in shares the cores with the client.

usage: python bench/client_ceiling.py [--workers 4] [--concurrency 16 64 256] [--tokens 256] [--step-ms 0] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from workbench import launch, load  # noqa: E402
from workbench.load import pool  # noqa: E402
from workbench.load.workloads import Prompt  # noqa: E402


async def _httpx_lines(base: str, prompts: list[Prompt], sampling: load.Sampling, concurrency: int) -> int:
    """The previous client: httpx's line iterator and the standard json module on every chunk."""
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency + 2, max_keepalive_connections=concurrency + 2)
    tokens = 0
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:
        async def one(p: Prompt) -> None:
            nonlocal tokens
            async with gate:
                async with client.stream("POST", base + "/v1/chat/completions",
                                         json=load.chat_body("standin", p, sampling)) as r:
                    async for line in r.aiter_lines():
                        if line.startswith("data: ") and line[6:] != "[DONE]":
                            usage = json.loads(line[6:]).get("usage")
                            if usage:
                                tokens += usage["completion_tokens"]
        await asyncio.gather(*(one(p) for p in prompts))
    return tokens


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    ap.add_argument("--concurrency", type=int, nargs="+", default=[16, 64, 256])
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--requests-per-stream", type=int, default=4)
    ap.add_argument("--port", type=int, default=8011)
    ap.add_argument("--skip-httpx", action="store_true")
    ap.add_argument("--step-ms", type=float, default=0.0,
                    help="the stand-in's pause between tokens of a stream (1.3 is about a small model at "
                         "concurrency 1 on a GPU): the client's cost when each token wakes it on its own")
    ap.add_argument("--smoke", action="store_true",
                    help="a few seconds: one stand-in process, concurrency 2, 8 tokens, a free port")
    args = ap.parse_args()
    if args.smoke:
        args.workers, args.concurrency, args.tokens, args.requests_per_stream = 1, [2], 8, 1
        args.port = launch.free_port()
    server = subprocess.Popen([sys.executable, str(ROOT / "bench" / "sse_standin.py"), "--port", str(args.port),
                               "--workers", str(args.workers), "--step-ms", str(args.step_ms)],
                              start_new_session=True)
    base = f"http://127.0.0.1:{args.port}"
    try:
        for _ in range(100):
            try:
                httpx.get(base + "/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        sampling = load.Sampling(args.tokens, 0.0)
        rows = []
        for c in args.concurrency:
            prompts = [Prompt(f"p{i}", "standin", "hello") for i in range(c * args.requests_per_stream)]
            n = pool.processes_for(c)
            with pool.ClientPool(base, "key", "standin", processes=n) as clients:
                clients.run(prompts[:c], sampling, c)  # warm: connections open, code paths hot
                out = clients.run(prompts, sampling, c)
            tokens = sum(r.output_tokens for r in out.results if r.ok)
            rows.append(("draftbench pool", c, n, tokens / out.wall_s, out.client_cpu_s * 1e4 / tokens))
            if not args.skip_httpx:
                cpu0, t0 = time.process_time(), time.perf_counter()
                tokens = asyncio.run(_httpx_lines(base, prompts, sampling, c))
                wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
                rows.append(("httpx lines (before)", c, 1, tokens / wall, cpu * 1e4 / tokens))
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the stand-in and its worker processes
        server.wait(timeout=10)
    print(f"\nload-generator ceiling against bench/sse_standin.py ({args.workers} server processes, "
          f"{os.cpu_count()} cores, {args.tokens} tokens a request, {args.step_ms} ms between tokens)")
    print("| client | concurrency | client processes | tok/s | client CPU-s per 10k tokens |")
    print("| --- | --- | --- | --- | --- |")
    for name, c, n, tok_s, cpu in rows:
        print(f"| {name} | {c} | {n} | {tok_s:,.0f} | {cpu:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
