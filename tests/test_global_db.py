"""`--db FILE` before the command, as the README presents it (`draftbench --db FILE runs`), does
what `draftbench runs --db FILE` does; given on both sides it must name one file, and before a
command that opens no database it is refused, each in one line."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.recorded import GPU_DB, ROOT, copy_db
from workbench import cli, paths

PLAN = ROOT / "resources" / "plans" / "demo-quick.toml"


def draftbench(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "QT_QPA_PLATFORM")}
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


@pytest.fixture
def db(tmp_path) -> Path:
    return copy_db(GPU_DB, tmp_path / "r.sqlite")


def test_runs_and_show_read_the_database_named_before_the_verb(db):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM runs ORDER BY id")]
    before = draftbench("--db", str(db), "runs")
    after = draftbench("runs", "--db", str(db))
    assert before.returncode == 0, before.stderr
    assert before.stdout == after.stdout and before.stderr == after.stderr == ""
    assert [line.split()[0] for line in before.stdout.splitlines()[2:]] == [str(i) for i in ids]

    before, after = draftbench("--db", str(db), "show", "3"), draftbench("show", "3", "--db", str(db))
    assert before.returncode == 0, before.stderr
    assert before.stdout == after.stdout and before.stdout.splitlines()[0].split() == ["run", "3"]


def test_run_dry_run_checks_the_database_named_before_the_verb(db, tmp_path):
    done = draftbench("--db", str(db), "run", str(PLAN), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "vllm serve" in done.stdout
    # A folder where the database should be: refused for the --db given before the verb, as after it.
    folder = tmp_path / "folder"
    folder.mkdir()
    refused = [draftbench("--db", str(folder), "run", str(PLAN), "--dry-run"),
               draftbench("run", str(PLAN), "--dry-run", "--db", str(folder))]
    for r in refused:
        assert r.returncode == 2 and "is a folder, not a database file" in r.stderr, r.stderr
    assert refused[0].stderr == refused[1].stderr


def test_both_sides_naming_one_file_is_fine_two_files_is_one_line(db, tmp_path):
    same = draftbench("--db", "r.sqlite", "runs", "--db", str(db), cwd=tmp_path)
    assert same.returncode == 0 and same.stdout == draftbench("runs", "--db", str(db)).stdout, same.stderr
    other = copy_db(GPU_DB, tmp_path / "s.sqlite")
    for args in (["--db", str(db), "runs", "--db", str(other)],
                 ["--db", str(db), "show", "3", "--db", str(other)],
                 ["--db", str(db), "gui", "--db", str(other)]):
        done = draftbench(*args)
        assert done.returncode == 2 and done.stdout == "", args
        assert done.stderr == (f"draftbench: --db given twice, before the command ({db}) and after it "
                               f"({other}): give it once\n")


@pytest.mark.parametrize("verb", [["doctor"], ["workloads", "list"], ["catalog"]])
def test_before_a_command_that_opens_no_database_it_is_refused(db, verb):
    done = draftbench("--db", str(db), *verb)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"draftbench: --db {db}: `draftbench {' '.join(verb)}` opens no results database\n"


def test_every_verbs_own_default_stays_and_nested_verbs_take_it_too(db):
    def resolved(*argv: str):
        args = cli._parser().parse_args(list(argv))
        cli._resolve_db(args)
        return args.db

    assert resolved("runs") is None and resolved("run", str(PLAN)) is None
    assert resolved("export") == resolved("report") == str(paths.default_db())
    assert resolved("--db", str(db), "export") == resolved("export", "--db", str(db)) == str(db)
    assert resolved("--db", str(db), "remote", "follow", "host") == str(db)
    assert resolved("--db", str(db), "import-bench", "b.json") == str(db)
    assert resolved("--db", str(db), "what-if", "--from-run", "3") == str(db)


def test_the_desktop_app_opens_the_database_named_before_or_without_gui(db):
    opened = []
    gui = lambda path, smoke, debug: opened.append(path) or 0  # noqa: E731
    assert cli.main(["--db", str(db)], gui=gui) == 0
    assert cli.main(["--db", str(db), "gui"], gui=gui) == 0
    assert cli.main(["gui", "--db", str(db)], gui=gui) == 0
    assert cli.main([], gui=gui) == 0
    assert opened == [str(db), str(db), str(db), None]


def test_help_shows_the_option_before_the_command():
    done = draftbench("--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: draftbench [-h] [--version] [--info] [--debug] [--db FILE] COMMAND ...")
