"""`draftbench`: the desktop app with no arguments, headless commands otherwise."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Callable

from workbench import __version__, paths


class CliError(Exception):
    """A one-line message for the user; exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line (the usage itself stays behind --help)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="draftbench", description="Speculative-decoding workbench for vLLM.")
    p.add_argument("--version", action="version", version=f"draftbench {__version__}")
    p.add_argument("--info", action="store_true", help="print versions and paths (same as `doctor`) and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    g = sub.add_parser("gui", help="open the desktop app (the default)")
    g.add_argument("--db", help="results database to open")
    g.add_argument("--smoke-test", action="store_true",
                   help="open the main window, print what it shows, and quit (for packaging checks)")

    sub.add_parser("doctor", help="versions, vLLM, GPUs, demo model and paths; never starts Qt")

    d = sub.add_parser("demo-model", help="build (or check) the embedded demo target and its drafts")
    d.add_argument("--force", action="store_true", help="rebuild even if present and intact")

    r = sub.add_parser("run", help="run an experiment plan (resumes: completed runs are skipped)")
    r.add_argument("plan", help="plan file (TOML)")
    r.add_argument("--db", default=None, help=f"results database (default {paths.default_db()})")
    r.add_argument("--vllm-python", help="interpreter of the environment that has vLLM")
    r.add_argument("--dry-run", action="store_true", help="print the vLLM commands and runs, start nothing")
    r.add_argument("--events", help="append the JSON-line events to this file instead of stdout")
    r.add_argument("--log", help="write messages (stderr) to this file")
    r.add_argument("--own-group", action="store_true",
                   help="run in a new session, so closing the terminal or app that started it does not stop it")

    ls = sub.add_parser("runs", help="list the runs in a database")
    ls.add_argument("--db", default=None)
    ls.add_argument("--json", action="store_true")

    s = sub.add_parser("show", help="a run's summary, or an experiment's table with speedups")
    s.add_argument("run", type=int, nargs="?", help="run id (default: the latest experiment's table)")
    s.add_argument("--db", default=None)
    s.add_argument("--experiment", type=int, help="experiment id for the table")
    s.add_argument("--json", action="store_true")
    wl = sub.add_parser("workloads", help="the prompt sets: list them, or show one's prompts")
    wl_sub = wl.add_subparsers(dest="workloads_command", metavar="list|show", required=True)
    wl_sub.add_parser("list", help="built-in families and the benchmark datasets")
    ws = wl_sub.add_parser("show", help="the prompts a workload sends, in order")
    ws.add_argument("name", help="builtin, builtin:FAMILY, gsm8k|math500|humaneval|mbpp[:PATH], or a file")
    ws.add_argument("--limit", type=int, default=10, help="how many prompts (0 = all)")
    ws.add_argument("--json", action="store_true")

    ib = sub.add_parser("import-bench", help="store a `vllm bench serve --save-result` JSON file as a run")
    ib.add_argument("file")
    ib.add_argument("--db", default=None)
    ib.add_argument("--method", default="baseline", help="the drafting method the server used")
    ib.add_argument("--n", type=int, help="its number of speculative tokens")
    ib.add_argument("--draft", help="its draft checkpoint")
    ib.add_argument("--target", help="the target model (default: the file's model_id)")
    ib.add_argument("--workload", help="a name for the prompts (default: the file's label or name)")

    eb = sub.add_parser("export-bench", help="write a run as a `vllm bench serve` result JSON file")
    eb.add_argument("run", type=int)
    eb.add_argument("--db", default=None)
    eb.add_argument("--out", required=True)
    return p


def main(argv: list[str] | None = None, gui: Callable[[str | None, bool], int] | None = None) -> int:
    """`gui` opens the desktop app; it is handed in by the app package, so this core never
    imports Qt (without it, the headless commands still work)."""
    args = _parser().parse_args(argv)
    try:
        if args.info or args.command == "doctor":
            return _doctor()
        if args.command in (None, "gui"):
            if gui is None:
                raise CliError("this entry point has no desktop app; use a headless command (see --help)")
            return gui(getattr(args, "db", None), getattr(args, "smoke_test", False))
        return {"demo-model": _demo_model, "run": _run, "runs": _runs, "show": _show,
                "import-bench": _import_bench, "export-bench": _export_bench,
                "workloads": _workloads}[args.command](args)
    except CliError as exc:
        print(f"draftbench: {exc}", file=sys.stderr)
        return 2
    except sqlite3.DatabaseError as exc:
        # A file that opened but fails later: damaged pages, a full disk, another writer's lock.
        print(f"draftbench: the results database cannot be used: {store_message(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("draftbench: interrupted", file=sys.stderr)
        return 130


def store_message(exc: sqlite3.DatabaseError) -> str:
    text = str(exc)
    if "locked" in text:
        return f"{text} (another program is writing to it; close it or wait)"
    if "full" in text or "disk I/O" in text:
        return f"{text} (free some disk space, then run the same plan again to resume)"
    if "malformed" in text or "not a database" in text:
        return f"{text} (the file is damaged; open another database)"
    return text


def _append(path: str, what: str):
    try:
        return open(path, "a", buffering=1, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write the {what} file {path}: {exc.strerror}") from None


def _doctor() -> int:
    from workbench import doctor

    rows = doctor.report()
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0


def _demo_model(args) -> int:
    from workbench import demo

    try:
        folders = demo.ensure(progress=demo.main_progress, force=args.force)
    except demo.DemoModelError as exc:
        raise CliError(str(exc)) from None
    for name, folder in folders.items():
        print(f"{name}: {folder}")
    return 0


def _open(db: str | None, readonly: bool = False):
    from workbench import store

    try:
        return store.open_db(db or paths.default_db(), readonly=readonly)
    except store.StoreError as exc:
        raise CliError(str(exc)) from None


def _run(args) -> int:
    if args.log:
        log = _append(args.log, "log")
        os.dup2(log.fileno(), sys.stderr.fileno())
    if args.events:
        _append(args.events, "events").close()
    from workbench import demo, engine, launch, plan, runner, store

    vllm = engine.probe(args.vllm_python)
    # A dry run shows every launch, including methods whose package the vLLM environment lacks.
    modules = None if args.dry_run else engine.optional_modules(vllm)
    try:
        p = plan.load(args.plan, available_modules=modules)
    except plan.PlanError as exc:
        raise CliError(str(exc)) from None
    from workbench import sanity

    existing = None
    db_path = Path(args.db or paths.default_db())
    if db_path.exists():
        try:
            existing = store.open_db(db_path, readonly=True)
        except store.StoreError as exc:
            raise CliError(str(exc)) from None
    for warning in sanity.for_plan(p, existing):
        print(f"draftbench: warning: {warning}", file=sys.stderr)
    if args.dry_run:
        for server, runs in p.servers():
            print(launch.prepare(server, vllm, 0).command.replace("--port 0", "--port PORT"))
            for r in runs:
                print(f"    {r.label}")
        return 0
    if not vllm.found:
        raise CliError(f"no vLLM in {vllm.python}: install Draftbench with the `cpu` or `gpu` extra, "
                       "or pass --vllm-python PATH")
    from workbench import workloads

    try:
        prompts = runner.load_workloads(p)
    except workloads.WorkloadError as exc:
        raise CliError(str(exc)) from None
    if any(t.startswith(str(paths.models_dir())) for t in {r.server.target for r in p.runs}):
        try:
            demo.ensure(progress=demo.main_progress)
        except demo.DemoModelError as exc:
            raise CliError(str(exc)) from None
    if args.own_group:
        try:
            os.setsid()
        except OSError:
            pass  # already a session leader
    emit = runner.file_events(args.events) if args.events else runner.print_event
    try:
        r = runner.Runner(p, str(Path(args.db or paths.default_db())), vllm, emit=emit, events_path=args.events,
                          prompts=prompts)
    except store.StoreError as exc:
        raise CliError(str(exc)) from None

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        summary = r.run()
    except KeyboardInterrupt:
        r.cancel_running()
        return 130
    return 0 if summary["failed"] == 0 else 1


def _workloads(args) -> int:
    from workbench import datasets, workloads

    if args.workloads_command == "list":
        rows = [[workloads.BUILTIN, "built-in", "all four families", "48 prompts written for Draftbench"]]
        rows += [[f"{workloads.BUILTIN}:{k}", "built-in", k, v] for k, v in workloads.FAMILIES.items()]
        rows += [[d["name"], "benchmark", d["family"], d["repo"]] for d in datasets.describe()]
        print(_table(["name", "kind", "family", "source"], rows))
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


def _import_bench(args) -> int:
    from workbench import benchjson, methods

    db = _open(args.db)
    try:
        run_id = benchjson.import_file(db, args.file, args.method, args.n, args.draft, args.target, args.workload)
    except (benchjson.BenchJsonError, methods.MethodError) as exc:
        raise CliError(str(exc)) from None
    print(f"imported as run {run_id}")
    return 0


def _export_bench(args) -> int:
    from workbench import benchjson, store

    db = _open(args.db, readonly=True)
    row = store.run(db, args.run)
    if row is None:
        raise CliError(f"no run {args.run} in the database")
    try:
        Path(args.out).write_text(json.dumps(benchjson.export_run(row), indent=1))
    except OSError as exc:
        raise CliError(f"cannot write {args.out}: {exc.strerror}") from None
    print(args.out)
    return 0


def _runs(args) -> int:
    db = _open(args.db, readonly=True)
    from workbench import store

    rows = store.runs(db)
    if args.json:
        print(json.dumps(rows, indent=1, default=str))
        return 0
    cols = [("id", "{}"), ("experiment_id", "{}"), ("status", "{}"), ("method", "{}"), ("n", "{}"),
            ("workload", "{}"), ("concurrency", "{}"), ("repeat", "{}"), ("mal", "{:.2f}"),
            ("acceptance_rate", "{:.3f}"), ("output_tok_s", "{:.1f}")]
    print(_table([c for c, _ in cols], [[("" if row[c] is None else f.format(row[c])) for c, f in cols] for row in rows]))
    return 0


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def _show(args) -> int:
    from workbench import analysis, store

    db = _open(args.db, readonly=True)
    if args.run is not None:
        row = store.run(db, args.run)
        if row is None:
            raise CliError(f"no run {args.run} in the database")
        if args.json:
            print(json.dumps(row, indent=1, default=str))
            return 0
        for key, value in analysis.run_summary(db, row):
            print(f"{key:<22} {value}")
        return 0
    exp = args.experiment or (db.execute("SELECT max(id) FROM experiments").fetchone() or [None])[0]
    if exp is None:
        raise CliError("the database holds no experiments yet")
    table = analysis.speedup_table(db, exp)
    if args.json:
        print(json.dumps(table, indent=1))
        return 0
    header = ["method", "N", "workload", "conc", "status", "MAL", "accept", "tok/s", "speedup", "per-position"]
    print(_table(header, [[r["method"], r["n"], r["workload"], r["concurrency"], r["status"], r["mal"],
                           r["acceptance_rate"], r["output_tok_s"], r["speedup"], r["per_position"]] for r in table]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
