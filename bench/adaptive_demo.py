"""Adaptive against exhaustive sweeps on the demo target, as two independent sweeps: server
launches, wall time, speedup per N and the best N each finds.

    python bench/adaptive_demo.py [--n 1 2 3 4 5] [--concurrency 1] [--prompts 3] [--max-tokens 32]
                                  [--repeats 2] [--db-dir DIR]

Needs the vLLM CPU build and the demo model (`draftbench demo-model`); about 12 server launches.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the plan builder the tests use (tests/helpers/plans.py)

from common import SMOKE_HELP, skipped  # noqa: E402
from helpers.plans import NGRAM, demo_plan  # noqa: E402
from workbench import plan, store  # noqa: E402
from workbench.analysis import compare, recommend  # noqa: E402
from workbench.host import engine  # noqa: E402
from workbench.sweep.adaptive import AdaptiveRunner  # noqa: E402
from workbench.sweep.runner import Runner  # noqa: E402



def plan_text(mode: str, args) -> str:
    return demo_plan(f"adaptive-demo-{mode}", target={"dtype": "bfloat16"}, methods=[{**NGRAM, "n": list(args.n)}],
                     workload={"num_prompts": args.prompts, "max_tokens": args.max_tokens,
                               "concurrency": [args.concurrency], "repeats": args.repeats},
                     sweep={"mode": mode}, server={"health_timeout_s": 600})


def sweep(mode: str, args, folder: Path, vllm) -> tuple[dict[int, compare.Config], list[compare.Config], int, float]:
    text = plan_text(mode, args)
    events: list = []
    path = folder / f"{mode}.sqlite"
    t0 = time.monotonic()
    cls = AdaptiveRunner if mode == "adaptive" else Runner
    cls(plan.loads(text), str(path), vllm, emit=events.append).run()
    seconds = time.monotonic() - t0
    cs = compare.configs(store.runs(store.open_db(path, readonly=True)))
    for e in events:
        if e.KIND == "recommendation":
            print(f"  {e.message}")
    launches = sum(e.KIND == "server_starting" for e in events)
    return {c.n: c for c in cs if c.method != "baseline"}, cs, launches, seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--prompts", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--db-dir", type=Path, help="keep the two databases here")
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = ap.parse_args()
    if args.smoke:
        print(f"{'sweep':<11} {'runs planned':>12} {'servers':>8}")
        for mode in ("exhaustive", "adaptive"):
            p = plan.loads(plan_text(mode, args))
            print(f"{mode:<11} {len(p.runs):>12} {len(p.servers()):>8}")
        skipped("both sweeps (they start vLLM servers)")
        return 0
    vllm = engine.probe(sys.executable)
    folder = args.db_dir or Path(tempfile.mkdtemp(prefix="adaptive-demo-"))
    folder.mkdir(parents=True, exist_ok=True)
    results = {}
    for mode in ("exhaustive", "adaptive"):
        print(f"{mode} sweep ...", flush=True)
        results[mode] = sweep(mode, args, folder, vllm)
    exh, exh_cs, exh_launches, exh_seconds = results["exhaustive"]
    ada, ada_cs, ada_launches, ada_seconds = results["adaptive"]
    rec = next(iter(recommend.from_configs(ada_cs).values()))
    best = max(exh, key=lambda n: exh[n].speedup)
    pooled, dof = recommend.noise(exh_cs)
    tolerance = compare.t95(dof) * exh[best].speedup * pooled * math.sqrt(2 / exh[best].tok_s.n)
    print(f"\n{'N':>3} {'exhaustive':>12} {'adaptive':>10} {'predicted':>16}")
    for n in sorted(exh):
        a = f"{ada[n].speedup:.3f}" if n in ada else "-"
        p = rec.at(n)
        print(f"{n:>3} {exh[n].speedup:>12.3f} {a:>10} {p.speedup:>9.3f} ± {p.half_width:.3f}")
    print(f"\n{'sweep':<11} {'launches':>8} {'seconds':>8} {'best N':>7}")
    print(f"{'exhaustive':<11} {exh_launches:>8} {exh_seconds:>8.0f} {best:>7}")
    print(f"{'adaptive':<11} {ada_launches:>8} {ada_seconds:>8.0f} {rec.best_n:>7}")
    gap = exh[best].speedup - exh[rec.best_n].speedup
    print(f"\nadaptive's N in the exhaustive sweep: {gap:.3f} below its best (95% noise of a difference: {tolerance:.3f}); "
          f"{'same best N' if rec.best_n == best else 'within noise' if gap <= tolerance else 'NOT within noise'}")
    print(f"databases: {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
