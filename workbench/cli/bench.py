"""`draftbench import-bench` and `export-bench`: runs to and from `vllm bench serve` result files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from workbench.cli.common import CliError, Verbs, open_db


def register(sub: Verbs) -> None:
    ib = sub.add_parser("import-bench", help="store a `vllm bench serve --save-result` JSON file as a run")
    ib.add_argument("file")
    ib.add_argument("--db", default=None)
    ib.add_argument("--method", default="baseline", help="the drafting method the server used")
    ib.add_argument("--n", type=int, help="its number of speculative tokens")
    ib.add_argument("--draft", help="its draft checkpoint")
    ib.add_argument("--target", help="the target model (default: the file's model_id)")
    ib.add_argument("--workload", help="a name for the prompts (default: the file's label or name)")
    ib.set_defaults(handler=import_bench)

    eb = sub.add_parser("export-bench", help="write a run as a `vllm bench serve` result JSON file")
    eb.add_argument("run", type=int)
    eb.add_argument("--db", default=None)
    eb.add_argument("--out", required=True)
    eb.set_defaults(handler=export_bench)


def import_bench(args: argparse.Namespace) -> int:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench import methods
    from workbench.report import benchjson

    db = open_db(args.db)
    try:
        run_id = benchjson.import_file(db, args.file, args.method, args.n, args.draft, args.target, args.workload)
    except (benchjson.BenchJsonError, methods.MethodError) as exc:
        raise CliError(str(exc)) from None
    print(f"imported as run {run_id}")
    return 0


def export_bench(args: argparse.Namespace) -> int:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench import store
    from workbench.report import benchjson

    db = open_db(args.db, readonly=True)
    row = store.run(db, args.run)
    if row is None:
        raise CliError(f"no run {args.run} in the database")
    try:
        Path(args.out).write_text(json.dumps(benchjson.export_run(row), indent=1))
    except OSError as exc:
        raise CliError(f"cannot write {args.out}: {exc.strerror}") from None
    print(args.out)
    return 0
