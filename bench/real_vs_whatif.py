"""A real drafter against its what-if, alternated on one GPU: is a what-if run's throughput what
the real configuration gives?

For each N: the real configuration is served (a target and a draft model with real weights, real
drafting, vLLM's rejection sampler; bench/seeded_pair.py makes a GPU-bound pair), one run measures
its per-position acceptance, and the what-if of that run is served beside it exactly as
`draftbench what-if --from-run` plans it: the same target, draft, N, lengths and flags, dummy
weights, and vLLM's synthetic rejection sampler told to accept the measured curve. Both servers
stay up; at every concurrency, after one untimed pass on each (prefix cache and batch sizes in the
same state), Draftbench's runner measures them in turn, the order alternating from round to round
(real first in even rounds). Printed and written to OUT/real_vs_whatif.json after every
concurrency: each side's median output tok/s and spread ((max - min) / median), the paired ratio
what-if / real (the median of the rounds' ratios: the two sides of a round ran back to back), the
same for the steady state, and both sides' MAL and per-position acceptance. Every run is stored
in OUT/real-vs-what-if.sqlite. With --baseline, a server without speculation is measured at the
same concurrencies afterwards (speedups, and the N model's denominator).

usage (GPU host, vLLM importable):
  python bench/real_vs_whatif.py --pair /tmp/pair --n 3 [--n 5] [--concurrency 1 16 64] [--rounds 3] \
      [--baseline] --seconds 500 --out $OUT
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import SMOKE_HELP, skipped  # noqa: E402
from gpu_fidelity import draftbench, paired_ratio, plan_text, prompt_counts, spread  # noqa: E402
from workbench import launch, load, plan  # noqa: E402
from workbench.host import engine  # noqa: E402
from workbench.load import workloads  # noqa: E402
from workbench.plan import acceptance  # noqa: E402

KEY_ENV = "DRAFTBENCH_FIDELITY_KEY"  # the attach plan of gpu_fidelity.plan_text reads the key here
DEFAULT_PROMPTS = {1: 6, 16: 48, 64: 192}  # three waves at c >= 16: windows of 3-6 s on the H200


def curve_of(run: dict) -> list[float]:
    """The imposed curve `what-if --from-run` takes from a run (workbench.usecases.whatif): the
    per-position rates rounded, capped at 1, made non-increasing."""
    rates = [round(min(1.0, p), 4) for p in json.loads(run["per_position"])]
    for i in range(1, len(rates)):
        rates[i] = min(rates[i], rates[i - 1])
    return rates


def start(config: plan.Server, install, platform: str, label: str, log) -> launch.LocalServer:
    srv = launch.LocalServer(launch.prepare(config, install, launch.free_port(), platform))
    t0 = time.time()
    srv.start()
    srv.wait_healthy(900)
    log(f"[{label}] ready in {time.time() - t0:.0f} s: {srv.spec.command}")
    return srv


def measure(install, db: Path, args, srv, name: str, count: int, c: int) -> dict:
    os.environ[KEY_ENV] = srv.api_key
    return draftbench(install, db, plan_text(name, args, srv.spec.base_url, count, c))


def warm(srv, prompts, c: int, max_tokens: int) -> None:
    """The untimed pass: every prompt's prefix cached, this concurrency's batch sizes used."""
    asyncio.run(load.generate(srv.spec.base_url, srv.api_key, "smol", prompts, load.Sampling(max_tokens, 0.0), c))


def row_of(n, c, count, real: list[dict], wi: list[dict], imposed) -> dict:
    a = [r["output_tok_s"] for r in real]
    b = [r["output_tok_s"] for r in wi]
    sa = [r.get("steady_tok_s") for r in real]
    sb = [r.get("steady_tok_s") for r in wi]
    steady = all(sa) and all(sb)
    return {
        "n": n, "concurrency": c, "prompts": count, "rounds": len(a),
        "real_tok_s": statistics.median(a), "what_if_tok_s": statistics.median(b),
        "real_spread": spread(a), "what_if_spread": spread(b),
        "ratio": paired_ratio(b, a),  # what-if / real
        "real_steady_tok_s": statistics.median(sa) if steady else None,
        "what_if_steady_tok_s": statistics.median(sb) if steady else None,
        "steady_ratio": paired_ratio(sb, sa) if steady else None,
        "real_steady_spread": spread(sa) if steady else None,
        "what_if_steady_spread": spread(sb) if steady else None,
        "real_rounds_tok_s": a, "what_if_rounds_tok_s": b,
        "real_mal": [r["mal"] for r in real], "what_if_mal": [r["mal"] for r in wi],
        "imposed": list(imposed), "imposed_mal": acceptance.mal_of(list(imposed)),
        "real_per_position": [json.loads(r["per_position"] or "null") for r in real],
        "what_if_per_position": [json.loads(r["per_position"] or "null") for r in wi],
        "real_output_tokens": [r["output_tokens"] for r in real],
        "what_if_output_tokens": [r["output_tokens"] for r in wi],
        "real_run_ids": [r["id"] for r in real], "what_if_run_ids": [r["id"] for r in wi],
    }


def smoke() -> int:
    """The attach plan each window runs, checked; the table, of made-up rounds."""
    args = argparse.Namespace(target="demo:smollm2-135m", max_model_len=2048, max_tokens=32, ignore_eos=True)
    p = plan.loads(plan_text("rvw-smoke", args, "http://127.0.0.1:9", 6, 1))
    print(f"plan: {len(p.runs)} run of 6 prompts at c=1 on an attached server")
    skipped("both GPU servers and their rounds; the table is of made-up rounds")
    run = {"mal": 2.3, "per_position": "[0.63, 0.43, 0.25]", "output_tokens": 1536, "id": 1}
    real = [dict(run, output_tok_s=v, steady_tok_s=v) for v in (288.0, 283.0, 289.0)]
    wi = [dict(run, output_tok_s=v, steady_tok_s=v) for v in (281.0, 269.0, 292.0)]
    print(table([row_of(3, 1, 6, real, wi, [0.63, 0.43, 0.25])]))
    return 0


def main() -> int:
    if "--smoke" in sys.argv[1:]:
        return smoke()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", required=True, help="a folder with target/ and draft/ (bench/seeded_pair.py)")
    ap.add_argument("--n", type=int, action="append", required=True, help="speculative tokens; repeatable")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompts", nargs="*", default=[], metavar="C:N", help="prompts per window at a concurrency")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--max-model-len", type=int, default=2048)
    ap.add_argument("--memory", default="0.42", help="--gpu-memory-utilization of each server (two run at once)")
    ap.add_argument("--extra", default="", help="more `vllm serve` arguments for every server")
    ap.add_argument("--baseline", action="store_true", help="then a server without speculation")
    ap.add_argument("--platform", default="cuda")
    ap.add_argument("--cpu-check", action="store_true",
                    help="the CPU build, whose sampler has no synthetic acceptance: the what-if side is "
                         "served with dummy weights but imposes nothing (checks this script, measures nothing)")
    ap.add_argument("--seconds", type=float, default=540, help="no new server after this long, less a pair's start")
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = ap.parse_args()
    args.ignore_eos = True  # every answer max_tokens long on both sides: the what-if's dummy text may end early
    counts = DEFAULT_PROMPTS | prompt_counts(args.prompts)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    deadline = time.time() + args.seconds
    results_file = out / "real_vs_whatif.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else []
    logf = open(out / "real_vs_whatif.log", "a")

    def log(text: str) -> None:
        print(text, flush=True)
        logf.write(text + "\n")
        logf.flush()

    def save() -> None:
        results_file.write_text(json.dumps(results, indent=1))

    install = engine.probe()
    pair = Path(args.pair)
    args.target = str(pair / "target")
    db = out / "real-vs-what-if.sqlite"
    extra = ("--gpu-memory-utilization", args.memory, "--max-num-seqs", str(max(args.concurrency)), "--seed", "0",
             *args.extra.split())
    prompts = {c: workloads.sample(workloads.load("builtin"), counts[c], seed=1) for c in args.concurrency}
    for n in args.n:
        if time.time() > deadline - 240:
            log(f"[N={n}] not started: {deadline - time.time():.0f} s left")
            continue
        real_cfg = plan.Server(args.target, "smol", "draft_model", n, str(pair / "draft"), (), args.max_model_len,
                               "bfloat16", extra, (), False, True)
        servers = []
        try:
            real = start(real_cfg, install, args.platform, f"real N={n}", log)
            servers.append(real)
            probe = measure(install, db, args, real, f"real-n{n}-curve", counts[max(args.concurrency)],
                            max(args.concurrency))
            imposed = curve_of(probe)
            log(f"[N={n}] measured curve {imposed} (MAL {probe['mal']:.3f}, run {probe['id']})")
            wi_cfg = dataclasses.replace(real_cfg, what_if=True, imposed=None if args.cpu_check else tuple(imposed),
                                         imposed_source=f"measured: run {probe['id']}")
            wi = start(wi_cfg, install, args.platform, f"what-if N={n}", log)
            servers.append(wi)
            for c in args.concurrency:
                warm(real, prompts[c], c, args.max_tokens)
                warm(wi, prompts[c], c, args.max_tokens)
                got: dict[str, list] = {"real": [], "what-if": []}
                for k in range(args.rounds):
                    if time.time() > deadline:
                        log(f"[N={n}] time budget reached at c={c}, round {k}")
                        break
                    for side in (("real", "what-if") if k % 2 == 0 else ("what-if", "real")):
                        srv = real if side == "real" else wi
                        got[side].append(measure(install, db, args, srv, f"{side}-n{n}-c{c}-r{k}", counts[c], c))
                if not got["real"] or len(got["real"]) != len(got["what-if"]):
                    break
                row = row_of(n, c, counts[c], got["real"], got["what-if"], imposed)
                results = [r for r in results if (r.get("n"), r["concurrency"]) != (n, c)] + [row]
                save()
                log(f"[N={n}] c={c:<3} real {row['real_tok_s']:>8,.0f} tok/s ({row['real_spread']:.1%})  "
                    f"what-if {row['what_if_tok_s']:>8,.0f} ({row['what_if_spread']:.1%})  "
                    f"ratio {row['ratio']:.3f}  MAL real {statistics.median(row['real_mal']):.3f} "
                    f"what-if {statistics.median(row['what_if_mal']):.3f}  rounds {row['rounds']}")
        finally:
            for s in servers:
                s.stop()
    if args.baseline and time.time() < deadline - 150:
        base_cfg = plan.Server(args.target, "smol", "baseline", None, None, (), args.max_model_len, "bfloat16",
                               extra, (), False, False)
        srv = start(base_cfg, install, args.platform, "baseline", log)
        try:
            for c in args.concurrency:
                warm(srv, prompts[c], c, args.max_tokens)
                runs = [measure(install, db, args, srv, f"baseline-c{c}-r{k}", counts[c], c)
                        for k in range(args.rounds) if time.time() < deadline]
                if runs:
                    a = [r["output_tok_s"] for r in runs]
                    results = [r for r in results if (r.get("n"), r["concurrency"]) != (0, c)] + [
                        {"n": 0, "concurrency": c, "prompts": counts[c], "rounds": len(a),
                         "real_tok_s": statistics.median(a), "real_spread": spread(a), "real_rounds_tok_s": a,
                         "real_run_ids": [r["id"] for r in runs]}]
                    save()
                    log(f"[baseline] c={c:<3} {statistics.median(a):>8,.0f} tok/s ({spread(a):.1%})")
        finally:
            srv.stop()
    log(table(results))
    return 0


def table(results: list[dict]) -> str:
    lines = ["| N | c | real tok/s (spread) | what-if tok/s (spread) | what-if / real | steady ratio | "
             "MAL real | MAL what-if (imposed) | rounds |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in sorted(results, key=lambda r: (r.get("n", 0), r["concurrency"])):
        if not r.get("n"):
            lines.append(f"| baseline | {r['concurrency']} | {r['real_tok_s']:,.0f} ({r['real_spread']:.1%}) | | | | | | "
                         f"{r['rounds']} |")
            continue
        steady = "-" if r.get("steady_ratio") is None else f"{r['steady_ratio']:.3f}"
        lines.append(f"| {r['n']} | {r['concurrency']} | {r['real_tok_s']:,.0f} ({r['real_spread']:.1%}) | "
                     f"{r['what_if_tok_s']:,.0f} ({r['what_if_spread']:.1%}) | {r['ratio']:.3f} | {steady} | "
                     f"{statistics.median(r['real_mal']):.3f} | {statistics.median(r['what_if_mal']):.3f} "
                     f"({r['imposed_mal']:.3f}) | {r['rounds']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
