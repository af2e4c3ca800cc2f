"""Restart: the first and the second start of the same target's server, measured to a healthy
/health. With `--enforce-eager` (how the demo plan runs) there is nothing to compile, so the
second start gains only from the operating system's file cache. Without it, vLLM compiles the
model with torch.compile (inductor) on the first start and reuses that compile cache on the next;
the cache goes to a fresh folder (VLLM_CACHE_ROOT) so the first start is truly cold.

    python bench/restart.py [--skip-compiled]
"""

from __future__ import annotations

import argparse
import tempfile

from common import SMOKE_HELP, server_config, skipped, start, table


def two_starts(**config) -> tuple[float, float]:
    times = []
    for _ in range(2):
        srv, seconds = start(server_config(**config))
        srv.stop()
        times.append(seconds)
    return times[0], times[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-compiled", action="store_true", help="only the --enforce-eager pair")
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = ap.parse_args()
    rows = []
    if args.smoke:
        server_config(enforce_eager=True)  # the demo model and the configuration, as for a real start
        skipped("the vLLM server starts")
        table("Restart (smoke: no server started)", ["mode", "first start (s)", "second start (s)", "saved (s)"],
              [["--enforce-eager (the demo plan)", "-", "-", "-"]])
        return
    first, second = two_starts(enforce_eager=True)
    rows.append(["--enforce-eager (the demo plan)", f"{first:.1f}", f"{second:.1f}", f"{first - second:+.1f}"])
    if not args.skip_compiled:
        with tempfile.TemporaryDirectory() as cache:
            first, second = two_starts(enforce_eager=False, env=(("VLLM_CACHE_ROOT", cache),))
        rows.append(["compiled (torch.compile), empty cache first", f"{first:.1f}", f"{second:.1f}",
                     f"{first - second:+.1f}"])
    table("Restart: seconds from launch to a healthy server (demo target, no speculation)",
          ["mode", "first start (s)", "second start (s)", "saved (s)"], rows)


if __name__ == "__main__":
    main()
