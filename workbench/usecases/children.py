"""The `draftbench` child processes the desktop app starts (a sweep's runner, a training run):
their command lines, built here and nowhere else, and the process calls that start, ask and stop
them in a session of their own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from workbench.host import process
from workbench.sweep import app_cpu

# The options of `draftbench train`, by the name its parser gives each (workbench.cli.train): a
# keyword becomes `--` and its name with dashes. The usecases sit below the CLI and cannot ask its
# parser, so tests/test_train_form.py checks that this tuple and the parser's options are the same.
TRAIN_OPTIONS = (
    "target", "out", "prompts", "num_prompts", "max_tokens", "seq_length", "epochs", "lr", "speculator_type",
    "draft_vocab_size", "layer_ids", "max_steps", "name", "endpoint", "api_key_env", "vllm_python", "events",
    "reuse",
)


def program(*args: str, debug: bool = False) -> tuple[str, list[str]]:
    """The program and arguments of `draftbench ARGS` as a child process of the app; `debug`:
    started with --debug, so a child that fails keeps its traceback in a file."""
    # In the desktop bundle the executable is `draftbench` itself; otherwise it is Python, and the
    # `draftbench` command is the `app` package's entry.
    prefix = [] if getattr(sys, "frozen", False) else ["-m", "app"]
    # --debug before the verb, where the command line takes it.
    return sys.executable, [*prefix, *(["--debug"] if debug else []), *args]


def runner_args(plan_path: str, db_path: str, events_path: str, log_path: str,
                remote: str | None = None, ray: str | None = None, again: bool = False,
                add_repeats: int = 0) -> list[str]:
    """The `draftbench` arguments of a sweep's runner."""
    # On a remote host the local process streams the host's events and rows here; Stop (SIGTERM)
    # stops the sweep there. On a Ray cluster this process is the driver, writing the database here.
    where = ["--remote", remote] if remote else ["--ray", ray] if ray else []
    # --again: a new experiment of a plan whose runs are all complete; --add-repeats: more repeats
    # in its latest experiment instead (app/rerun.py).
    again_arg = ["--again"] if again else ["--add-repeats", str(add_repeats)] if add_repeats else []
    return ["run", plan_path, "--db", db_path, "--events", events_path, "--log", log_path, "--own-group", *where,
            *again_arg]


def runner_env() -> dict[str, str]:
    """The environment that names the app to the runner it starts: the runner reads this process's
    CPU over every measurement window (workbench.sweep.app_cpu)."""
    return {app_cpu.APP_PID_ENV: str(os.getpid())}


def train_args(**options: Any) -> list[str]:
    """`train` with these options, as a child process's arguments: each keyword is named as the
    parser names the option (num_prompts=4 gives --num-prompts 4; a list gives its items; None
    leaves it out). A keyword the parser lacks raises ValueError, so the form cannot drift from it."""
    argv = ["train"]
    for name, value in options.items():
        if name not in TRAIN_OPTIONS:
            raise ValueError(f"`draftbench train` has no option for {name!r}")
        if value is None:
            continue
        argv += ["--" + name.replace("_", "-"), *map(str, value if isinstance(value, (list, tuple)) else [value])]
    return argv


def start(argv: list[str], **popen: Any) -> subprocess.Popen[Any]:
    """A child process in a session of its own (workbench.host.process): closing the app can leave
    it running, and a terminal's Ctrl+C does not reach it."""
    return process.start(argv, **popen)


def alive(pid: int) -> bool:
    """Whether a child an earlier run of the app started still runs."""
    return process.alive(pid)


def stop(pid: int) -> bool:
    """SIGTERM to a child: it stops what it runs, keeps what is finished, and exits."""
    return process.send(pid, signal.SIGTERM)
