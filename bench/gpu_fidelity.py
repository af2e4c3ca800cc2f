"""Draftbench's runner against `vllm bench serve`, alternated over rounds on one GPU server.

For each server configuration (the baseline, or a speculative method) one vLLM server is started
and kept; at every concurrency both clients send the same prompts with the same sampling, the
order alternating from round to round (Draftbench first in even rounds, `vllm bench serve` first in
odd ones), after one untimed pass that leaves every prompt's prefix in the cache for both sides.
Draftbench is measured through its whole runner (an attach profile: scrapes, database writes and
telemetry included), as a user runs it. Printed: the median of each side's rounds and their
spread ((max - min) / median), the ratio (the median of the rounds' ratios; the ratio of medians
beside it), MAL and per-position acceptance of both, how many answers had the same length on
both sides, and the client's CPU per 10k output tok/s. Both clients' CPU is recorded per round:
Draftbench's client processes (`client_cpu_s`, and its average cores, client_cpu_s / window_s) and
the process that runs `vllm bench serve` (`cpu_s` from bench/vllm_bench_worker.py, its CPU-s per
10k output tokens, and its average cores, cpu_s / the result's "duration"; also over vLLM's
benchmark() alone, and the busiest second): a one-process client near one core may be what
limits it. Results append to OUT/fidelity.json, written after every concurrency.

The default target is a GPU-bound one: the Llama-3.1-8B shape (resources/shapes/llama-3.1-8b,
config files only) served with dummy weights (`--load-format dummy`), its generated tokenizer on
both sides. A small target's decode step is bound by the host CPU, not the GPU, and its rounds
spread by tens of percent whoever measures them, which hides the client's error.

Two throughputs per window and side: the whole window (what `vllm bench serve` reports) and the
steady state (workbench.metrics.steady_state: the longest stretch with at least 90 % of the
concurrency in flight, from each request's send, first and last token times; for `vllm bench
serve` from its detailed result's start_times, ttfts and itls). Each has its paired ratio. The
client-CPU bound checked per row: Draftbench's client processes may use at most 0.05 of a core
below 1k tok/s and at most 0.3 of a core per 10k tok/s above 5k tok/s (between the two, the
larger of 0.05 and 0.3 per 10k).

usage (on a GPU host, vLLM importable): python bench/gpu_fidelity.py [--shape llama-3.1-8b | --target DIR] \
    --config baseline [--config ngram:2] [--concurrency 1 16 64 128 256] [--rounds 5] [--max-tokens 256] \
    [--prompts 1:8 256:768] [--max-num-seqs 256] [--server-file F [--keep-server]] --out DIR
With --keep-server the last configuration's server stays up (its log in OUT/server-LABEL.log) and
--server-file records it; the next command given the same file and configuration measures on it
instead of starting another, so one server's concurrencies can span commands of bounded length.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
from collections import Counter
from dataclasses import replace
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from workbench import launch, load, paths, plan, store  # noqa: E402
from workbench.checkpoints import shapes  # noqa: E402
from workbench.host import engine, process  # noqa: E402
from workbench.metrics import steady_state  # noqa: E402
from workbench.load import workloads  # noqa: E402
from workbench.sweep import runner  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))  # the plan builder the tests use (tests/helpers/plans.py)
from common import SMOKE_HELP, skipped  # noqa: E402
from helpers.plans import demo_plan  # noqa: E402
from vllm_bench_worker import DONE_MARKER as MARKER  # noqa: E402



def plan_text(name: str, args, base_url: str, prompts: int, concurrency: int) -> str:
    """An attach plan with no method: the attached server is measured as it is."""
    return demo_plan(name, target={"model": args.target, "served_name": "smol", "max_model_len": args.max_model_len,
                                   "enforce_eager": None},
                     profile={"kind": "attach", "base_url": base_url, "api_key_env": "DRAFTBENCH_FIDELITY_KEY"},
                     workload={"names": ["builtin"], "num_prompts": prompts, "max_tokens": args.max_tokens,
                               "warmup": 0, "concurrency": [concurrency], "ignore_eos": args.ignore_eos})


def prompts_for(concurrency: int, window_tokens: int, max_tokens: int, waves: int = 8) -> int:
    """Enough requests for a window of about `window_tokens` output tokens, and at least `waves`
    waves of the concurrency: the ramp at the start and the tail at the end of a window are one
    wave each, so with eight they weigh a quarter as much as with two."""
    return max(16, waves * concurrency, window_tokens // max_tokens)


def _f(x) -> str:
    """A figure, or a list of them, to 2 decimals; '-' for none."""
    if isinstance(x, list):
        return "/".join(_f(v) for v in x) or "-"
    return "-" if x is None else f"{x:.2f}"


def spread(values: list[float]) -> float:
    return (max(values) - min(values)) / statistics.median(values) if values else float("nan")


def their_steady(result: dict, concurrency: int) -> dict:
    """The steady state of one `vllm bench serve` window, from its detailed per-request times
    (start_times, ttfts, itls; a request's last token is its first plus its inter-token gaps), by
    the same definition as Draftbench's."""
    starts, ttfts, itls = result.get("start_times"), result.get("ttfts"), result.get("itls")
    lens = result.get("output_lens")
    if not (starts and ttfts and itls and lens):
        return {"steady_s": 0.0, "steady_tok_s": None}
    spans = [steady_state.Span(s, s + f, s + f + sum(gaps), n)
             for s, f, gaps, n in zip(starts, ttfts, itls, lens) if n and f]
    return steady_state.figures(spans, concurrency, result.get("duration"))


def cpu_bound_cores(tok_s: float) -> float:
    """The most of a core Draftbench's client may use at this throughput."""
    if tok_s < 1000:
        return 0.05
    return max(0.05, 0.3 * tok_s / 1e4)


def prompt_counts(items: list[str]) -> dict[int, int]:
    """'1:8' -> {1: 8}: prompts per window at a concurrency, overriding the computed count."""
    out = {}
    for item in items:
        c, _, n = item.partition(":")
        out[int(c)] = int(n)
    return out


class VllmBench:
    """`vllm bench serve`, run by bench/vllm_bench_worker.py in one process that imports vLLM once."""

    def __init__(self, install, out: Path):
        self.out = out
        self.log = open(out / "vllm-bench.log", "a")
        self.proc = subprocess.Popen([install.python, str(ROOT / "bench" / "vllm_bench_worker.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     bufsize=1)
        self._answer()

    def _answer(self) -> dict:
        for line in self.proc.stdout:
            if line.startswith(MARKER):
                return json.loads(line[len(MARKER):])
            self.log.write(line)
        raise SystemExit(f"the vllm bench worker exited ({self.proc.wait()}); see vllm-bench.log")

    def run(self, base, key, target, prompts, max_tokens, concurrency, ignore_eos=False, model="smol",
            warmups=0) -> dict:
        with tempfile.TemporaryDirectory() as tmp:
            dataset = Path(tmp) / "prompts.jsonl"
            dataset.write_text("".join(json.dumps({"prompt": x.text}) + "\n" for x in prompts))
            result = Path(tmp) / "result.json"
            args = ["--backend", "openai-chat", "--endpoint", "/v1/chat/completions",
                    "--base-url", base, "--model", model, "--tokenizer", target,
                    "--dataset-name", "custom", "--dataset-path", str(dataset),
                    "--num-prompts", str(len(prompts)), "--custom-output-len", str(max_tokens),
                    "--max-concurrency", str(concurrency), "--temperature", "0",
                    "--num-warmups", str(warmups), "--disable-tqdm", "--save-result", "--save-detailed",
                    "--result-filename", str(result), *(["--ignore-eos"] if ignore_eos else []),
                    # The prompts are chat messages on both sides: no template applied twice.
                    "--skip-chat-template"]
            self.proc.stdin.write(json.dumps({"args": args, "env": {"OPENAI_API_KEY": key}}) + "\n")
            self.proc.stdin.flush()
            status = self._answer()
            if not status.get("ok"):
                raise SystemExit(f"vllm bench serve failed: {status.get('error')}; see vllm-bench.log")
            out = json.loads(result.read_text())
            out["_worker"] = status  # the worker's CPU and wall time of this run
            return out

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.log.close()


def cpus(text: str | None) -> set[int] | None:
    """'0-7,12' -> {0..7, 12}."""
    if not text:
        return None
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def pin(which: set[int] | None) -> None:
    # This thread's affinity: the processes it starts next (a server, a client) inherit it.
    if which:
        os.sched_setaffinity(0, which)


def scrape_cost_ms(base: str, times: int = 40) -> float:
    """What one /metrics scrape costs the idle server, in ms (the median of `times` in a row): the
    API server renders it on the event loop that streams the answers, so a scrape every
    SCRAPE_INTERVAL_S takes that share of its time from a front end that is the bottleneck."""
    took = []
    with httpx.Client(timeout=10) as client:
        for _ in range(times):
            t0 = time.perf_counter()
            client.get(base + "/metrics").raise_for_status()
            took.append((time.perf_counter() - t0) * 1000)
    return statistics.median(took)


def draftbench(install, db_path: Path, text: str, scrape_interval_s: float = runner.SCRAPE_INTERVAL_S) -> dict:
    p = plan.loads(text, path="fidelity.toml")
    runner.Runner(p, str(db_path), install, emit=lambda e: None, scrape_interval_s=scrape_interval_s).run()
    db = store.open_db(db_path)
    run = [r for r in store.runs(db) if r.status == "completed"][-1].as_dict()
    # Each answer's length, compared with vllm bench's output_lens.
    requests = list(db["requests"].rows_where("run_id = ?", [run["id"]], order_by="idx"))
    run["output_lens"] = [r["output_tokens"] for r in requests]
    run["prompt_ids"] = [r["prompt_id"] for r in requests]
    db.conn.close()
    return run


def paired_ratio(ours: list[float], theirs: list[float]) -> float:
    """The median over rounds of each round's ratio: the two sides of a round ran back to back,
    so drift of the machine between rounds cancels in it, as it does not in a ratio of medians."""
    return statistics.median(a / b for a, b in zip(ours, theirs))


def measure_config(install, bench: VllmBench, args, label: str, method: str | None, n: int | None, out: Path,
                   deadline: float, save=lambda rows: None) -> list[dict]:
    options = {"prompt_lookup_min": 2, "prompt_lookup_max": 4} if method == "ngram" else {}
    seqs = args.max_num_seqs or max(args.concurrency)
    extra = ("--gpu-memory-utilization", "0.5", "--max-num-seqs", str(seqs), "--seed", "0")
    if args.dummy:
        # A shape: config files and a generated tokenizer, no weights.
        extra += ("--load-format", "dummy")
    config = plan.Server(args.target, "smol", method or "baseline", n, None, tuple(sorted(options.items())),
                         args.max_model_len, "bfloat16", extra, (), False, method is not None)
    srv, base, key, t0 = None, None, None, time.time()
    # What a kept server must match to be measured again: the whole server configuration (its
    # --max-num-seqs caps the concurrency a later command can reach), not only the label.
    ident = repr(config)
    kept = attach(args.server_file, label, ident)
    if kept:
        base, key = kept["base_url"], kept["api_key"]
        print(f"[{label}] attached to the server kept by an earlier command ({base})", flush=True)
    else:
        stop_kept(args.server_file)
        srv = launch.LocalServer(launch.prepare(config, install, launch.free_port(), args.platform))
        # Its output goes to a file, not a pipe to this process: a kept server outlives it.
        log = out / f"server-{label}.log"
        srv.spec = replace(srv.spec, argv=["sh", "-c", 'exec "$@" >>"$0" 2>&1', str(log), *srv.spec.argv])
        pin(args.server_cpus)
        srv.start()
    pin(args.client_cpus)
    rows: list[dict] = []
    try:
        if srv is not None:
            try:
                srv.wait_healthy(900)
            except launch.LaunchError as e:
                raise SystemExit(f"[{label}] {e}\n" + "\n".join(log.read_text().splitlines()[-40:])) from None
            print(f"[{label}] server ready in {time.time() - t0:.0f} s", flush=True)
            base, key = srv.spec.base_url, srv.api_key
            if args.keep_server:
                # Recorded at once: a command killed from outside never reaches its `finally`, and
                # the next one should still find the server it paid to start.
                record(args.server_file, label, ident, base, key, srv.pgid)
        scrape_ms = scrape_cost_ms(base)
        print(f"[{label}] one /metrics scrape: {scrape_ms:.1f} ms (idle server)", flush=True)
        os.environ["DRAFTBENCH_FIDELITY_KEY"] = key
        # The plan lists no method: an attached server is measured as it is, and its counters give
        # MAL and per-position acceptance whatever the run is called (a listed method would add a
        # second, baseline-labelled run against the same server).
        db_path = out / f"fidelity-{label}.sqlite"
        for c in args.concurrency:
            count = args.prompts.get(c) or prompts_for(c, args.window_tokens, args.max_tokens, args.waves)
            # The prompts the runner sends: it samples repeat k of a run with seed k, and a plan's
            # repeats count from 1 (with seed 0, the two sides sent different prompts).
            prompts = workloads.sample(workloads.load("builtin"), count, seed=1)
            if time.time() > deadline:
                print(f"[{label}] time budget reached before c={c}", flush=True)
                break
            # The untimed pass: every prompt's prefix cached, the batch sizes of this concurrency used.
            asyncio.run(load.generate(base, key, "smol", prompts, load.Sampling(32, 0.0), c))
            ours, theirs = [], []
            round_s = 0.0
            for k in range(args.rounds):
                # A round starts only if it can end before the deadline, judged by the last one: a
                # command cut off mid-round loses that round.
                if time.time() + round_s > deadline:
                    print(f"[{label}] time budget reached at c={c}, round {k}", flush=True)
                    break
                r0 = time.time()
                sides = ("draftbench", "vllm") if k % 2 == 0 else ("vllm", "draftbench")
                for side in sides:
                    if side == "draftbench":
                        text = plan_text(f"fid-{label}-c{c}-r{k}", args, base, count, c)
                        ours.append(draftbench(install, db_path, text, args.scrape_interval))
                        if ours[-1]["prompt_ids"] != [p.id for p in prompts]:
                            raise SystemExit("the runner sent other prompts than vllm bench gets: the "
                                             "comparison would not be of the same work")
                    else:
                        theirs.append(bench.run(base, key, args.target, prompts, args.max_tokens, c,
                                                args.ignore_eos))
                round_s = time.time() - r0
                # After every round: a command cut short keeps the rounds it finished.
                save(rows + [{**summarize(args, label, c, count, scrape_ms, ours, theirs), "partial": True}])
            if not ours or not theirs:
                break
            row = summarize(args, label, c, count, scrape_ms, ours, theirs)
            rows.append(row)
            save(rows)
            report(label, c, row)
    finally:
        # A kept server stays while it answers, also after a client's error: the next command can
        # go on with it. Any other is ended here.
        if args.keep_server and base and answers(base):
            pgid = srv.pgid if srv is not None else kept["pgid"]
            record(args.server_file, label, ident, base, key, pgid)
            print(f"[{label}] server kept running (process group {pgid}) for the next command", flush=True)
        elif srv is not None:
            srv.stop()
            if args.server_file:
                Path(args.server_file).unlink(missing_ok=True)
        else:
            stop_kept(args.server_file)
    return rows


def answers(base: str) -> bool:
    try:
        return httpx.get(base + "/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def record(server_file: str, label: str, ident: str, base: str, key: str, pgid: int | None) -> None:
    """The kept server, for the next command: replaced whole, never left half written."""
    paths.write_atomic(Path(server_file), json.dumps({"label": label, "config": ident, "base_url": base,
                                                "api_key": key, "pgid": pgid}))


def attach(server_file: str | None, label: str, ident: str) -> dict | None:
    """The server an earlier command kept for this very configuration, if it still answers."""
    if not server_file or not Path(server_file).exists():
        return None
    kept = json.loads(Path(server_file).read_text())
    if kept.get("label") != label or kept.get("config") != ident:
        return None
    return kept if answers(kept["base_url"]) else None


def stop_kept(server_file: str | None, grace_s: float = 30.0) -> None:
    """Ends the server an earlier command kept: it holds the GPU memory a new one needs."""
    if not server_file or not Path(server_file).exists():
        return
    pgid = json.loads(Path(server_file).read_text())["pgid"]
    process.signal_group(pgid, signal.SIGTERM)
    end = time.time() + grace_s
    # The leader is the API server; its engine processes, in the same group, get the SIGKILL below.
    while time.time() < end and process.alive(pgid):
        time.sleep(0.5)
    process.signal_group(pgid, signal.SIGKILL)
    Path(server_file).unlink()


def summarize(args, label: str, c: int, count: int, scrape_ms: float, ours: list[dict], theirs: list[dict]) -> dict:
    """One fidelity row: both sides' rounds at one concurrency."""
    a = [r["output_tok_s"] for r in ours]
    b = [r["output_throughput"] for r in theirs]
    their_steadies = [their_steady(t, c) for t in theirs]
    sa = [r.get("steady_tok_s") for r in ours]
    sb = [x["steady_tok_s"] for x in their_steadies]
    steady_ok = all(sa) and all(sb)
    cpu = [r.get("client_cpu_s") / r["output_tokens"] * 1e4 for r in ours if r.get("client_cpu_s")]
    ours_cores = [r["client_cpu_s"] / r["window_s"] for r in ours
                  if r.get("client_cpu_s") and r.get("window_s")]
    w = [t.get("_worker", {}) for t in theirs]
    their_cpu = [x.get("cpu_s") for x in w]
    their_cores = [x["cpu_s"] / t["duration"] for x, t in zip(w, theirs)
                   if x.get("cpu_s") is not None and t.get("duration")]
    their_bench_cores = [x["bench_cpu_s"] / t["duration"] for x, t in zip(w, theirs)
                         if x.get("bench_cpu_s") is not None and t.get("duration")]
    their_per_10k = [x["cpu_s"] / t["total_output_tokens"] * 1e4 for x, t in zip(w, theirs)
                     if x.get("cpu_s") is not None and t.get("total_output_tokens")]
    cores_bound = cpu_bound_cores(statistics.median(a))
    row = {
        "method": label, "concurrency": c, "prompts": count, "max_tokens": args.max_tokens,
        "target": args.label, "ignore_eos": args.ignore_eos,
        "draftbench_tok_s": statistics.median(a), "vllm_bench_tok_s": statistics.median(b),
        "ratio": paired_ratio(a, b), "ratio_of_medians": statistics.median(a) / statistics.median(b),
        "draftbench_spread": spread(a), "vllm_bench_spread": spread(b),
        "steady_ratio": paired_ratio(sa, sb) if steady_ok else None,
        "draftbench_steady_tok_s": statistics.median(sa) if steady_ok else None,
        "vllm_bench_steady_tok_s": statistics.median(sb) if steady_ok else None,
        "draftbench_steady_spread": spread(sa) if steady_ok else None,
        "vllm_bench_steady_spread": spread(sb) if steady_ok else None,
        "draftbench_rounds_steady_tok_s": sa, "vllm_bench_rounds_steady_tok_s": sb,
        "draftbench_steady_s": [r.get("steady_s") for r in ours],
        "vllm_bench_steady_s": [x["steady_s"] for x in their_steadies],
        "client_cores_bound": cores_bound,
        "client_cpu_per_10k_tok_s": statistics.median(cpu) if cpu else None,
        "draftbench_client_cpu_s": [r.get("client_cpu_s") for r in ours],
        "draftbench_window_s": [r.get("window_s") for r in ours],
        "draftbench_client_processes": [r.get("client_processes") for r in ours],
        "draftbench_cores": statistics.median(ours_cores) if ours_cores else None,
        "draftbench_rounds_cores": ours_cores,
        "vllm_bench_cpu_s": their_cpu,
        "vllm_bench_children_cpu_s": [x.get("children_cpu_s") for x in w],
        "vllm_bench_wall_s": [x.get("wall_s") for x in w],
        "vllm_bench_benchmark_cpu_s": [x.get("bench_cpu_s") for x in w],
        "vllm_bench_benchmark_wall_s": [x.get("bench_wall_s") for x in w],
        "vllm_bench_peak_cores": [x.get("bench_peak_cores") for x in w],
        "vllm_bench_duration_s": [t.get("duration") for t in theirs],
        "vllm_bench_cpu_per_10k_tok": statistics.median(their_per_10k) if their_per_10k else None,
        "vllm_bench_cores": statistics.median(their_cores) if their_cores else None,
        "vllm_bench_rounds_cores": their_cores,
        "vllm_bench_benchmark_cores": statistics.median(their_bench_cores) if their_bench_cores else None,
        "rounds": len(a), "scrape_ms": scrape_ms, "scrape_interval_s": args.scrape_interval,
        "server_cpus": sorted(args.server_cpus or ()), "client_cpus": sorted(args.client_cpus or ()),
        "draftbench_rounds_tok_s": a, "vllm_bench_rounds_tok_s": b,
        "draftbench_mal": [r["mal"] for r in ours],
        "vllm_bench_mal": [t.get("spec_decode_acceptance_length") for t in theirs],
        "draftbench_per_position": [json.loads(r["per_position"] or "null") for r in ours],
        "vllm_bench_per_position": [t.get("spec_decode_per_position_acceptance_rates") for t in theirs],
        "draftbench_output_tokens": [r["output_tokens"] for r in ours],
        "vllm_bench_output_tokens": [t["total_output_tokens"] for t in theirs],
        # Answers of the same length on both sides, per round (as multisets: vllm bench
        # shuffles a custom dataset, so its order is not the prompts').
        "same_length_answers": [sum((Counter(o["output_lens"]) & Counter(t.get("output_lens") or [])).values())
                                for o, t in zip(ours, theirs)],
    }
    row["client_cores_within_bound"] = (row["draftbench_cores"] is not None
                                        and row["draftbench_cores"] <= cores_bound)
    return row


def report(label: str, c: int, row: dict) -> None:
    """The row on the terminal as it is measured."""
    if row["steady_ratio"] is not None:
        print(f"[{label}] c={c:<4} steady: draftbench {row['draftbench_steady_tok_s']:>9,.0f} tok/s "
              f"(spread {row['draftbench_steady_spread']:.1%}, {_f(row['draftbench_steady_s'])} s)  "
              f"vllm bench {row['vllm_bench_steady_tok_s']:>9,.0f} (spread "
              f"{row['vllm_bench_steady_spread']:.1%})  ratio {row['steady_ratio']:.3f}", flush=True)
    print(f"[{label}] c={c:<4} draftbench {row['draftbench_tok_s']:>9,.0f} tok/s (spread "
          f"{row['draftbench_spread']:.1%})  vllm bench {row['vllm_bench_tok_s']:>9,.0f} (spread "
          f"{row['vllm_bench_spread']:.1%})  ratio {row['ratio']:.3f}  client CPU/10k tok/s "
          f"{row['client_cpu_per_10k_tok_s'] or float('nan'):.3f}  rounds {row['rounds']}", flush=True)
    print(f"[{label}] c={c:<4} cores: draftbench {_f(row['draftbench_cores'])} ({_f(row['draftbench_rounds_cores'])})  "
          f"vllm bench {_f(row['vllm_bench_cores'])} ({_f(row['vllm_bench_rounds_cores'])}), within benchmark() "
          f"{_f(row['vllm_bench_benchmark_cores'])}, busiest second {_f(row['vllm_bench_peak_cores'])}; "
          f"vllm bench CPU-s per 10k tokens {_f(row['vllm_bench_cpu_per_10k_tok'])}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    smoke = "--smoke" in sys.argv[1:]
    ap.add_argument("--target", help="a model folder (real weights); default: --shape")
    ap.add_argument("--shape", default="llama-3.1-8b",
                    help="a shipped shape served with dummy weights when --target is not given")
    ap.add_argument("--config", action="append", default=[], help="baseline, or METHOD:N (ngram:2)")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64, 128, 256])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--prompts", nargs="*", default=[], metavar="C:N",
                    help="prompts per window at a concurrency (1:8 256:768), instead of the computed count")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--window-tokens", type=int, default=12000)
    ap.add_argument("--waves", type=int, default=8, help="at least this many waves of the concurrency a window")
    ap.add_argument("--ignore-eos", action="store_true", help="both sides generate max-tokens for every prompt")
    ap.add_argument("--max-model-len", type=int, default=2048)
    ap.add_argument("--seconds", type=float, default=3600, help="stop starting rounds after this long")
    ap.add_argument("--platform", default="cuda", help="cuda, rocm, or none for a smoke test on the CPU build")
    ap.add_argument("--server-cpus", type=cpus, help="cores for the vLLM server, e.g. 0-7")
    ap.add_argument("--client-cpus", type=cpus, help="cores for both clients and the runner, e.g. 8-15")
    ap.add_argument("--scrape-interval", type=float, default=runner.SCRAPE_INTERVAL_S,
                    help="the runner's /metrics scrape interval during a window (s)")
    ap.add_argument("--max-num-seqs", type=int, help="the server's --max-num-seqs (default: the largest concurrency)")
    ap.add_argument("--server-file", help="where a kept server is recorded: a later command with the same "
                    "config attaches to it instead of starting one (and starts one, ending the kept one, "
                    "when the config differs)")
    ap.add_argument("--keep-server", action="store_true",
                    help="leave the last config's server running for the next command (needs --server-file)")
    ap.add_argument("--out", required=not smoke)
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = ap.parse_args()
    if args.smoke:
        return smoke_run(args)
    if args.keep_server and not args.server_file:
        ap.error("--keep-server needs --server-file: the next command finds the kept server through it")
    args.prompts = prompt_counts(args.prompts)
    args.dummy = not args.target
    if args.dummy:
        args.label = f"shape {args.shape}, dummy weights"
        args.target = str(shapes.folder(args.shape))
    else:
        args.label = Path(args.target).name
    pin(args.client_cpus)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    install = engine.probe()
    deadline = time.time() + args.seconds
    results_file = out / "fidelity.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else []
    bench = VllmBench(install, out)
    for cfg in args.config or ["baseline"]:
        method, _, n = cfg.partition(":")
        label = "baseline" if method == "baseline" else f"{method}-n{n}"
        before = results

        def save(rows, before=before, label=label):
            # After every round: a command cut short keeps what it measured. A partial row (a
            # concurrency in progress) never replaces a finished one measured earlier.
            nonlocal results
            finished = {r["concurrency"] for r in before if r["method"] == label and not r.get("partial")}
            rows = [x for x in rows if not (x.get("partial") and x["concurrency"] in finished)]
            results = [r for r in before if r["method"] != label or r["concurrency"] not in
                       {x["concurrency"] for x in rows}] + rows
            # Atomic: a command killed mid-write leaves the last whole file, not a truncated one.
            paths.write_atomic(results_file, json.dumps(results, indent=1))

        measure_config(install, bench, args, label, None if method == "baseline" else method,
                       int(n) if n else None, out, deadline, save)
    bench.close()
    print(table(results))
    detail_table(results)
    return 0


def table(results: list[dict]) -> str:
    """The Markdown table of fidelity rows: steady-state and whole-window ratios side by side."""
    lines = ["| method | c | steady: Draftbench tok/s (spread) | steady: vllm bench (spread) | steady ratio | "
             "whole window: Draftbench tok/s (spread) | whole window: vllm bench (spread) | ratio | "
             "Draftbench cores (bound) | rounds |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        if r.get("steady_ratio"):
            steady = (f"{r['draftbench_steady_tok_s']:,.0f} ({r['draftbench_steady_spread']:.1%}) | "
                      f"{r['vllm_bench_steady_tok_s']:,.0f} ({r['vllm_bench_steady_spread']:.1%}) | "
                      f"{r['steady_ratio']:.3f}")
        else:
            steady = "- | - | -"
        cores = r.get("draftbench_cores")
        bound = r.get("client_cores_bound")
        cores_text = "-" if cores is None else f"{cores:.3f}" + ("" if bound is None else
                                                               f" ({'≤' if cores <= bound else '>'} {bound:.2f})")
        lines.append(f"| {r['method']} | {r['concurrency']} | {steady} | "
                     f"{r['draftbench_tok_s']:,.0f} ({r['draftbench_spread']:.1%}) | "
                     f"{r['vllm_bench_tok_s']:,.0f} ({r['vllm_bench_spread']:.1%}) | {r['ratio']:.3f} | "
                     f"{cores_text} | {r['rounds']} |")
    return "\n".join(lines)


def smoke_run(args) -> int:
    """The plan the runner is given, checked; the results table, of made-up rounds."""
    args.target = args.target or "demo:smollm2-135m"
    c, count = args.concurrency[0], prompts_for(args.concurrency[0], args.window_tokens, args.max_tokens, args.waves)
    p = plan.loads(plan_text("fid-smoke", args, "http://127.0.0.1:9", count, c))
    print(f"plan: {len(p.runs)} run of {count} prompts at c={c}; client cores {sorted(cpus('0-1,3'))}")
    skipped("the GPU server and both clients; the table is of made-up rounds")
    a, b = [100.0, 104.0, 98.0], [101.0, 103.0, 99.0]
    rows = ([{"method": "baseline", "concurrency": c, "prompts": count, "draftbench_tok_s": statistics.median(a),
                    "vllm_bench_tok_s": statistics.median(b), "ratio": paired_ratio(a, b),
                    "ratio_of_medians": statistics.median(a) / statistics.median(b), "draftbench_spread": spread(a),
                    "vllm_bench_spread": spread(b), "client_cpu_per_10k_tok_s": None,
                    "same_length_answers": [count, count - 1, count], "rounds": len(a)}])
    print(table(rows))
    detail_table(rows)
    return 0


def detail_table(results: list[dict]) -> None:
    """The whole-window figures with both clients' CPU."""
    print("\n| method | concurrency | Draftbench tok/s (spread) | vllm bench serve tok/s (spread) | ratio | "
          "ratio of medians | client CPU per 10k tok/s | same-length answers | rounds | "
          "vllm bench CPU-s per 10k tokens | vllm bench cores | Draftbench cores |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        cpu = r["client_cpu_per_10k_tok_s"]
        same = r.get("same_length_answers")
        same = f"{min(same)}-{max(same)} of {r['prompts']}" if same else "-"
        print(f"| {r['method']} | {r['concurrency']} | {r['draftbench_tok_s']:,.0f} ({r['draftbench_spread']:.1%}) | "
              f"{r['vllm_bench_tok_s']:,.0f} ({r['vllm_bench_spread']:.1%}) | {r['ratio']:.3f} | "
              f"{r.get('ratio_of_medians', r['ratio']):.3f} | {'-' if cpu is None else f'{cpu:.3f}'} | "
              f"{same} | {r['rounds']} | {_f(r.get('vllm_bench_cpu_per_10k_tok'))} | {_f(r.get('vllm_bench_cores'))} | "
              f"{_f(r.get('draftbench_cores'))} |")


if __name__ == "__main__":
    sys.exit(main())
