"""`draftbench demo-model`: build (or check) the embedded demo target and its drafts."""

from __future__ import annotations

import argparse

from workbench.cli.common import CliError, Verbs


def register(sub: Verbs) -> None:
    d = sub.add_parser("demo-model", help="build (or check) the embedded demo target and its drafts")
    d.add_argument("--force", action="store_true", help="rebuild even if present and intact")
    d.set_defaults(handler=demo_model)


def demo_model(args: argparse.Namespace) -> int:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench.checkpoints import demo

    try:
        folders = demo.ensure(progress=demo.main_progress, force=args.force)
    except demo.DemoModelError as exc:
        raise CliError(str(exc)) from None
    for name, folder in folders.items():
        print(f"{name}: {folder}")
    return 0
