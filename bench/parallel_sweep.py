"""The same plan swept serially and on GPU slots: wall time of each, and the efficiency of the
parallel sweep, serial wall time / (parallel wall time x slots) (1.0: the slots cost nothing to
share; 1 / slots: no gain at all). Also printed per configuration: output tok/s and MAL of both
sweeps, so a slot's figures can be checked against the serial path's, and per sweep where each
server's time went (start-up, setup, runs, stop: `phases`), so a difference in wall time between
the modes can be placed.

Each sweep writes a fresh database; every server is started by the runner as in any sweep. With
one GPU (`--gpus 0`) the "parallel" sweep is the scheduler with one slot, whose figures should
match the serial path's within the noise of repeats.

usage:
  CPU build, two logical slots:  python bench/parallel_sweep.py --platform cpu --gpus 0,1
  one GPU, 4 configurations:     python bench/parallel_sweep.py --target DIR --platform cuda --gpus 0 \
                                     --methods ngram:2,ngram:4,ngram:6 --num-prompts 64 --max-tokens 256 \
                                     --concurrency 1,16 --rounds 2 --out DIR
  the same in parts, one sweep each (A-B-B-A: serial, slot, slot, serial), merged in DIR:
                                 python bench/parallel_sweep.py ... --modes serial --tag A1 --out DIR
                                 python bench/parallel_sweep.py ... --modes parallel --tag B1 --out DIR

With both sides present it also prints a noise check (`noise_check`): per configuration the
slot's median over the serial one against each side's spread of repeats, and the slot / serial
ratios over all configurations (how many above and below 1), beside two serial sweeps' ratios.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))  # the plan builder the tests use (tests/helpers/plans.py)
from common import SMOKE_HELP, skipped  # noqa: E402
from helpers.plans import demo_plan  # noqa: E402
from workbench import events, plan, store  # noqa: E402
from workbench.host import engine  # noqa: E402
from workbench.host.slots import Slot  # noqa: E402
from workbench.sweep import runner, scheduler  # noqa: E402
from workbench.sweep.executor import ThreadExecutor  # noqa: E402



def methods_of(spec: str) -> list[dict]:
    out = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        name, _, n = item.partition(":")
        out.append({"method": name, "n": int(n)})
    return out


def plan_text(args, eager: bool) -> str:
    profile = {"platform": args.platform if args.platform != "auto" else None,
               "tensor_parallel_size": args.tp if args.tp > 1 else None}
    return demo_plan("parallel-bench", target={"model": args.target, "served_name": "target",
                                               "max_model_len": args.max_model_len, "enforce_eager": eager},
                     profile=profile, methods=methods_of(args.methods), server={"health_timeout_s": 1200},
                     workload={"names": ["builtin"], "num_prompts": args.num_prompts, "max_tokens": args.max_tokens,
                               "concurrency": [int(c) for c in args.concurrency.split(",")],
                               "repeats": args.repeats})


def made_up_results() -> dict[str, list[dict]]:
    """Two rounds a mode of one baseline and one n-gram configuration, for --smoke's summary."""
    def sweep_of(wall: float, tok: float) -> dict:
        runs = [{"method": m, "n": n, "concurrency": 1, "status": "completed", "output_tok_s": tok * f, "mal": mal}
                for m, n, f, mal in (("baseline", None, 1.0, None), ("ngram", 2, 1.3, 1.8))]
        return {"wall_s": wall, "completed": 2, "failed": 0, "runs": runs, "servers": []}
    return {"serial": [sweep_of(60.0, 40.0), sweep_of(62.0, 41.0)],
            "parallel": [sweep_of(33.0, 39.5), sweep_of(34.0, 40.5)]}


