"""Draftbench's runner against `vllm bench serve` on one server and the same prompts.

Starts one vLLM server (the speculative configuration given), measures it with Draftbench's runner
through an attach profile (the server is the same process for both), then runs `vllm bench serve`
on the same prompts, sampling settings and concurrency, and prints both side by side: output
tokens/s and their ratio, drafts, accepted tokens, acceptance rate, MAL and per-position acceptance.

usage: python scripts/device/fidelity.py --target DIR [--method ngram --n 4] [--draft DIR]
       [--prompts 24 --max-tokens 256 --concurrency 8] --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from workbench import launch, metrics, plan, store  # noqa: E402
from workbench.host import engine, vllm_cli  # noqa: E402
from workbench.sweep import runner  # noqa: E402
from workbench.load import workloads  # noqa: E402

PLAN = """
name = "fidelity"
[target]
model = "{target}"
served_name = "{served}"
max_model_len = {max_model_len}
[profile]
kind = "attach"
base_url = "{base_url}"
api_key_env = "DRAFTBENCH_FIDELITY_KEY"
{method}
[workload]
names = ["builtin"]
num_prompts = {prompts}
max_tokens = {max_tokens}
warmup = 0
concurrency = [{concurrency}]
temperature = 0.0
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--method", default="ngram")
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--draft")
    ap.add_argument("--prompts", type=int, default=24)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--max-model-len", type=int, default=2048)
    ap.add_argument("--extra", default="", help="more `vllm serve` arguments, space-separated")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    install = engine.probe()
    options = {"prompt_lookup_min": 2, "prompt_lookup_max": 4} if args.method == "ngram" else {}
    config = plan.Server(args.target, "smol", args.method, args.n, args.draft, tuple(sorted(options.items())),
                         args.max_model_len, "bfloat16", tuple(args.extra.split()), (), False, True)
    srv = launch.LocalServer(launch.prepare(config, install, launch.free_port(), "cuda"))
    srv.start()
    try:
        srv.wait_healthy(600)
        base = srv.spec.base_url
        # One warm-up pass so neither side pays for first-request compilation.
        httpx.post(base + "/v1/chat/completions", headers={"Authorization": f"Bearer {srv.api_key}"},
                   json={"model": "smol", "messages": [{"role": "user", "content": "hello"}],
                         "max_tokens": 16}, timeout=120)
        method = (f'[[methods]]\nmethod = "{args.method}"\nn = {args.n}\n'
                  + (f'draft = "{args.draft}"\n' if args.draft else "")
                  + ("options = { prompt_lookup_min = 2, prompt_lookup_max = 4 }\n" if options else ""))
        text = PLAN.format(target=args.target, served="smol", max_model_len=args.max_model_len, base_url=base,
                           method=method, prompts=args.prompts, max_tokens=args.max_tokens,
                           concurrency=args.concurrency)
        os.environ["DRAFTBENCH_FIDELITY_KEY"] = srv.api_key
        db_path = out / "fidelity.sqlite"
        p = plan.loads(text, path="fidelity.toml")
        runner.Runner(p, str(db_path), install, emit=lambda e: None).run()
        ours = store.runs(store.open_db(db_path))[-1]

        prompts = workloads.sample(workloads.load("builtin"), args.prompts, seed=1)
        with tempfile.TemporaryDirectory() as tmp:
            dataset = Path(tmp) / "prompts.jsonl"
            dataset.write_text("".join(json.dumps({"prompt": x.text}) + "\n" for x in prompts))
            result = out / "vllm-bench.json"
            bench_args = ["bench", "serve", "--backend", "openai-chat", "--endpoint", "/v1/chat/completions",
                          "--base-url", base, "--model", "smol", "--tokenizer", args.target,
                          "--dataset-name", "custom", "--dataset-path", str(dataset),
                          "--num-prompts", str(args.prompts), "--custom-output-len", str(args.max_tokens),
                          "--max-concurrency", str(args.concurrency), "--temperature", "0",
                          "--num-warmups", "0", "--disable-tqdm", "--save-result", "--result-filename", str(result),
                          # The prompts are chat messages on both sides: no template applied twice.
                          "--skip-chat-template"]
            before = metrics.parse(httpx.get(base + "/metrics").text)
            done = subprocess.run(vllm_cli.argv(install.python, bench_args), capture_output=True, text=True,
                                  timeout=900, env={**os.environ, "OPENAI_API_KEY": srv.api_key})
            after = metrics.parse(httpx.get(base + "/metrics").text)
            (out / "vllm-bench.log").write_text(done.stdout[-20000:] + done.stderr[-20000:])
            if done.returncode != 0:
                print(done.stdout[-3000:], done.stderr[-3000:])
                return 1
        bench = json.loads(result.read_text())
        w = metrics.window(before, after)
        rows = [
            ("requests", ours["requests_ok"], bench["completed"]),
            ("output tokens", ours["output_tokens"], bench["total_output_tokens"]),
            ("output tok/s", round(ours["output_tok_s"], 1), round(bench["output_throughput"], 1)),
            ("drafts", ours["drafts"], bench.get("spec_decode_num_drafts")),
            ("accepted", ours["accepted"], bench.get("spec_decode_accepted_tokens")),
            ("acceptance rate", round(ours["acceptance_rate"], 6),
             round(bench.get("spec_decode_acceptance_rate", float("nan")) / 100, 6)),
            ("MAL", round(ours["mal"], 6), round(bench.get("spec_decode_acceptance_length", float("nan")), 6)),
            ("per-position", json.loads(ours["per_position"] or "null"),
             bench.get("spec_decode_per_position_acceptance_rates")),
        ]
        print(f"{'figure':<18}{'draftbench':>28}{'vllm bench serve':>28}")
        for name, a, b in rows:
            print(f"{name:<18}{str(a):>28}{str(b):>28}")
        ratio = ours["output_tok_s"] / bench["output_throughput"]
        print(f"tokens/s ratio (draftbench / vllm bench serve): {ratio:.3f}")
        print(f"bench window from the server's counters: drafts {w.drafts:g}, accepted {w.accepted:g}, "
              f"MAL {w.mean_acceptance_length}")
        (out / "fidelity.json").write_text(json.dumps({"rows": rows, "ratio": ratio,
                                                        "bench_window": {"drafts": w.drafts, "accepted": w.accepted,
                                                                         "mal": w.mean_acceptance_length}},
                                                       indent=1, default=str))
        return 0
    finally:
        srv.stop()


if __name__ == "__main__":
    sys.exit(main())
