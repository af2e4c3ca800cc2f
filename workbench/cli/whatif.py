"""`draftbench what-if`: a what-if plan from a measured run (its own curve imposed, dummy weights)."""

from __future__ import annotations

import argparse
from pathlib import Path

from workbench.cli.common import CliError, Verbs, open_db


def register(sub: Verbs) -> None:
    w = sub.add_parser("what-if", help="write a what-if plan: a measured run's configuration with dummy "
                                        "weights and its own measured acceptance imposed")
    w.add_argument("--from-run", type=int, required=True, metavar="RUN", help="a completed speculative run's id")
    w.add_argument("--concurrency", type=int, nargs="+", help="concurrencies (default: the run's)")
    w.add_argument("--repeats", type=int, default=1)
    w.add_argument("--no-baseline", action="store_true",
                   help="leave the (dummy-weight) baseline out: pairing a run whose baseline is already measured")
    w.add_argument("--out", help="plan file to write (default: what-if-run-RUN.toml; never overwrites)")
    w.add_argument("--db", default=None)
    w.set_defaults(handler=what_if)


def what_if(args: argparse.Namespace) -> int:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench import store
    from workbench.usecases import whatif

    db = open_db(args.db, readonly=True)
    try:
        out = whatif.write_plan(db, args.from_run, Path(args.out or f"what-if-run-{args.from_run}.toml"),
                                concurrency=args.concurrency, repeats=max(1, args.repeats),
                                baseline=not args.no_baseline)
    except whatif.WhatIfError as exc:
        raise CliError(str(exc)) from None
    finally:
        store.close(db)
    print(out)
    return 0