def phases(timed: list[tuple[float, object]], end: float) -> list[dict]:
    """Where each server's time went, from the sweep's events as they arrived (seconds): `ready_s`
    from the start to /health answering (the runner's own count), `setup_s` from then to its first
    run (provenance, client processes), `runs_s` over its runs (warm-ups, windows, recording) and
    `stop_s` from its last run to the next server on its slot (or the sweep's end): the stop; and
    `span_s`, all of it. A phase that did not happen (no /health, no run) is left out."""
    servers: list[dict] = []
    open_: dict = {}   # slot -> the server in flight there
    slot_of: dict = {}  # run id -> slot

    def close(s: dict, t: float) -> None:
        s["span_s"] = t - s["_start"]
        if "_last" in s:
            s["stop_s"] = t - s["_last"]

    for t, e in timed:
        if isinstance(e, events.ServerStarting):
            if e.slot in open_:
                close(open_[e.slot], t)
            open_[e.slot] = s = {"slot": e.slot, "_start": t}
            servers.append(s)
        elif isinstance(e, events.ServerReady) and e.slot in open_:
            s = open_[e.slot]
            s["ready_s"], s["_ready"] = e.seconds, t
        elif isinstance(e, events.RunStarted):
            slot_of[e.run] = e.slot
            s = open_.get(e.slot)
            if s is not None and "_first" not in s:
                s["_first"] = t
                s["setup_s"] = t - s.get("_ready", t)
        elif isinstance(e, (events.RunFinished, events.RunFailed)) and e.run in slot_of:  # a run that started
            s = open_[slot_of[e.run]]
            s["_last"] = t
            s["runs_s"] = t - s.get("_first", t)
    for s in open_.values():
        close(s, end)
    return [{k: round(v, 2) if isinstance(v, float) else v for k, v in s.items() if not k.startswith("_")}
            for s in servers]


def sweep(p: plan.Plan, vllm, slots: list[Slot], folder: Path, label: str) -> dict:
    db_path = folder / f"{label}.sqlite"
    timed: list[tuple[float, object]] = []
    t0 = time.perf_counter()
    summary = runner.Runner(p, str(db_path), vllm, emit=lambda e: timed.append((time.perf_counter(), e)),
                            executor=ThreadExecutor(slots)).run()
    wall = time.perf_counter() - t0
    db = store.open_db(db_path, readonly=True)
    try:
        rows = [{"method": r.method, "n": r.n, "concurrency": r.concurrency, "status": str(r.status),
                 "output_tok_s": r.output_tok_s, "mal": r.mal, "gpus": r.gpus, "error": r.error,
                 "repeat": r.repeat, "output_tokens": r.output_tokens, "window_s": r.window_s}
                for r in store.runs(db)]
    finally:
        store.close(db)
    return {"wall_s": wall, "completed": summary["completed"], "failed": summary["failed"], "runs": rows,
            "started": time.time() - wall, "servers": phases(timed, t0 + wall)}


def phase_line(servers: list[dict]) -> str:
    def med(name):
        values = [s[name] for s in servers if s.get(name) is not None]
        return f"{statistics.median(values):.1f}" if values else "-"
    return f"start {med('ready_s')}, setup {med('setup_s')}, runs {med('runs_s')}, stop {med('stop_s')}"


def _key(x: dict) -> tuple:
    return x["method"], x["n"] or 0, x["concurrency"]


def _values(sweeps: list[dict], key: tuple) -> list[float]:
    return [x["output_tok_s"] for res in sweeps for x in res["runs"]
            if _key(x) == key and x["output_tok_s"] is not None]


def _spread(values: list[float]) -> float:
    return (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else float("nan")


def _sign_p(above: int, below: int) -> float:
    """Two-sided sign test: how likely so uneven a split is if each side is as likely as the other."""
    n, k = above + below, min(above, below)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n) if n else float("nan")


def _ratios(summary: dict) -> dict:
    r = [x for x in summary.values() if x == x]  # NaN (a configuration missing on one side) left out
    above, below = sum(x > 1 for x in r), sum(x < 1 for x in r)
    return {"median": statistics.median(r) if r else None, "min": min(r, default=None),
            "max": max(r, default=None), "above_1": above, "below_1": below, "sign_test_p": _sign_p(above, below)}


