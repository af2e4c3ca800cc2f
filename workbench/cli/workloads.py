"""`draftbench workloads`: the prompt sets; list them, or show one's prompts."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from workbench.cli.common import CliError, Verbs, table


def register(sub: Verbs) -> None:
    wl = sub.add_parser("workloads", help="the prompt sets: list them, or show one's prompts")
    wl_sub = wl.add_subparsers(dest="workloads_command", metavar="list|show", required=True)
    wl_sub.add_parser("list", help="built-in families and the benchmark datasets")
    ws = wl_sub.add_parser("show", help="the prompts a workload sends, in order")
    ws.add_argument("name", help="builtin, builtin:FAMILY, gsm8k|math500|humaneval|mbpp[:PATH], or a file")
    ws.add_argument("--limit", type=int, default=10, help="how many prompts (0 = all)")
    ws.add_argument("--json", action="store_true")
    wl.set_defaults(handler=workloads_verb)


def workloads_verb(args: argparse.Namespace) -> int:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench.load import datasets, workloads

    if args.workloads_command == "list":
        rows = [[workloads.BUILTIN, "built-in", "all four families", "48 prompts written for Draftbench"]]
        rows += [[f"{workloads.BUILTIN}:{k}", "built-in", k, v] for k, v in workloads.FAMILIES.items()]
        rows += [[d["name"], "benchmark", d["family"], d["repo"]] for d in datasets.describe()]
        print(table(["name", "kind", "family", "source"], rows))
        return 0
    try:
        prompts = workloads.load(args.name, Path.cwd())
    except workloads.WorkloadError as exc:
        raise CliError(str(exc)) from None
    shown = prompts if args.limit == 0 else prompts[: args.limit]
    if args.json:
        print(json.dumps([{"id": p.id, "family": p.family, "prompt": p.text} for p in shown], indent=1))
        return 0
    print(f"{len(prompts)} prompts in {args.name}")
    for p in shown:
        print(f"\n[{p.id}] ({p.family})\n{p.text}")
    return 0
