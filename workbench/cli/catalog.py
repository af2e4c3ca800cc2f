"""`draftbench catalog` and `draftbench new`: the published draft/target pairs, and a plan from one."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench import paths
from workbench.cli.common import CliError, Verbs, table


def register(sub: Verbs) -> None:
    ct = sub.add_parser("catalog", help="the published draft/target pairs (and the demo pair)")
    ct.add_argument("--curves", action="store_true",
                    help="the published per-position acceptance tables a what-if plan can impose instead")
    ct.set_defaults(handler=catalog_verb)
    nw = sub.add_parser("new", help="write an experiment plan from a catalog pair")
    nw.add_argument("--pair", required=True, help="a pair name from `draftbench catalog`")
    nw.add_argument("--out", help="plan file to write (default: PAIR.toml; never overwrites)")
    nw.set_defaults(handler=new)


def catalog_verb(args: argparse.Namespace) -> int:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench.plan import catalog, curves

    if getattr(args, "curves", False):
        tables = curves.tables().values()
        rows = [[t.key, t.method, t.target, t.dataset, ",".join(map(str, sorted(t.by_n))),
                 " ".join(f"{p:.2f}" for p in t.longest)] for t in tables]
        print(table(["curve (acceptance = { published = ... })", "method", "target", "dataset", "N",
                     "per-position at the largest N"], rows))
        cites = sorted({t.citation for t in tables})
        print("\n".join(f"source: {c}" for c in cites))
        return 0
    try:
        pairs = catalog.load()
    except catalog.CatalogError as exc:
        raise CliError(str(exc)) from None
    rows = [[p.name, p.method, p.draft, p.target, ",".join(map(str, p.n)),
             "yes" if p.gated else "no", p.publisher] for p in pairs]
    print(table(["pair", "method", "draft", "target", "N", "gated", "publisher"], rows))
    return 0


def new(args: argparse.Namespace) -> int:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench.plan import catalog

    try:
        pair = catalog.get(args.pair)
        text = catalog.plan_text(pair)
    except catalog.CatalogError as exc:
        raise CliError(str(exc)) from None
    out = Path(args.out or f"{pair.name}.toml")
    try:
        paths.write_new(out, text)
    except FileExistsError:
        raise CliError(f"{out} already exists; choose another --out") from None
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror}") from None
    print(out)
    if pair.gated:
        print(f"draftbench: note: {pair.name} needs a Hugging Face token whose account accepted the licence "
              f"of {pair.target if pair.target_gated else pair.draft}", file=sys.stderr)
    return 0
