"""`draftbench --debug`: on any error the full traceback is kept in a file under the data
directory's logs folder and the one line on stderr names it; without it the line stands alone,
and an unexpected error (a bug) says so in one line with a hint to rerun with --debug. The desktop
app started with --debug starts its `draftbench` children (a sweep's runner, a training run) with
it too."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from workbench import cli, store

ROOT = Path(__file__).resolve().parent.parent
KEPT = re.compile(r" \(traceback in (.+\.log)\)$")


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DRAFTBENCH_DATA_DIR": str(tmp_path / "data")}
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120)


def _logs(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "data" / "logs"
    return sorted(folder.iterdir()) if folder.exists() else []


def test_a_known_error_is_one_line_with_or_without_debug(tmp_path):
    db = tmp_path / "r.sqlite"
    store.open_db(db)

    plain = _run(tmp_path, "show", "7", "--db", str(db))
    assert plain.returncode == 2 and plain.stdout == ""
    assert plain.stderr.splitlines() == ["draftbench: no run 7 in the database"]
    assert _logs(tmp_path) == []

    debug = _run(tmp_path, "--debug", "show", "7", "--db", str(db))
    assert debug.returncode == 2 and debug.stdout == ""
    [line] = debug.stderr.splitlines()
    assert line.startswith("draftbench: no run 7 in the database (traceback in ")
    kept = Path(KEPT.search(line).group(1))
    assert _logs(tmp_path) == [kept] and kept.parent == tmp_path / "data" / "logs"
    text = kept.read_text()
    assert f"command: draftbench --debug show 7 --db {db}" in text
    assert "Traceback (most recent call last):" in text
    assert 'workbench/cli/runs.py", line' in text  # where the error was raised
    assert text.rstrip().endswith("workbench.cli.common.CliError: no run 7 in the database")


def _boom(db, smoke_test, debug):
    raise RuntimeError("the window fell\nover")


def test_an_unexpected_error_is_one_line_and_a_hint(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DRAFTBENCH_DATA_DIR", str(tmp_path / "data"))

    assert cli.main([], gui=_boom) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == ["draftbench: unexpected error, RuntimeError: the window fell over "
                                "(rerun as `draftbench --debug ...` to keep the traceback in a file)"]
    assert _logs(tmp_path) == []

    assert cli.main(["--debug"], gui=_boom) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("draftbench: unexpected error, RuntimeError: the window fell over (traceback in ")
    kept = Path(KEPT.search(line).group(1))
    text = kept.read_text()
    assert "Traceback (most recent call last):" in text and "in _boom" in text
    assert text.rstrip().endswith("RuntimeError: the window fell\nover")


def test_a_hidden_cause_is_kept_too(tmp_path, monkeypatch, capsys):
    """An error raised `from None` (one line for the user) still shows its cause in the file."""
    monkeypatch.setenv("DRAFTBENCH_DATA_DIR", str(tmp_path / "data"))

    def gui(db, smoke_test, debug):
        try:
            {}["missing"]
        except KeyError:
            raise cli.CliError("no such thing") from None

    assert cli.main(["--debug"], gui=gui) == 2
    [line] = capsys.readouterr().err.splitlines()
    text = Path(KEPT.search(line).group(1)).read_text()
    assert text.index("KeyError: 'missing'") < text.index("CliError: no such thing")


def test_a_logs_folder_that_cannot_be_written_is_said_in_the_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "data").write_text("a file where the data directory should be")
    monkeypatch.setenv("DRAFTBENCH_DATA_DIR", str(tmp_path / "data"))

    assert cli.main(["--debug"], gui=_boom) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("draftbench: unexpected error, RuntimeError: the window fell over "
                           f"(the traceback could not be written under {tmp_path / 'data' / 'logs'}: ")


def test_an_interrupt_is_still_one_line(tmp_path, monkeypatch, capsys):
    def gui(db, smoke_test, debug):
        raise KeyboardInterrupt

    assert cli.main([], gui=gui) == 130
    assert capsys.readouterr().err == "draftbench: interrupted\n"


def test_any_draftbench_error_is_one_line(monkeypatch, capsys):
    from workbench.plan.fields import PlanError

    def gui(db, smoke_test, debug):
        raise PlanError("target.model is missing")

    assert cli.main([], gui=gui) == 2
    assert capsys.readouterr().err == "draftbench: target.model is missing\n"


def test_the_app_started_with_debug_starts_its_children_with_it(monkeypatch):
    from app import entry
    from app.jobs import child
    from workbench.usecases import children

    monkeypatch.setattr(child, "debug", False)  # the app's mode lasts its process: put back after the test
    runner = children.runner_args("plan.toml", "r.sqlite", "e.jsonl", "log.txt")
    built = []
    # The window itself is left out: what matters is the mode it would start its children in.
    monkeypatch.setattr("app.main.main", lambda db, smoke_test: built.append(child.draftbench_argv(*runner)[1]) or 0)

    assert entry.main(["--debug"]) == 0
    assert entry.main(["gui"]) == 0
    assert entry.main(["--debug", "gui", "--db", "r.sqlite"]) == 0
    debug, plain, debug_db = built
    assert debug[debug.index("run") - 1] == "--debug"  # before the verb, where the command line takes it
    assert debug.count("--debug") == 1 and debug_db == debug
    assert "--debug" not in plain and plain[plain.index("run"):] == runner


def test_a_child_of_the_app_in_debug_mode_keeps_its_traceback(qtbot, tmp_path, monkeypatch):
    """A sweep's runner that fails (a plan file that is not there): the line the app warns with
    names the file that keeps the runner's traceback."""
    from app.jobs import child
    from app.jobs.sweep import Sweep

    monkeypatch.setenv("DRAFTBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(child, "debug", True)
    monkeypatch.chdir(ROOT)
    plan = tmp_path / "missing.toml"
    runner = Sweep.start(str(plan), str(tmp_path / "r.sqlite"))
    runner.wait(60)
    assert runner.exit_code == 2 and not runner.alive
    said = runner.failure()
    assert said.startswith("plan file") and str(plan) in said
    kept = Path(KEPT.search(said).group(1))
    assert _logs(tmp_path) == [kept]
    text = kept.read_text()
    assert f"command: draftbench --debug run {plan} --db" in text
    assert "Traceback (most recent call last):" in text