def noise_check(results: dict, keys: list[tuple]) -> dict:
    """Is the one-slot sweep the serial sweep within the noise of repeats? Per configuration: the
    ratio of the slot's median to the serial median (over every sweep and repeat of each side),
    beside each side's own spread ((max - min) / median); it is within noise when |ratio - 1| is
    no larger than the smaller of the two spreads. Across configurations: the ratios' median, range
    and how many lie above and below 1 (with a two-sided sign-test p). Where a side has two sweeps
    or more, the same for its last sweep against its first: how far two sweeps of one mode differ,
    the yardstick for how far the two modes do."""
    per, ratio = [], {}
    for key in keys:
        s, q = _values(results["serial"], key), _values(results["parallel"], key)
        if not s or not q:
            continue
        ratio[key] = statistics.median(q) / statistics.median(s)
        noise = min(_spread(s), _spread(q))
        per.append({"method": key[0], "n": key[1], "concurrency": key[2], "serial_median": statistics.median(s),
                    "slot_median": statistics.median(q), "ratio": ratio[key], "serial_spread": _spread(s),
                    "slot_spread": _spread(q), "serial_values": len(s), "slot_values": len(q),
                    "within_noise": abs(ratio[key] - 1) <= noise if noise == noise else None})
    doc = {"configurations": per, "slot_over_serial": _ratios(ratio),
           "within_noise": sum(1 for x in per if x["within_noise"]), "of": len(per)}
    for mode in ("serial", "parallel"):
        if len(results[mode]) > 1:
            first, last = results[mode][0], results[mode][-1]
            same = {k: statistics.median(_values([last], k)) / statistics.median(_values([first], k))
                    for k in keys if _values([first], k) and _values([last], k)}
            doc[f"{mode}_last_over_first"] = _ratios(same)
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="demo:smollm2-135m", help="a model folder, Hub id or demo:NAME")
    ap.add_argument("--platform", default="auto", choices=["auto", "cpu", "cuda", "rocm"])
    ap.add_argument("--gpus", default="0,1", help="the slots of the parallel sweep (--gpus of draftbench run)")
    ap.add_argument("--tp", type=int, default=1, help="tensor_parallel_size of every server")
    ap.add_argument("--methods", default="ngram:2", help="besides the baseline: METHOD:N,... (ngram:2,ngram:4)")
    ap.add_argument("--num-prompts", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--concurrency", default="1")
    ap.add_argument("--max-model-len", type=int, default=2048)
    ap.add_argument("--repeats", type=int, default=1,
                    help="repeats of every run, so a slot's figures can be judged against the noise of repeats")
    ap.add_argument("--rounds", type=int, default=1, help="serial and parallel sweeps alternated this many times")
    ap.add_argument("--vllm-python", default=None)
    ap.add_argument("--eager", action="store_true",
                    help="enforce_eager on a GPU too: launches in seconds rather than minutes of compilation")
    ap.add_argument("--out", default=None, help="folder for parallel_sweep.json")
    ap.add_argument("--tag", default=None,
                    help="a label stored with each sweep of this invocation (e.g. A1, B1: the order of parts)")
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    ap.add_argument("--modes", default="serial,parallel",
                    help="which sweeps to run; with --out, sweeps of the same plan already in its "
                         "parallel_sweep.json are kept, so a long comparison can run in parts")
    args = ap.parse_args()
    modes = [m for m in ("serial", "parallel") if m in args.modes.split(",")]

    vllm = engine.probe(args.vllm_python or sys.executable)
    if not vllm.found:
        print(f"no vLLM in {vllm.python}", file=sys.stderr)
        return 2
    cpu = args.platform == "cpu" or vllm.build == "cpu"
    text = plan_text(args, cpu or args.eager)
    try:
        p = plan.loads(text, base=Path.cwd())
        slots = scheduler.resolve(p, vllm, args.gpus)
    except (plan.PlanError, scheduler.SlotError) as exc:
        print(f"parallel_sweep: {exc}", file=sys.stderr)
        return 2
    configs = len(p.servers())
    print(f"{configs} server configuration(s), {len(p.runs)} run(s); slots: {'; '.join(s.label for s in slots)}")
    results: dict[str, list[dict]] = {"serial": [], "parallel": []}
    saved = Path(args.out) / "parallel_sweep.json" if args.out else None
    if saved and saved.exists():
        doc = json.loads(saved.read_text())
        if doc.get("plan") == text:
            results = {mode: doc["rounds"].get(mode, []) for mode in results}
    if args.smoke:
        skipped("the sweeps (they start vLLM servers); the summary is of made-up rounds")
        results, args.rounds, modes = made_up_results(), 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            order = ("serial", "parallel") if i % 2 == 0 else ("parallel", "serial")
            for mode in (m for m in order if m in modes):
                p = plan.loads(text, base=Path.cwd())  # a fresh experiment each time: nothing is skipped
                p.name = f"{p.name}-{mode}-{i}"
                chosen = [Slot(0, None)] if mode == "serial" else slots
                r = sweep(p, vllm, chosen, Path(tmp), f"{mode}-{i}")
                if args.tag:
                    r["tag"] = args.tag
                results[mode].append(r)
                print(f"round {i + 1} {mode:8s}: {r['wall_s']:.1f} s wall, {r['completed']} completed, "
                      f"{r['failed']} failed; per server, median s: {phase_line(r['servers'])}", flush=True)
                failed = [x for x in r["runs"] if x["status"] == "failed"]
                if failed:
                    print(f"  first failure: {(failed[0]['error'] or '?').splitlines()[0][:300]}", flush=True)
                if saved:  # after every sweep: a part cut short keeps what it finished
                    saved.parent.mkdir(parents=True, exist_ok=True)
                    saved.write_text(json.dumps({"plan": text, "rounds": results}, indent=1))
    if not results["serial"] or not results["parallel"]:
        print("one side only so far: run the other with --modes and the same --out to compare")
        return 0
    serial = statistics.median(r["wall_s"] for r in results["serial"])
    parallel = statistics.median(r["wall_s"] for r in results["parallel"])
    efficiency = serial / (parallel * len(slots))
    print(f"\nserial wall time:   {serial:.1f} s (median of {len(results['serial'])})")
    print(f"parallel wall time: {parallel:.1f} s on {len(slots)} slot(s)")
    print(f"speedup {serial / parallel:.2f}x, efficiency serial / (parallel x slots) = {efficiency:.2f}")
    print("\nper configuration (median over rounds and repeats, [min-max]): output tok/s serial | parallel, "
          "MAL serial | parallel")
    keys = sorted({(r["method"], r["n"] or 0, r["concurrency"]) for r in results["serial"][0]["runs"]})
    for key in keys:
        def pick(mode, field):
            values = [x[field] for res in results[mode] for x in res["runs"]
                      if (x["method"], x["n"] or 0, x["concurrency"]) == key and x[field] is not None]
            return (statistics.median(values), min(values), max(values)) if values else (float("nan"),) * 3

        def tok(mode):
            m, lo, hi = pick(mode, "output_tok_s")
            return f"{m:9.1f} [{lo:.1f}-{hi:.1f}]"
        print(f"  {key[0]:10s} N={key[1]:<2d} c={key[2]:<4d} {tok('serial')} | {tok('parallel')}   "
              f"{pick('serial', 'mal')[0]:5.2f} | {pick('parallel', 'mal')[0]:5.2f}")
    check = noise_check(results, keys)
    print("\nwithin the noise of repeats? |slot / serial - 1| against the smaller within-mode spread "
          "((max - min) / median):")
    for x in check["configurations"]:
        print(f"  {x['method']:10s} N={x['n']:<2d} c={x['concurrency']:<4d} ratio {x['ratio']:.3f}  spread serial "
              f"{x['serial_spread']:.1%} slot {x['slot_spread']:.1%}  "
              f"{ {True: 'within', False: 'OUTSIDE', None: '?'}[x['within_noise']] }")
    for name, what in (("slot_over_serial", "slot / serial"), ("serial_last_over_first", "serial last / first"),
                       ("parallel_last_over_first", "slot last / first")):
        if check.get(name) and check[name]["median"] is not None:
            x = check[name]
            print(f"  {what:20s}: median {x['median']:.3f} [{x['min']:.3f}-{x['max']:.3f}], {x['above_1']} above 1, "
                  f"{x['below_1']} below, sign test p = {x['sign_test_p']:.2f}")
    print(f"  {check['within_noise']} of {check['of']} configurations within noise")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        doc = {"plan": text, "slots": [s.label for s in slots], "vllm": vllm.version, "build": vllm.build,
               "serial_wall_s": serial, "parallel_wall_s": parallel, "efficiency": efficiency, "check": check,
               "rounds": results}
        (out / "parallel_sweep.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
