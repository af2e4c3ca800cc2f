"""Bad input on the command line: one line on stderr, exit status 2, nothing started."""

import subprocess
import sys

import pytest


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize("plan_text,message", [
    ('[target]\nmodel = "demo:smollm2-135m"\n[[methods]]\nmethod = "warp"\nn = 2\n[workload]\ntemperature = 0.0\n', "unknown method 'warp'"),
    ('[target]\nmodel = "demo:smollm2-135m"\n[[methods]]\nmethod = "ngram"\nn = 0\n[workload]\ntemperature = 0.0\n', "N (num_speculative_tokens) must be"),
    ('[target]\nmodel = "demo:smollm2-135m"\n[[methods]]\nmethod = "draft_model"\nn = 2\n[workload]\ntemperature = 0.0\n', "needs a draft checkpoint"),
    ('[target]\nmodel = "demo:smollm2-135m"\n[[methods]]\nmethod = "draft_model"\ndraft = "/no/such/draft"\nn = 2\n[workload]\ntemperature = 0.0\n', "does not exist"),
    ('[target\nmodel = 1\n', "is not valid TOML"),
])
def test_bad_plan_is_rejected_before_any_server(tmp_path, plan_text, message):
    path = tmp_path / "plan.toml"
    path.write_text(plan_text)
    db = tmp_path / "r.sqlite"
    done = _run("run", str(path), "--db", str(db))
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert not db.exists()


def test_not_a_database(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not sqlite at all" * 100)
    done = _run("runs", "--db", str(bad))
    assert done.returncode == 2 and "not a usable Draftbench database" in done.stderr
    assert bad.read_bytes() == b"this is not sqlite at all" * 100


def test_show_unknown_run(tmp_path):
    from workbench import store

    store.open_db(tmp_path / "r.sqlite")
    done = _run("show", "7", "--db", str(tmp_path / "r.sqlite"))
    assert done.returncode == 2 and "no run 7" in done.stderr
