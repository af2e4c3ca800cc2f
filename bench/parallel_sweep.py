"""The same plan swept serially and on GPU slots: wall time of each, and the efficiency of the
parallel sweep, serial wall time / (parallel wall time x slots) (1.0: the slots cost nothing to
share; 1 / slots: no gain at all). Also printed per configuration: output tok/s and MAL of both
sweeps, so a slot's figures can be checked against the serial path's.

Each sweep writes a fresh database; every server is started by the runner as in any sweep. With
one GPU (`--gpus 0`) the "parallel" sweep is the scheduler with one slot, whose figures should
match the serial path's within the noise of repeats.

usage:
  CPU build, two logical slots:  python bench/parallel_sweep.py --platform cpu --gpus 0,1
  one GPU, 4 configurations:     python bench/parallel_sweep.py --target DIR --platform cuda --gpus 0 \
                                     --methods ngram:2,ngram:4,ngram:6 --num-prompts 64 --max-tokens 256 \
                                     --concurrency 1,16 --rounds 2 --out DIR
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench import plan, store  # noqa: E402
from workbench.host import engine  # noqa: E402
from workbench.host.slots import Slot  # noqa: E402
from workbench.sweep import runner, scheduler  # noqa: E402

PLAN = """
name = "parallel-bench"
[target]
model = "{target}"
served_name = "target"
max_model_len = {max_model_len}
enforce_eager = {eager}
{profile}
{methods}
[workload]
names = ["builtin"]
num_prompts = {prompts}
max_tokens = {max_tokens}
warmup = 1
concurrency = [{concurrency}]
repeats = {repeats}
temperature = 0.0
[server]
health_timeout_s = 1200
"""


def methods_toml(spec: str) -> str:
    out = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        name, _, n = item.partition(":")
        out.append(f'[[methods]]\nmethod = "{name}"\nn = {int(n)}\n')
    return "\n".join(out)


def sweep(p: plan.Plan, vllm, slots: list[Slot], folder: Path, label: str) -> dict:
    db_path = folder / f"{label}.sqlite"
    t0 = time.perf_counter()
    summary = runner.Runner(p, str(db_path), vllm, emit=lambda e: None, slots=slots).run()
    wall = time.perf_counter() - t0
    db = store.open_db(db_path, readonly=True)
    try:
        rows = [{"method": r["method"], "n": r["n"], "concurrency": r["concurrency"], "status": r["status"],
                 "output_tok_s": r["output_tok_s"], "mal": r["mal"], "gpus": r["gpus"], "error": r["error"]}
                for r in store.runs(db)]
    finally:
        store.close(db)
    return {"wall_s": wall, "completed": summary["completed"], "failed": summary["failed"], "runs": rows}


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
    profile = [f'platform = "{args.platform}"'] if args.platform != "auto" else []
    if args.tp > 1:
        profile.append(f"tensor_parallel_size = {args.tp}")
    text = PLAN.format(target=args.target, max_model_len=args.max_model_len, eager=str(cpu or args.eager).lower(),
                       profile="[profile]\n" + "\n".join(profile) if profile else "",
                       methods=methods_toml(args.methods), prompts=args.num_prompts, max_tokens=args.max_tokens,
                       concurrency=args.concurrency, repeats=args.repeats)
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
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            order = ("serial", "parallel") if i % 2 == 0 else ("parallel", "serial")
            for mode in (m for m in order if m in modes):
                p = plan.loads(text, base=Path.cwd())  # a fresh experiment each time: nothing is skipped
                p.name = f"{p.name}-{mode}-{i}"
                chosen = [Slot(0, None)] if mode == "serial" else slots
                r = sweep(p, vllm, chosen, Path(tmp), f"{mode}-{i}")
                results[mode].append(r)
                print(f"round {i + 1} {mode:8s}: {r['wall_s']:.1f} s wall, {r['completed']} completed, "
                      f"{r['failed']} failed", flush=True)
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
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        doc = {"plan": text, "slots": [s.label for s in slots], "vllm": vllm.version, "build": vllm.build,
               "serial_wall_s": serial, "parallel_wall_s": parallel, "efficiency": efficiency, "rounds": results}
        (out / "parallel_sweep.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
