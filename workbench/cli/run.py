"""`draftbench run`: run an experiment plan (resumes: completed runs are skipped), here or on a remote host."""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

from workbench import events, paths
from workbench.cli import remote
from workbench.cli.common import CliError, Verbs, append

if TYPE_CHECKING:  # the sweep loads only when a plan runs, so `--help` stays fast
    from workbench.host.slots import Slot
    from workbench.usecases.sweeps import Loaded


def register(sub: Verbs) -> None:
    r = sub.add_parser("run", help="run an experiment plan (resumes: completed runs are skipped)")
    r.add_argument("plan", help="plan file (TOML)")
    r.add_argument("--db", default=None, help=f"results database (default {paths.default_db()})")
    r.add_argument("--vllm-python", help="interpreter of the environment that has vLLM")
    r.add_argument("--dry-run", action="store_true", help="print the vLLM commands and runs, start nothing")
    rerun = r.add_mutually_exclusive_group()
    rerun.add_argument("--again", action="store_true",
                       help="run the plan again as a new experiment, its completed runs included (without it a run "
                            "resumes the plan's latest experiment, skipping what completed)")
    rerun.add_argument("--add-repeats", metavar="K", type=_repeats_to_add,
                       help="add K (1-100) more repeats of every configuration to the plan's latest experiment, "
                            "numbered after its highest repeat, and run only those")
    r.add_argument("--adaptive", action="store_true",
                   help="choose N by prediction instead of running every N (as `[sweep] mode = \"adaptive\"`)")
    r.add_argument("--events", help="append the JSON-line events to this file instead of stdout")
    r.add_argument("--log", help="write messages (stderr) to this file")
    r.add_argument("--remote", metavar="HOST", help="run on a remote host over SSH ([user@]host[:port] or a "
                   "saved host), streaming its rows into --db; see `draftbench remote`")
    r.add_argument("--gpus", metavar="LIST",
                   help="GPUs the sweep may use, e.g. 0-7 or 0,1,4: one server per tensor_parallel_size of them "
                        "runs at once (on vLLM's CPU build the numbers are logical slots)")
    r.add_argument("--parallel", metavar="N|auto", help="servers at once (overrides the plan's [sweep] parallel)")
    r.add_argument("--ray", metavar="auto|ADDRESS",
                   help="run the server configurations as tasks on a Ray cluster (pip install 'draftbench[cluster]'); "
                        "`auto` finds a running one (ray start --head), ADDRESS is host:port of its head")
    remote.remote_options(r)
    r.add_argument("--own-group", action="store_true",
                   help="run in a new session, so closing the terminal or app that started it does not stop it")
    r.set_defaults(handler=run)


def _repeats_to_add(text: str) -> int:
    # Checked while parsing, so a wrong K is refused in one line before a plan is read or a host reached.
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench.usecases import attempts

    try:
        return attempts.check_count(int(text))
    except (ValueError, attempts.AddRepeatsError):
        raise argparse.ArgumentTypeError(
            f"K must be a whole number from 1 to {attempts.MAX_ADDED}, not {text!r}") from None


