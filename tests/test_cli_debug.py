"""`draftbench --debug`: on any error the full traceback is kept in a file under the data
directory's logs folder and the one line on stderr names it; without it the line stands alone,
and an unexpected error (a bug) says so in one line with a hint to rerun with --debug."""

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


def _boom(db, smoke_test):
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

    def gui(db, smoke_test):
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
    def gui(db, smoke_test):
        raise KeyboardInterrupt

    assert cli.main([], gui=gui) == 130
    assert capsys.readouterr().err == "draftbench: interrupted\n"


def test_any_draftbench_error_is_one_line(monkeypatch, capsys):
    from workbench.plan.fields import PlanError

    def gui(db, smoke_test):
        raise PlanError("target.model is missing")

    assert cli.main([], gui=gui) == 2
    assert capsys.readouterr().err == "draftbench: target.model is missing\n"
