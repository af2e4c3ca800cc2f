"""`draftbench`: the desktop app with no arguments, headless commands otherwise."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
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
    r.add_argument("--adaptive", action="store_true",
                   help="choose N by prediction instead of running every N (as `[sweep] mode = \"adaptive\"`)")
    r.add_argument("--events", help="append the JSON-line events to this file instead of stdout")
    r.add_argument("--log", help="write messages (stderr) to this file")
    r.add_argument("--remote", metavar="HOST", help="run on a remote host over SSH ([user@]host[:port] or a "
                   "saved host), streaming its rows into --db; see `draftbench remote`")
    _remote_options(r)
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

    sub.add_parser("catalog", help="the published draft/target pairs (and the demo pair)")
    nw = sub.add_parser("new", help="write an experiment plan from a catalog pair")
    nw.add_argument("--pair", required=True, help="a pair name from `draftbench catalog`")
    nw.add_argument("--out", help="plan file to write (default: PAIR.toml; never overwrites)")

    pl = sub.add_parser("pull", help="download a model from the Hugging Face Hub into the shared cache (resumes)")
    pl.add_argument("repo", help="owner/name on the Hub")
    pl.add_argument("--revision", help="branch, tag or commit (default main)")
    pl.add_argument("--include", action="append", help="only files matching this pattern (repeatable)")
    pl.add_argument("--dry-run", action="store_true", help="print the files and the size, download nothing")

    md = sub.add_parser("models", help="the models in the Hugging Face cache; search the Hub; delete from the cache")
    md.add_argument("--search", metavar="Q", help="search the Hub instead of listing the cache")
    md.add_argument("--delete", metavar="REPO", help="remove a model from the cache")
    md.add_argument("--json", action="store_true")

    _train_parser(sub)

    eb = sub.add_parser("export-bench", help="write a run as a `vllm bench serve` result JSON file")
    eb.add_argument("run", type=int)
    eb.add_argument("--db", default=None)
    eb.add_argument("--out", required=True)

    rm = sub.add_parser("remote", help="remote hosts over SSH: check one, save one, pull its database")
    rm_sub = rm.add_subparsers(dest="remote_command", required=True)
    rc = rm_sub.add_parser("check", help="reachable? Draftbench and vLLM there? which GPUs?")
    rc.add_argument("host", help="[user@]host[:port] or a saved host's name")
    _remote_options(rc)
    rs = rm_sub.add_parser("save", help="save a host's settings under a name (in the config dir)")
    rs.add_argument("name")
    rs.add_argument("host", help="[user@]host[:port]")
    _remote_options(rs)
    rf = rm_sub.add_parser("follow", help="stream the host's latest sweep into --db again (after a closed laptop)")
    rf.add_argument("host")
    rf.add_argument("--db", default=None, help=f"local results database (default {paths.default_db()})")
    rf.add_argument("--events", help="write its events (all of them, from the start) to this file")
    rf.add_argument("--remote-db", help="the database on the host (default: results.sqlite in its data dir)")
    _remote_options(rf)
    rmd = rm_sub.add_parser("models", help="the host's Hugging Face cache; --download fetches a model into it")
    rmd.add_argument("host")
    rmd.add_argument("--download", metavar="REPO", help="download owner/name on the host (resumes if run again)")
    rmd.add_argument("--revision")
    rmd.add_argument("--include", action="append")
    _remote_options(rmd)
    rp = rm_sub.add_parser("pull", help="copy the host's whole results database here (a consistent copy)")
    rp.add_argument("host")
    rp.add_argument("--out", required=True, help="local file to write (replaced)")
    rp.add_argument("--remote-db", help="the database on the host (default: results.sqlite in its data dir)")
    _remote_options(rp)
    return p


def _remote_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("remote host")
    g.add_argument("--identity", help="private key file (default: ssh's own choice, the agent, ~/.ssh/config)")
    g.add_argument("--python", dest="remote_python", help="the host's Python that has Draftbench (default python3)")
    g.add_argument("--venv", help="a virtualenv on the host with Draftbench and vLLM")
    g.add_argument("--data-dir", dest="remote_data_dir", help="the host's folder for plans, events and the database")
    g.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="environment on the host (repeatable)")
    g.add_argument("--ssh-config", help="an ssh_config file instead of ~/.ssh/config")
    g.add_argument("-o", dest="ssh_options", action="append", default=[], metavar="OPTION",
                   help="an ssh -o option, e.g. ProxyJump=bastion (repeatable)")


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
                "workloads": _workloads, "catalog": _catalog, "new": _new,
                "pull": _pull, "models": _models, "remote": _remote, "train": _train}[args.command](args)
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


def _train_parser(sub) -> None:
    t = sub.add_parser("train", help="train an EAGLE-3 (or DFlash) draft for a target from its own responses (resumes)")
    t.add_argument("--target", required=True, help="model folder or demo:NAME")
    t.add_argument("--out", required=True, help="output folder (a rerun resumes what is there)")
    t.add_argument("--prompts", default=None, help="workload name (builtin, gsm8k, ...), a prompt file, or `self`: "
                   "prompts written by the target itself (keeps the workloads unseen for evaluation)")
    t.add_argument("--num-prompts", type=int, default=48)
    t.add_argument("--max-tokens", type=int, default=128, help="response length the target generates")
    t.add_argument("--seq-length", type=int, default=512)
    t.add_argument("--epochs", type=int, default=3)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--speculator-type", choices=["eagle3", "dflash"], default="eagle3")
    t.add_argument("--draft-vocab-size", type=int, default=4096)
    t.add_argument("--layer-ids", type=int, nargs="+", help="target layers the draft reads (default 2, L/2, L-3)")
    t.add_argument("--max-steps", type=int, help="stop training after this many steps")
    t.add_argument("--name", help="name of the catalog pair to register (default trained-eagle3-FOLDER)")
    t.add_argument("--endpoint", help="use this running vLLM server for the responses instead of starting one")
    t.add_argument("--api-key-env", help="name of the environment variable holding that server's API key")
    t.add_argument("--vllm-python", help="interpreter of the environment that has vLLM")
    t.add_argument("--events", help="append the JSON-line events to this file instead of stdout")
    t.add_argument("--reuse", metavar="FOLDER",
                   help="reuse the prompts, responses and hidden states of another training folder with the "
                        "same data settings (e.g. train a DFlash draft on an EAGLE-3 run's data)")


def _train(args) -> int:
    from workbench import train
    from workbench.sweep import runner

    out = Path(args.out).resolve()
    # Without --prompts, a rerun keeps the folder's source (folders made when `builtin` was the
    # default resume as they were), --reuse takes the source's; a new run writes its own prompts.
    earlier = [train.folder_state(Path(f)).get("config") or {} for f in (out, args.reuse) if f]
    prompts = args.prompts or next((c["prompts"] for c in earlier if c.get("prompts")), train.SELF_PROMPTS)
    cfg = train.TrainConfig(
        target=args.target, out=str(out), prompts=prompts, num_prompts=args.num_prompts,
        max_tokens=args.max_tokens, seq_length=args.seq_length, epochs=args.epochs, lr=args.lr,
        draft_vocab_size=args.draft_vocab_size, speculator_type=args.speculator_type, layer_ids=args.layer_ids,
        max_steps=args.max_steps, name=args.name, reuse=args.reuse)
    api_key = None
    if args.api_key_env:
        # By name, so the key never appears in a process list or a saved command line.
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise CliError(f"the environment variable {args.api_key_env} (the server's API key) is not set")
    if args.events:
        _append(args.events, "events").close()  # an unwritable events file is one line, not a traceback
    emit = runner.file_events(args.events) if args.events else runner.print_event
    pipeline = train.Pipeline(cfg, emit=emit, endpoint=args.endpoint, api_key=api_key,
                              vllm_python=args.vllm_python)

    def stop(signum, frame):
        pipeline.cancel()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        summary = pipeline.run()
    except train.TrainError as exc:
        raise CliError(str(exc)) from None
    except train.Cancelled:
        print(f"draftbench: cancelled; rerun the same command to resume ({cfg.out})", file=sys.stderr)
        return 130
    print(f"draftbench: draft {summary['checkpoint']} registered as pair {summary['pair']}; "
          f"evaluate it against the baseline with: draftbench run {summary['plan']}", file=sys.stderr)
    return 0


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
    from workbench.usecases import doctor

    rows = doctor.report()
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0


def _demo_model(args) -> int:
    from workbench.checkpoints import demo

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
    if args.remote:
        return _run_remote(args)
    from workbench import launch, plan, store
    from workbench.checkpoints import demo
    from workbench.host import engine
    from workbench.sweep import runner

    try:
        p = plan.load(args.plan)
        profile = p.runs[0].server.profile if p.runs else None
        # The interpreter: --vllm-python, else the plan's profile, else the default.
        vllm = engine.probe(args.vllm_python or (profile.python if profile else None))
        # A dry run shows every launch, including methods whose package the vLLM environment
        # lacks; a docker or attached server's packages cannot be asked from here.
        local = profile is None or profile.kind == "local"
        if not args.dry_run and local:
            p = plan.load(args.plan, available_modules=engine.optional_modules(vllm))
    except plan.PlanError as exc:
        raise CliError(str(exc)) from None
    if args.adaptive:
        p.mode = "adaptive"
    from workbench.plan import sanity

    existing = None
    db_path = Path(args.db or paths.default_db())
    if db_path.exists():
        try:
            existing = store.open_db(db_path, readonly=True)
        except store.StoreError as exc:
            raise CliError(str(exc)) from None
    for warning in sanity.for_plan(p, existing):
        print(f"draftbench: warning: {warning}", file=sys.stderr)
    _preflight(p, vllm)
    if args.dry_run:
        from workbench.host import gpus

        host_platform = gpus.detect()[0]
        if p.mode == "adaptive":
            from workbench.sweep import adaptive
            from workbench.analysis import recommend

            print("adaptive: the baseline and these N first; other N only where predicted best:")
            for c in adaptive.contexts(p):
                print(f"    {c.label}: N = {', '.join(map(str, recommend.probes(c.ns)))} of {', '.join(map(str, c.ns))}")
        for server, runs in p.servers():
            print(launch.prepare(server, vllm, 0, host_platform).command.replace("--port 0", "--port PORT")
                  .replace("127.0.0.1:0:0", "127.0.0.1:PORT:PORT"))
            for r in runs:
                print(f"    {r.label}")
        return 0
    if local and not vllm.found:
        raise CliError(f"no vLLM in {vllm.python}: install Draftbench with the `cpu` or `gpu` extra, "
                       "or pass --vllm-python PATH")
    from workbench.load import workloads

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
    if p.mode == "adaptive":
        from workbench.sweep.adaptive import AdaptiveRunner as runner_class
    else:
        runner_class = runner.Runner
    try:
        r = runner_class(p, str(Path(args.db or paths.default_db())), vllm, emit=emit, events_path=args.events,
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


def _remote_host(args, spec: str):
    from workbench import remote

    kw = {}
    if args.identity:
        kw["identity_file"] = args.identity
    if args.remote_python:
        kw["python"] = args.remote_python
    if args.venv:
        kw["venv"] = args.venv
    if args.remote_data_dir:
        kw["data_dir"] = args.remote_data_dir
    if args.ssh_config:
        kw["config_file"] = args.ssh_config
    if args.ssh_options:
        kw["options"] = list(args.ssh_options)
    env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"--env {item!r}: write KEY=VALUE")
        env[key] = value
    if env:
        kw["env"] = env
    try:
        return remote.RemoteHost.parse(spec, **kw)
    except remote.RemoteError as exc:
        raise CliError(str(exc)) from None


def _remote(args) -> int:
    from workbench import remote, store

    host = _remote_host(args, args.host)
    try:
        if args.remote_command == "save":
            print(remote.save(args.name, host))
            return 0
        if args.remote_command == "pull":
            out = remote.pull(host, args.remote_db or remote.remote_db(host), args.out)
            print(f"{host.label}: database copied to {out}")
            return 0
        if args.remote_command == "models":
            return _remote_models(args, host)
        if args.remote_command == "follow":
            return _follow_remote(args, host, remote.latest(host, args.remote_db))
        info = remote.check(host)
    except remote.RemoteError as exc:
        raise CliError(str(exc)) from None
    except store.StoreError as exc:
        raise CliError(str(exc)) from None
    gpus = ", ".join(f"{g['index']}: {g['name']}" for g in info["gpus"]) or "none visible"
    print(f"{host.label}: reachable ({info['seconds']:.1f} s), Draftbench {info['version']} in {info['python']}")
    print(f"gpus: {info['accelerator']}: {gpus}")
    print(f"data dir: {info['data_dir']}" + ("" if info["data_dir_exists"] else " (created on the first run)"))
    print("doctor on the host:")
    width = max(len(k) for k, _ in info["doctor"])
    for key, value in info["doctor"]:
        print(f"  {key:<{width}}  {value}")
    return 0


def _remote_models(args, host) -> int:
    """The host's `draftbench models`, or its `draftbench pull` (the download runs there, into
    the host's cache; its progress lines come through as they are printed)."""
    from workbench import remote

    if not args.download:
        print(host.call([host.remote_python, "-m", "workbench.cli", "models"], timeout=120).stdout, end="")
        return 0
    argv = [host.remote_python, "-m", "workbench.cli", "pull", args.download]
    if args.revision:
        argv += ["--revision", args.revision]
    for pattern in args.include or []:
        argv += ["--include", pattern]
    try:
        proc = subprocess.Popen(host.ssh_argv(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    except FileNotFoundError:
        raise CliError("no `ssh` client on this machine: install OpenSSH (openssh-client)") from None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if line.startswith("["):  # a progress line of the host's download
            print(f"{host.label}: {line.rstrip()}", file=sys.stderr, flush=True)
    out = proc.stdout.read().strip()
    code = proc.wait()
    if code == 2 and lines and lines[-1].startswith("draftbench: "):
        raise CliError(f"{host.label}: {lines[-1].strip()[len('draftbench: '):]}")
    if code != 0:
        raise remote.RemoteError(host.explain(code, "".join(lines)))
    print(f"{host.label}: {out}")
    return 0


def _run_remote(args) -> int:
    """The plan goes to the host, its runner starts there detached, and its events and rows come
    back: events to --events (or stdout) as a local run writes them, rows into --db."""
    from workbench import remote, store

    host = _remote_host(args, args.remote)
    try:
        text = Path(args.plan).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read the plan {args.plan}: {exc.strerror}") from None
    try:
        store.open_db(args.db or paths.default_db()).conn.close()  # usable, before anything starts there
    except store.StoreError as exc:
        raise CliError(str(exc)) from None
    extra = ["--vllm-python", args.vllm_python] if args.vllm_python else []
    try:
        remote.check(host)
        launched = remote.launch(host, text, extra)
    except remote.RemoteError as exc:
        raise CliError(str(exc)) from None
    print(f"remote: started on {host.label} (pid {launched.pid}); its database: {launched.db}", file=sys.stderr)
    return _follow_remote(args, host, launched)


def _follow_remote(args, host, launched) -> int:
    # Progress lines start with "remote:", not "draftbench:", which the app shows as a warning.
    import threading

    from workbench import remote, store

    try:
        local = store.open_db(args.db or paths.default_db())
    except store.StoreError as exc:
        raise CliError(str(exc)) from None
    out = _append(args.events, "events") if args.events else sys.stdout
    stream = remote.Stream(host, launched, local, out,
                           on_status=lambda s: print(f"remote: {s}", file=sys.stderr))

    def stop_there(signum, frame):
        # SIGTERM (the app's Stop) stops the sweep on the host; its end still streams back here.
        # Ctrl+C only stops following.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        threading.Thread(target=_stop_remote, args=(host, launched), daemon=True).start()

    signal.signal(signal.SIGTERM, stop_there)
    try:
        stream.run()
    except remote.RemoteError as exc:
        raise CliError(f"{exc} (the run goes on there; `draftbench remote pull` fetches its results)") from None
    except KeyboardInterrupt:
        stream.stop()
        print(f"draftbench: stopped following; the run goes on on {host.label} (pid {launched.pid})", file=sys.stderr)
        return 130
    print(f"remote: {stream.lag_summary()}", file=sys.stderr)
    failed = local.execute("SELECT count(*) FROM runs WHERE experiment_id IN (SELECT experiment_id FROM sweeps "
                           "WHERE pid = ? AND events_path = ?) AND status = 'failed'",
                           [launched.pid, launched.events]).fetchone()[0]
    return 0 if failed == 0 else 1


def _stop_remote(host, launched) -> None:
    from workbench import remote

    try:
        remote.stop(host, launched)
        print(f"remote: asked {host.label} to stop the sweep", file=sys.stderr)
    except remote.RemoteError as exc:
        print(f"draftbench: could not stop the sweep: {exc}", file=sys.stderr)


def _preflight(p, vllm) -> None:
    """Draft/target compatibility and memory before any server starts: an incompatible pair stops
    the run; warnings are shown and the run goes on."""
    from workbench import launch
    from workbench.checkpoints import compat, memory

    shown: set[str] = set()
    for label, verdict in compat.for_plan(p):
        if verdict.level == compat.ERROR:
            raise CliError(f"{label}: {verdict.message}")
        if verdict.level == compat.WARNING and verdict.message not in shown:
            shown.add(verdict.message)
            print(f"draftbench: warning: {label}: {verdict.message}", file=sys.stderr)
    if vllm.build in ("cpu", "cuda", "rocm"):
        for label, warning in memory.for_plan(p, vllm, lambda server: launch.prepare(server, vllm, 0).env):
            if warning not in shown:
                shown.add(warning)
                print(f"draftbench: warning: {label}: {warning}", file=sys.stderr)


def _workloads(args) -> int:
    from workbench.load import datasets, workloads

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


def _catalog(args) -> int:
    from workbench.plan import catalog

    try:
        pairs = catalog.load()
    except catalog.CatalogError as exc:
        raise CliError(str(exc)) from None
    rows = [[p.name, p.method, p.draft, p.target, ",".join(map(str, p.n)),
             "yes" if p.gated else "no", p.publisher] for p in pairs]
    print(_table(["pair", "method", "draft", "target", "N", "gated", "publisher"], rows))
    return 0


def _new(args) -> int:
    from workbench.plan import catalog

    try:
        pair = catalog.get(args.pair)
        text = catalog.plan_text(pair)
    except catalog.CatalogError as exc:
        raise CliError(str(exc)) from None
    out = Path(args.out or f"{pair.name}.toml")
    if out.exists():
        raise CliError(f"{out} already exists; choose another --out")
    try:
        out.write_text(text)
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror}") from None
    print(out)
    if pair.gated:
        print(f"draftbench: note: {pair.name} needs a Hugging Face token whose account accepted the licence "
              f"of {pair.target if pair.target_gated else pair.draft}", file=sys.stderr)
    return 0


def _pull(args) -> int:
    import time

    from workbench.checkpoints import hub

    try:
        info = hub.remote(args.repo, args.revision) if not hub.offline() else None
        if args.dry_run:
            if info is None:
                raise CliError("a dry run asks the Hub for sizes, and offline mode is on (HF_HUB_OFFLINE=1)")
            for f in info.files:
                print(f"{hub.human(f.size):>10}  {f.path}")
            print(f"{hub.human(info.size):>10}  in all ({info.repo} @ {info.sha[:12]})")
            return 0
        if info is not None:
            print(f"draftbench: {info.repo}: {hub.human(info.size)} in {len(info.files)} files", file=sys.stderr)
        last = [0.0]

        def progress(done: int, total: int, name: str) -> None:
            now = time.monotonic()
            if now - last[0] >= 0.5 or done >= total:
                last[0] = now
                pct = 100.0 * done / total if total else 100.0
                print(f"[{pct:5.1f}%] {hub.human(done)} / {hub.human(total)}  {name}", file=sys.stderr, flush=True)

        folder = hub.Download(args.repo, args.revision, args.include, progress).run()
    except hub.HubError as exc:
        raise CliError(str(exc)) from None
    print(folder)
    return 0


def _models(args) -> int:
    from workbench.checkpoints import hub

    try:
        if args.delete:
            freed = hub.delete(args.delete)
            print(f"removed {args.delete} from {hub.cache_dir()} ({hub.human(freed)} freed)")
            return 0
        if args.search is not None:
            hits = hub.search(args.search)
            if args.json:
                print(json.dumps([h.__dict__ for h in hits], indent=1))
                return 0
            print(_table(["repo", "downloads", "likes", "gated", "task"],
                         [[h.repo, str(h.downloads or 0), str(h.likes or 0), "yes" if h.gated else "no",
                           h.pipeline or ""] for h in hits]))
            return 0
        rows = hub.cached()
    except hub.HubError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print(json.dumps([{"repo": r.repo, "size": r.size, "files": r.files, "revisions": list(r.revisions),
                           "refs": list(r.refs), "partial": r.partial, "path": str(r.path)} for r in rows], indent=1))
        return 0
    token = "present" if hub.token_present() else "not set"
    print(f"cache: {hub.cache_dir()}   token: {token}   offline: {'yes' if hub.offline() else 'no'}")
    print(_table(["repo", "size", "files", "refs", "partial download"],
                 [[r.repo, hub.human(r.size), str(r.files), ",".join(r.refs),
                   hub.human(r.partial) if r.partial else ""] for r in rows]))
    return 0


def _import_bench(args) -> int:
    from workbench import methods
    from workbench.report import benchjson

    db = _open(args.db)
    try:
        run_id = benchjson.import_file(db, args.file, args.method, args.n, args.draft, args.target, args.workload)
    except (benchjson.BenchJsonError, methods.MethodError) as exc:
        raise CliError(str(exc)) from None
    print(f"imported as run {run_id}")
    return 0


def _export_bench(args) -> int:
    from workbench import store
    from workbench.report import benchjson

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
            print(f"{key:<34} {value}")
        return 0
    exp = args.experiment or (db.execute("SELECT max(id) FROM experiments").fetchone() or [None])[0]
    if exp is None:
        raise CliError("the database holds no experiments yet")
    table = analysis.speedup_table(db, exp)
    if args.json:
        print(json.dumps(table, indent=1))
        return 0
    header = ["method", "N", "workload", "conc", "status", "MAL", "accept", "tok/s", "speedup", "per-position"]
    keys = ["method", "n", "workload", "concurrency", "status", "mal", "acceptance_rate", "output_tok_s",
            "speedup", "per_position"]
    if any(r["joules_per_token"] for r in table):  # only where GPU power was measured
        header[-1:-1], keys[-1:-1] = ["J/tok", "GPU %"], ["joules_per_token", "gpu_util_mean"]
    print(_table(header, [[r[k] for k in keys] for r in table]))
    if "recommendations" in db.table_names():
        lines = [row[0] for row in db.execute("SELECT summary FROM recommendations WHERE experiment_id = ? ORDER BY id",
                                              [exp])]
        if lines:
            print("\nadaptive sweep (docs/recommend-n.md):")
            for line in lines:
                print(f"  {line}")
    return 0

