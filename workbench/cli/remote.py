"""`draftbench remote` and `run --remote`: hosts over SSH; check one, save one, follow its sweep, pull its database."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from workbench import paths
from workbench.cli.common import CliError, Verbs, append

if TYPE_CHECKING:  # the remote package loads only when a verb runs, so `--help` stays fast
    from workbench.remote import Launched, RemoteHost


def register(sub: Verbs) -> None:
    rm = sub.add_parser("remote", help="remote hosts over SSH: check one, save one, pull its database")
    rm_sub = rm.add_subparsers(dest="remote_command", required=True)
    rc = rm_sub.add_parser("check", help="reachable? Draftbench and vLLM there? which GPUs?")
    rc.add_argument("host", help="[user@]host[:port] or a saved host's name")
    remote_options(rc)
    rs = rm_sub.add_parser("save", help="save a host's settings under a name (in the config dir)")
    rs.add_argument("name")
    rs.add_argument("host", help="[user@]host[:port]")
    remote_options(rs)
    rf = rm_sub.add_parser("follow", help="stream the host's latest sweep into --db again (after a closed laptop)")
    rf.add_argument("host")
    rf.add_argument("--db", default=None, help=f"local results database (default {paths.default_db()})")
    rf.add_argument("--events", help="write its events (all of them, from the start) to this file")
    rf.add_argument("--remote-db", help="the database on the host (default: results.sqlite in its data dir)")
    remote_options(rf)
    rmd = rm_sub.add_parser("models", help="the host's Hugging Face cache; --download fetches a model into it")
    rmd.add_argument("host")
    rmd.add_argument("--download", metavar="REPO", help="download owner/name on the host (resumes if run again)")
    rmd.add_argument("--revision")
    rmd.add_argument("--include", action="append")
    remote_options(rmd)
    rp = rm_sub.add_parser("pull", help="copy the host's whole results database here (a consistent copy)")
    rp.add_argument("host")
    rp.add_argument("--out", required=True, help="local file to write (replaced)")
    rp.add_argument("--remote-db", help="the database on the host (default: results.sqlite in its data dir)")
    remote_options(rp)
    rm.set_defaults(handler=remote_verb)


def remote_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("remote host")
    g.add_argument("--identity", help="private key file (default: ssh's own choice, the agent, ~/.ssh/config)")
    g.add_argument("--python", dest="remote_python", help="the host's Python that has Draftbench (default python3)")
    g.add_argument("--venv", help="a virtualenv on the host with Draftbench and vLLM")
    g.add_argument("--data-dir", dest="remote_data_dir", help="the host's folder for plans, events and the database")
    g.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="environment on the host (repeatable)")
    g.add_argument("--ssh-config", help="an ssh_config file instead of ~/.ssh/config")
    g.add_argument("-o", dest="ssh_options", action="append", default=[], metavar="OPTION",
                   help="an ssh -o option, e.g. ProxyJump=bastion (repeatable)")


def remote_host(args: argparse.Namespace, spec: str) -> RemoteHost:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
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


def remote_verb(args: argparse.Namespace) -> int:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench import remote, store

    host = remote_host(args, args.host)
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
            return follow(args, host, remote.latest(host, args.remote_db))
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


def _remote_models(args: argparse.Namespace, host: RemoteHost) -> int:
    """The host's `draftbench models`, or its `draftbench pull` (the download runs there, into
    the host's cache; its progress lines come through as they are printed)."""
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
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
    assert proc.stdout and proc.stderr  # both piped
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


def run_remote(args: argparse.Namespace) -> int:
    """The plan goes to the host, its runner starts there detached, and its events and rows come
    back: events to --events (or stdout) as a local run writes them, rows into --db. A dry run
    runs there in the foreground instead, its lines brought back, and starts nothing."""
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench import remote, store

    host = remote_host(args, args.remote)
    try:
        text = Path(args.plan).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read the plan {args.plan}: {exc.strerror}") from None
    extra = ["--vllm-python", args.vllm_python] if args.vllm_python else []
    # The host's runner cuts its own GPUs into slots; its database says what a run again or added
    # repeats build on, so those flags go there as they are.
    for flag, value in (("--gpus", getattr(args, "gpus", None)), ("--parallel", getattr(args, "parallel", None)),
                        ("--add-repeats", getattr(args, "add_repeats", None))):
        if value is not None:
            extra += [flag, str(value)]
    for flag, on in (("--again", getattr(args, "again", False)), ("--adaptive", getattr(args, "adaptive", False))):
        if on:
            extra.append(flag)
    if args.dry_run:
        return _dry_run_there(host, text, extra)
    try:
        store.close(store.open_db(args.db or paths.default_db()))  # usable, before anything starts there
    except store.StoreError as exc:
        raise CliError(str(exc)) from None
    try:
        remote.check(host)
        if args.add_repeats:
            # The detached runner's refusal would only reach its log there: asked first, in the
            # foreground, so a plan with nothing to add repeats to is refused here in its one line.
            remote.dry_run(host, text, extra)
        launched = remote.launch(host, text, extra)
    except remote.RemoteError as exc:
        raise CliError(str(exc)) from None
    print(f"remote: started on {host.label} (pid {launched.pid}); its database: {launched.db}", file=sys.stderr)
    return follow(args, host, launched)


def _dry_run_there(host: RemoteHost, text: str, extra: list[str]) -> int:
    """The host's dry run: the vLLM commands and runs it would start there, printed here."""
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench import remote

    try:
        remote.check(host)
        there = remote.dry_run(host, text, extra)
    except remote.RemoteError as exc:
        raise CliError(str(exc)) from None
    print(there.stdout, end="")
    for line in there.stderr.splitlines():  # its warnings, or that a finished plan has nothing to run
        print(f"{host.label}: {line}", file=sys.stderr)
    return 0


def follow(args: argparse.Namespace, host: RemoteHost, launched: Launched) -> int:
    # Progress lines start with "remote:", not "draftbench:", which the app shows as a warning.
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench import remote, store

    try:
        local = store.open_db(args.db or paths.default_db())
    except store.StoreError as exc:
        raise CliError(str(exc)) from None
    out = append(args.events, "events") if args.events else sys.stdout
    stream = remote.Stream(host, launched, local, out,
                           on_status=lambda s: print(f"remote: {s}", file=sys.stderr))

    def stop_there(signum: int, frame: FrameType | None) -> None:
        # SIGTERM (the app's Stop) stops the sweep on the host; its end still streams back here.
        # Ctrl+C only stops following.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        threading.Thread(target=_stop, args=(host, launched), daemon=True).start()

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
    if stream.error:  # the host's sweep stopped on an error: said here as a local one is
        raise CliError(f"{host.label}: {stream.error}")
    failed = store.failed_runs_of_sweep(local, launched.pid, launched.events)
    return 0 if failed == 0 else 1


def _stop(host: RemoteHost, launched: Launched) -> None:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench import remote

    try:
        remote.stop(host, launched)
        print(f"remote: asked {host.label} to stop the sweep", file=sys.stderr)
    except remote.RemoteError as exc:
        print(f"draftbench: could not stop the sweep: {exc}", file=sys.stderr)
