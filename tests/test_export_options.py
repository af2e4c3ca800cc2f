"""`draftbench export` and `report` options are parsed and checked once, by the command line, into
one ExportOptions: handed as it is to the drawing code in this process, or as JSON to the child."""

from __future__ import annotations

import subprocess
import sys

import pytest

from workbench import cli
from workbench.cli import export as export_verb
from workbench.usecases.chart_names import ALL_CHARTS
from workbench.usecases.export_options import ExportError, ExportOptions


def _drawn(argv: list[str], capsys) -> tuple[int, list[ExportOptions], str]:
    given: list[ExportOptions] = []
    code = cli.main(argv, draw=lambda options: given.append(options) or 0)
    return code, given, capsys.readouterr().err


def test_export_options_arrive_typed_and_checked(capsys, tmp_path):
    db = str(tmp_path / "r.sqlite")
    code, given, _ = _drawn(["export", "--db", db, "--out", "o", "--format", "PNG, csv", "--chart", "mal,breakeven",
                             "--width", "640", "--runs", "3,4"], capsys)
    assert code == 0
    assert given == [ExportOptions(verb="export", db=db, out="o", runs=(3, 4), formats=("png", "csv"),
                                   charts=("mal", "breakeven"), every_chart=False, width=640, height=800, dpi=150)]
    code, given, _ = _drawn(["--db", db, "export"], capsys)  # the defaults, --db before the verb
    assert given[0].charts == ALL_CHARTS and given[0].every_chart and given[0].db == db
    assert given[0].formats == ("png", "svg", "pdf", "csv", "json") and given[0].out == "draftbench-export"
    code, given, _ = _drawn(["report", "--db", db, "--title", "T", "--experiment", "2"], capsys)
    assert given == [ExportOptions(verb="report", db=db, out="draftbench-report.html", experiment=2, title="T")]


@pytest.mark.parametrize("args, said", [
    (["--format", "gif"], "draftbench: unknown format 'gif'; choose from png, svg, pdf, csv, json"),
    (["--chart", "pie"], "draftbench: unknown chart; choose from all, per_position,"),
    (["--dpi", "10"], "draftbench: width and height must be 16..20000 pixels and dpi 30..2400"),
])
def test_bad_options_are_refused_before_anything_is_drawn(args, said, capsys, tmp_path):
    code, given, err = _drawn(["export", "--db", str(tmp_path / "r.sqlite"), *args], capsys)
    assert (code, given) == (2, []) and err.startswith(said) and len(err.strip().splitlines()) == 1


def test_the_child_gets_the_same_options_as_json(monkeypatch, tmp_path):
    started: list[list[str]] = []
    monkeypatch.setattr(export_verb.subprocess, "call", lambda argv: started.append(argv) or 0)
    assert cli.main(["export", "--db", str(tmp_path / "r.sqlite"), "--chart", "mal", "--dpi", "96"]) == 0
    [argv] = started
    assert argv[:3] == [sys.executable, "-m", "app.exports"] and len(argv) == 4
    options = ExportOptions.from_json(argv[3])
    assert (options.charts, options.dpi, options.every_chart, options.db) == (("mal",), 96, False,
                                                                               str(tmp_path / "r.sqlite"))
    assert ExportOptions.from_json(options.to_json()) == options


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"verb": "export", "colour": "red"}'])
def test_options_that_are_not_ours_are_refused(text):
    with pytest.raises(ExportError, match="not ExportOptions.to_json's"):
        ExportOptions.from_json(text)


def test_the_child_refuses_what_is_not_options_in_one_line():
    for args, said in ((["--format=png"], "draftbench: the export options are not ExportOptions.to_json's"),
                       (["export", "--db"], "usage: python -m app.exports OPTIONS_JSON")):
        done = subprocess.run([sys.executable, "-m", "app.exports", *args], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode != 0 and "Traceback" not in done.stderr
        assert done.stderr.startswith(said) and len(done.stderr.strip().splitlines()) == 1