def run(args: argparse.Namespace) -> int:
    if args.log:
        log = append(args.log, "log")
        os.dup2(log.fileno(), sys.stderr.fileno())
    if args.events:
        append(args.events, "events").close()
    if args.ray and (args.remote or args.gpus):
        raise CliError("--ray places the servers on the cluster's GPUs: leave out --remote and --gpus")
    if args.remote:
        return remote.run_remote(args)
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench.usecases import attempts, findings, sweeps

    try:
        # Repeats are added to the experiment of the plan as a real run reads it (methods whose package
        # is missing left out), or the dry run would look for an experiment by another plan hash.
        loaded = sweeps.load_plan(args.plan, args.vllm_python, args.adaptive,
                                  check_packages=not args.dry_run or bool(args.add_repeats))
        slots = sweeps.slots_for(loaded, args.gpus, args.parallel, cluster=bool(args.ray))
        cluster = sweeps.connect_cluster(args.ray) if args.ray and not args.dry_run else None
        existing = sweeps.open_existing(args.db)
    except sweeps.RunError as exc:
        raise CliError(str(exc)) from None
    latest = attempts.latest(loaded.plan, existing)
    header = None
    if args.add_repeats:
        try:  # before the warnings: a plan never run here is refused in its one line alone
            added = attempts.add_repeats(loaded.plan, latest, existing, args.add_repeats)
        except attempts.AddRepeatsError as exc:
            raise CliError(str(exc)) from None
        header = attempts.added_line(added, latest.experiment, args.add_repeats)
    found = findings.preflight(loaded.plan, loaded.vllm, existing, servings=loaded.servings)
    refused = findings.errors(found)
    if refused:
        raise CliError(str(refused[0]))  # one line, and nothing launched
    for finding in found:
        print(f"draftbench: warning: {finding}", file=sys.stderr)
    if args.add_repeats:
        loaded = dataclasses.replace(loaded, plan=added)
    elif latest.finished and not args.again:
        # Resuming a finished plan runs nothing: said, with the way to run it again, not left silent.
        print(f"draftbench: {attempts.finished_line(loaded.plan, latest, args.db or paths.default_db(), args.plan)}",
              file=sys.stderr)
        return 0
    else:
        loaded = dataclasses.replace(loaded, plan=attempts.choose(loaded.plan, latest, args.again))
        if args.again and loaded.plan.attempt > 1:
            header = (f"again: a new experiment of plan {loaded.plan.name!r} (attempt {loaded.plan.attempt}), "
                      "every run from the start")
    if args.dry_run:
        return _dry_run(loaded, slots, header)
    if args.add_repeats:
        print(header, file=sys.stderr)  # not prefixed `draftbench:`, which the app reads as an error
    if args.own_group:
        try:
            os.setsid()
        except OSError:
            pass  # already a session leader
    emit = _with_adaptive_lines(events.Writer.append_to(args.events) if args.events else events.Writer())

    def stop(signum: int, frame: FrameType | None) -> NoReturn:
        raise KeyboardInterrupt

    try:
        summary = sweeps.run_plan(loaded.plan, loaded.vllm, args.db, emit, local=loaded.local,
                                  events_path=args.events, on_start=lambda: signal.signal(signal.SIGTERM, stop),
                                  slots=slots, cluster=cluster, servings=loaded.servings)
    except sweeps.RunError as exc:
        raise CliError(str(exc)) from None
    if summary is None:
        return 130
    return 0 if summary["failed"] == 0 else 1


def _with_adaptive_lines(write: events.Emit) -> events.Emit:
    """Every event goes to `write`; an adaptive sweep's decisions, a run's acceptance alarms and
    runs held back for want of a baseline are also said in words on stderr, where a person running
    the sweep looks (prefixed `adaptive:`, `alarm:` and `baseline:`, not `draftbench:`, which the
    app reads as an error)."""

    def emit(event: events.Event) -> None:
        write(event)
        if isinstance(event, events.AdaptiveStarted):
            for label, ns in event.probes.items():
                print(f"adaptive: {label}: measuring N = {', '.join(map(str, ns))} first", file=sys.stderr)
        elif isinstance(event, events.Prediction):
            print(f"adaptive: {event.summary()}", file=sys.stderr)
        elif isinstance(event, events.Recommendation):
            print(f"adaptive: {event.message}", file=sys.stderr)
        elif isinstance(event, events.Alarm):
            print(f"alarm: run {event.run}: {event.message}", file=sys.stderr)
        elif isinstance(event, events.SweepFinished) and event.note:
            print(f"baseline: {event.note}", file=sys.stderr)

    return emit


def _dry_run(loaded: Loaded, slots: list[Slot], header: str | None) -> int:
    # Deferred (every verb): loaded only when this verb runs, so `--help` stays fast.
    from workbench.analysis import recommend
    from workbench.sweep import adaptive
    from workbench.usecases import commands

    p = loaded.plan
    if header:  # a new attempt (--again), or the runs --add-repeats adds
        print(header)
    if p.mode == "adaptive":
        print("adaptive: the baseline and these N first; other N only where predicted best:")
        for c in adaptive.contexts(p):
            print(f"    {c.label}: N = {', '.join(map(str, recommend.probes(c.ns)))} of {', '.join(map(str, c.ns))}")
    if len(slots) > 1 or slots[0].gpus is not None:
        print(f"parallel: {len(slots)} server(s) at once, on " + "; ".join(s.label for s in slots))
    for line in commands.preview_lines(commands.preview(p, loaded.vllm, servings=loaded.servings)):
        print(line)
    return 0
