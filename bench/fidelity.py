"""Fidelity: Draftbench's measurement against `vllm bench serve` on the same server and prompts.

One vLLM server (the demo target with the noisy-copy draft, draft_model N=3); rounds alternate
between Draftbench's load generator (measured the way the runner measures a run: a warm-up request,
then a window between two /metrics scrapes) and `vllm bench serve` over the same prompts, the same
concurrency and output length. Compared: output tokens/s, and the acceptance figures each reports.

    python bench/fidelity.py [--rounds 3] [--prompts 16] [--concurrency 4] [--max-tokens 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from common import SMOKE_HELP, server_config, skipped, start, table
from gpu_fidelity import VllmBench, spread
from workbench import load, metrics
from workbench.checkpoints import demo
from workbench.host import engine
from workbench.sweep import runner
from workbench.load import workloads


async def draftbench_round(srv, prompts, sampling, concurrency) -> dict:
    base, key = srv.spec.base_url, srv.api_key
    await load.generate(base, key, "smollm2", [runner.WARMUP_PROMPT], sampling, 1)
    async with httpx.AsyncClient(timeout=30) as client:
        before = metrics.parse((await client.get(base + "/metrics")).text, time.time())
        t0 = time.perf_counter()
        results = await load.generate(base, key, "smollm2", prompts, sampling, concurrency)
        wall = time.perf_counter() - t0
        after = metrics.parse((await client.get(base + "/metrics")).text, time.time())
    s = runner.summarize(results, metrics.window(before, after), wall)
    return {"tok_s": s["output_tok_s"], "tokens": s["output_tokens"], "mal": s["mal"],
            "acceptance_rate": s["acceptance_rate"], "per_position": json.loads(s["per_position"]),
            "ok": s["requests_ok"]}


def bench_round(srv, bench, prompts, args) -> dict:
    # The served name is the demo's; the worker sends the prompts as chat messages with no
    # template of its own (--skip-chat-template), so the server applies it once, as for ours.
    r = bench.run(srv.spec.base_url, srv.api_key, str(demo.ensure()[demo.TARGET.name]), prompts, args.max_tokens,
                  args.concurrency, model="smollm2", warmups=1)
    return {"tok_s": r["output_throughput"], "tokens": r["total_output_tokens"],
            "mal": r.get("spec_decode_acceptance_length"),
            "acceptance_rate": r["spec_decode_acceptance_rate"] / 100 if r.get("spec_decode_acceptance_rate") is not None else None,
            "per_position": r.get("spec_decode_per_position_acceptance_rates"), "ok": r["completed"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = ap.parse_args()
    if args.smoke:
        skipped("the vLLM server and both clients; the tables are of made-up rounds")
        made_up = [{"tok_s": 40.0 + i, "tokens": 1000, "mal": 2.1, "acceptance_rate": 0.37,
                    "per_position": [0.6, 0.35, 0.15], "ok": args.prompts} for i in range(2)]
        report(args, made_up, made_up[::-1])
        return
    install = engine.probe()
    prompts = workloads.sample(workloads.load("builtin"), args.prompts, seed=11)
    sampling = load.Sampling(args.max_tokens, 0.0)
    srv, _ = start(server_config("draft_model", 3, demo.DRAFT_NOISY.name))
    ours, theirs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        bench = VllmBench(install, Path(tmp))
        try:
            for i in range(args.rounds):
                # Alternating, so drift in the machine's load hits both clients alike.
                pair = [lambda: ours.append(asyncio.run(draftbench_round(srv, prompts, sampling, args.concurrency))),
                        lambda: theirs.append(bench_round(srv, bench, prompts, args))]
                for step in (pair if i % 2 == 0 else pair[::-1]):
                    step()
        finally:
            srv.stop()
            bench.close()
    report(args, ours, theirs)


def report(args, ours: list[dict], theirs: list[dict]) -> None:
    rows = []
    for i, (a, b) in enumerate(zip(ours, theirs), 1):
        rows.append([i, f"{a['tok_s']:.1f}", f"{b['tok_s']:.1f}", f"{a['tok_s'] / b['tok_s']:.3f}",
                     f"{a['mal']:.3f}", f"{b['mal']:.3f}", f"{a['acceptance_rate']:.3f}", f"{b['acceptance_rate']:.3f}",
                     f"{a['tokens']} / {b['tokens']}"])
    ratio = [a["tok_s"] / b["tok_s"] for a, b in zip(ours, theirs)]
    mean = lambda key, xs: statistics.fmean(x[key] for x in xs)  # noqa: E731
    a, b = [x["tok_s"] for x in ours], [x["tok_s"] for x in theirs]
    rows.append(["median (spread)", f"{statistics.median(a):.1f} ({spread(a):.1%})",
                 f"{statistics.median(b):.1f} ({spread(b):.1%})", f"{statistics.median(ratio):.3f}", "", "", "", "", ""])
    rows.append(["mean", f"{mean('tok_s', ours):.1f}", f"{mean('tok_s', theirs):.1f}", f"{statistics.fmean(ratio):.3f}",
                 f"{mean('mal', ours):.3f}", f"{mean('mal', theirs):.3f}", f"{mean('acceptance_rate', ours):.3f}",
                 f"{mean('acceptance_rate', theirs):.3f}", ""])
    table(f"Fidelity: Draftbench vs vllm bench serve (draft_model N=3, {args.prompts} prompts, "
          f"concurrency {args.concurrency}, {args.max_tokens} tokens, temperature 0)",
          ["round", "Draftbench tok/s", "vllm bench tok/s", "ratio", "Draftbench MAL", "vllm bench MAL",
           "Draftbench accept", "vllm bench accept", "output tokens (ours / theirs)"], rows)
    pp = lambda xs: " ".join(f"{statistics.fmean(x['per_position'][i] for x in xs):.3f}" for i in range(3))  # noqa: E731
    table("Per-position acceptance, mean over rounds", ["client", "p1 p2 p3"],
          [["Draftbench", pp(ours)], ["vllm bench serve", pp(theirs)]])


if __name__ == "__main__":
    main()
