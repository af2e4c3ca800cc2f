"""The machine the benchmarks ran on."""

import sys

from common import machine, table

if __name__ == "__main__":
    # Quick enough as it is: --smoke (tests/test_bench_smoke.py) changes nothing.
    table("Machine" + (" (smoke)" if "--smoke" in sys.argv[1:] else ""), ["", "value"], machine())
