"""Memory of the real vLLM CPU server for the demo target against Draftbench's estimate.

Starts the demo target alone and with its noisy-copy draft (N=3), sends a few requests, then sums
the proportional set size (PSS) and RSS of each server's process tree.

    python bench/memory.py [--smoke]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from common import SMOKE_HELP, skipped  # noqa: E402
from workbench import launch, plan
from workbench.checkpoints import compat, demo, memory
from workbench.host import engine  # noqa: E402


def server(target: str, draft: str | None) -> plan.Server:
    return plan.Server(target=target, served_name="smollm2", method="draft_model" if draft else "baseline",
                       n=3 if draft else None, draft=draft, options=(), max_model_len=2048, dtype="bfloat16",
                       extra_args=(), env=(), enforce_eager=True, per_request_metrics=False)


def measure(config: plan.Server, install: engine.VllmInstall) -> memory.Measured:
    srv = launch.LocalServer(launch.prepare(config, install, launch.free_port()))
    srv.start()
    try:
        srv.wait_healthy(600)
        headers = {"Authorization": f"Bearer {srv.api_key}"}
        for _ in range(4):
            httpx.post(srv.spec.base_url + "/v1/chat/completions", headers=headers, timeout=120, json={
                "model": "smollm2", "max_tokens": 64, "temperature": 0.0,
                "messages": [{"role": "user", "content": "Count from one to twenty in words."}]})
        time.sleep(2)
        return memory.measure_tree(srv.proc.pid)
    finally:
        srv.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = ap.parse_args()
    folders = demo.ensure()
    install = engine.probe()
    target = compat.load(str(folders[demo.TARGET.name]))
    draft = compat.load(str(folders[demo.DRAFT_NOISY.name]))
    rows = []
    for name, d in (("target alone", None), ("target + noisy-copy draft", draft)):
        est = memory.estimate(target, d, 2048, 1, "bfloat16", "cpu", launch.CPU_ENV)
        if args.smoke:  # the estimate as usual; measured: this process's own tree, not a server's
            got = memory.measure_tree(os.getpid())
        else:
            got = measure(server(target.ref, d.ref if d else None), install)
        rows.append((name, est, got))
    if args.smoke:
        skipped("the vLLM servers: PSS and RSS below are this script's own")
    print(f"{'server':<28}{'weights':>10}{'KV':>10}{'runtime':>10}{'estimate':>10}{'PSS':>10}{'RSS':>10}{'est/PSS':>9}")
    for name, est, got in rows:
        print(f"{name:<28}{est.weights / memory.GiB:>9.2f}G{est.kv_reserved / memory.GiB:>9.2f}G"
              f"{est.runtime / memory.GiB:>9.2f}G{est.total / memory.GiB:>9.2f}G{got.pss / memory.GiB:>9.2f}G"
              f"{got.rss / memory.GiB:>9.2f}G{est.total / got.pss:>9.2f}")


if __name__ == "__main__":
    main()
