"""`draftbench pull` and `draftbench models`: the Hugging Face cache, the Hub's search and downloads."""

from __future__ import annotations

import argparse
import json
import sys
import time

from workbench.cli.common import CliError, Verbs, table


def register(sub: Verbs) -> None:
    pl = sub.add_parser("pull", help="download a model from the Hugging Face Hub into the shared cache (resumes)")
    pl.add_argument("repo", help="owner/name on the Hub")
    pl.add_argument("--revision", help="branch, tag or commit (default main)")
    pl.add_argument("--include", action="append", help="only files matching this pattern (repeatable)")
    pl.add_argument("--config-only", action="store_true",
                    help="only the config, tokenizer and generation files (no weights): enough for a model's "
                         "shape, or to serve it with --load-format dummy")
    pl.add_argument("--dry-run", action="store_true", help="print the files and the size, download nothing")
    pl.set_defaults(handler=pull)

    md = sub.add_parser("models", help="the models in the Hugging Face cache; search the Hub; delete from the cache")
    md.add_argument("--search", metavar="Q", help="search the Hub instead of listing the cache")
    md.add_argument("--delete", metavar="REPO", help="remove a model from the cache")
    md.add_argument("--json", action="store_true")
    md.set_defaults(handler=models)


def pull(args: argparse.Namespace) -> int:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench.checkpoints import hub, hub_api

    patterns = (args.include or []) + hub.CONFIG_PATTERNS if args.config_only else args.include
    try:
        info = hub_api.remote(args.repo, args.revision) if not hub_api.offline() else None
        if args.config_only and info is not None:
            part = info.matching(patterns)
            summary = (f"config only: {hub.human(sum(f.size for f in part))} of {hub.human(info.size)} "
                       f"({len(part)} of {len(info.files)} files)")
        if args.dry_run:
            if info is None:
                raise CliError("a dry run asks the Hub for sizes, and offline mode is on (HF_HUB_OFFLINE=1)")
            for f in info.matching(patterns):
                print(f"{hub.human(f.size):>10}  {f.path}")
            print(f"{hub.human(sum(f.size for f in info.matching(patterns))):>10}  in all ({info.repo} @ {info.sha[:12]})")
            if args.config_only:
                print(summary)
            return 0
        if info is not None:
            print(f"draftbench: {info.repo}: {hub.human(info.size)} in {len(info.files)} files", file=sys.stderr)
            if args.config_only:
                print(f"draftbench: {info.repo}: {summary}", file=sys.stderr)
        last = [0.0]

        def progress(done: int, total: int, name: str) -> None:
            now = time.monotonic()
            if now - last[0] >= 0.5 or done >= total:
                last[0] = now
                pct = 100.0 * done / total if total else 100.0
                print(f"[{pct:5.1f}%] {hub.human(done)} / {hub.human(total)}  {name}", file=sys.stderr, flush=True)

        folder = hub.Download(args.repo, args.revision, patterns, progress).run()
    except hub_api.HubError as exc:
        raise CliError(str(exc)) from None
    print(folder)
    return 0


def models(args: argparse.Namespace) -> int:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench.checkpoints import hub, hub_api

    try:
        if args.delete:
            freed = hub.delete(args.delete)
            print(f"removed {args.delete} from {hub_api.cache_dir()} ({hub.human(freed)} freed)")
            return 0
        if args.search is not None:
            hits = hub_api.search(args.search)
            if args.json:
                print(json.dumps([h.__dict__ for h in hits], indent=1))
                return 0
            print(table(["repo", "downloads", "likes", "gated", "task"],
                         [[h.repo, str(h.downloads or 0), str(h.likes or 0), "yes" if h.gated else "no",
                           h.pipeline or ""] for h in hits]))
            return 0
        rows = hub.cached()
    except hub_api.HubError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print(json.dumps([{"repo": r.repo, "size": r.size, "files": r.files, "revisions": list(r.revisions),
                           "refs": list(r.refs), "partial": r.partial, "path": str(r.path)} for r in rows], indent=1))
        return 0
    token = "present" if hub_api.token_present() else "not set"
    print(f"cache: {hub_api.cache_dir()}   token: {token}   offline: {'yes' if hub_api.offline() else 'no'}")
    print(table(["repo", "size", "files", "refs", "partial download"],
                 [[r.repo, hub.human(r.size), str(r.files), ",".join(r.refs),
                   hub.human(r.partial) if r.partial else ""] for r in rows]))
    return 0

