"""Client cost: CPU seconds per 1,000 streamed tokens of Draftbench's load generator against
`vllm bench serve`'s client, side by side on one server (the demo target, no speculation, so tokens
stream as fast as this machine can make them).

Each client runs as its own process and is measured with getrusage (user + system time of the
finished child). Every client is run at two sizes; the difference between them divided by the
difference in tokens is the marginal cost per token, free of start-up (imports, tokenizer
loading), which is reported separately.

    python bench/client_cost.py [--small 8] [--large 40] [--max-tokens 128] [--concurrency 4] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import SMOKE_HELP, server_config, skipped, start, table
from workbench.checkpoints import demo
from workbench.host import engine, vllm_cli
from workbench.load import workloads

HERE = Path(__file__).resolve().parent


def cpu_of(argv: list[str], env: dict) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"client failed: {done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    return after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime, done.stdout


def draftbench(srv, count, args) -> tuple[float, int]:
    user, sys_, out = cpu_of([sys.executable, str(HERE / "_client.py"), srv.spec.base_url, srv.api_key,
                              str(count), str(args.max_tokens), str(args.concurrency)], dict(os.environ))
    tokens, failed = map(int, out.split()[-2:])
    assert failed == 0
    return user + sys_, tokens


def vllm_bench(srv, install, count, args, folder: Path) -> tuple[float, int]:
    prompts = workloads.sample(workloads.load("builtin"), count, seed=3)
    dataset = folder / f"p{count}.jsonl"
    dataset.write_text("".join(json.dumps({"prompt": p.text}) + "\n" for p in prompts))
    result = folder / f"r{count}.json"
    argv = ["bench", "serve", "--backend", "openai-chat", "--endpoint", "/v1/chat/completions",
            "--base-url", srv.spec.base_url, "--model", "smollm2",
            "--tokenizer", str(demo.ensure()[demo.TARGET.name]), "--dataset-name", "custom",
            "--dataset-path", str(dataset), "--num-prompts", str(count), "--custom-output-len", str(args.max_tokens),
            "--ignore-eos", "--max-concurrency", str(args.concurrency), "--temperature", "0",
            "--num-warmups", "0", "--disable-tqdm", "--save-result", "--result-filename", str(result)]
    user, sys_, _ = cpu_of(vllm_cli.argv(install.python, argv), {**os.environ, "OPENAI_API_KEY": srv.api_key})
    data = json.loads(result.read_text())
    assert data["failed"] == 0
    return user + sys_, data["total_output_tokens"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=int, default=8)
    ap.add_argument("--large", type=int, default=40)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = ap.parse_args()
    runs: dict[tuple[str, int], list[tuple[float, int]]] = {}
    if args.smoke:
        skipped("the vLLM server and both clients; the table is of made-up CPU times")
        runs = {(name, count): [(startup + count * args.max_tokens * per_token, count * args.max_tokens)]
                for name, startup, per_token in (("Draftbench", 1.0, 0.0004), ("vllm bench serve", 6.0, 0.0009))
                for count in (args.small, args.large)}
    else:
        measure(args, runs)
    report(args, runs)


def measure(args, runs: dict) -> None:
    install = engine.probe()
    srv, _ = start(server_config())
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for rep in range(args.repeats):
                for count in (args.small, args.large):
                    clients = [("Draftbench", lambda c=count: draftbench(srv, c, args)),
                               ("vllm bench serve", lambda c=count: vllm_bench(srv, install, c, args, Path(tmp)))]
                    for name, fn in (clients if rep % 2 == 0 else clients[::-1]):
                        runs.setdefault((name, count), []).append(fn())
    finally:
        srv.stop()


def report(args, runs: dict[tuple[str, int], list[tuple[float, int]]]) -> None:
    rows = []
    for name in ("Draftbench", "vllm bench serve"):
        small = runs[(name, args.small)]
        large = runs[(name, args.large)]
        cpu_s = statistics.median(c for c, _ in small)
        cpu_l = statistics.median(c for c, _ in large)
        tok_s = statistics.median(t for _, t in small)
        tok_l = statistics.median(t for _, t in large)
        marginal = (cpu_l - cpu_s) / (tok_l - tok_s) * 1000
        startup = cpu_s - marginal * tok_s / 1000
        rows.append([name, f"{marginal:.3f}", f"{cpu_l / tok_l * 1000:.3f}", f"{startup:.1f}",
                     f"{cpu_s:.2f} / {cpu_l:.2f}", f"{tok_s} / {tok_l}"])
    table(f"Client cost (CPU seconds, user + system; {args.max_tokens} tokens per request, "
          f"concurrency {args.concurrency}, median of {args.repeats})",
          ["client", "CPU s per 1,000 tokens (marginal)", "CPU s per 1,000 tokens (whole process)",
           "start-up CPU s", f"CPU s at {args.small} / {args.large} requests", "tokens"], rows)


if __name__ == "__main__":
    main()
