"""`draftbench doctor` (and `--info`): versions, vLLM, GPUs, demo model and paths; never starts Qt."""

from __future__ import annotations

import argparse

from workbench.cli.common import Verbs


def register(sub: Verbs) -> None:
    sub.add_parser("doctor", help="versions, vLLM, GPUs, demo model and paths; never starts Qt").set_defaults(
        handler=doctor)


def doctor(args: argparse.Namespace | None = None) -> int:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench.usecases import doctor as report

    rows = report.report()
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0
