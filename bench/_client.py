"""Draftbench's load generator as a process of its own, so its CPU time can be read (bench/client_cost.py)."""

import asyncio
import sys

from common import table  # (importing common also puts the project on the path)
from workbench import load
from workbench.load import workloads

if __name__ == "__main__" and sys.argv[1:] == ["--smoke"]:
    prompts = workloads.sample(workloads.load("builtin"), 4, seed=3)
    table("Client process (smoke: no server to send to)", ["prompts sampled", "first prompt id"],
          [[len(prompts), prompts[0].id]])
elif __name__ == "__main__":
    base, key, count, max_tokens, concurrency = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
    prompts = workloads.sample(workloads.load("builtin"), count, seed=3)
    results = asyncio.run(load.generate(base, key, "smollm2", prompts, load.Sampling(max_tokens, 0.0, ignore_eos=True),
                                        concurrency))
    print(sum(r.output_tokens for r in results if r.ok), sum(not r.ok for r in results))
