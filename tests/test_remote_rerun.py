"""`draftbench run --remote HOST` with --again, --add-repeats and --dry-run: the flags reach the
host's runner, whose database says what they build on; a dry run runs there in the foreground and
starts nothing. Against a real OpenSSH server on 127.0.0.1 (tests/helpers/sshd.py) whose "host" is
this machine, serving with the vLLM stand-in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import sshd as sshd_mod
from helpers.cpu_tuning import seeded
from helpers.plans import DRAFT, demo_plan
from helpers.recorded import ROOT
from helpers.standin_sweep import STANDINS
from workbench import store

# The sshd fixture is the suite's (conftest.py); no_agent keeps whatever SSH agent this machine has out.
pytestmark = [pytest.mark.skipif(not os.path.exists(sshd_mod.SSHD), reason="needs OpenSSH's sshd (scripts/bootstrap.sh installs it)"),
              pytest.mark.usefixtures("no_agent")]

PLAN = demo_plan("remote-more", methods=[DRAFT], workload={"num_prompts": 2, "max_tokens": 16, "concurrency": [1]})


class Host:
    """One data folder on the sshd's host, and `draftbench run --remote` pointed at it."""

    def __init__(self, sshd, tmp_path: Path, name: str):
        self.data = sshd.folder / name
        self.host = sshd.host(data_dir=str(self.data))
        self.local = tmp_path / "local.sqlite"
        self.plan = tmp_path / "plan.toml"
        self.plan.write_text(PLAN)
        # Through sshd the host's environment is the login's: what the stand-in needs is passed.
        env = {"PYTHONPATH": str(ROOT), "STANDIN_REAL_PYTHON": sys.executable,
               "DRAFTBENCH_CACHE_DIR": str(seeded(tmp_path / "host-cache"))}
        self.options = ["--identity", str(sshd.key), "--python", sys.executable, "--data-dir", str(self.data),
                        "--ssh-config", str(sshd.client_config), *sum((["-o", o] for o in self.host.options), []),
                        *sum((["--env", f"{k}={v}"] for k, v in env.items()), [])]

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "workbench.cli", "run", str(self.plan), "--remote",
                               self.host.label, *self.options, "--vllm-python", str(STANDINS / "vllm_python"),
                               "--db", str(self.local), *args],
                              capture_output=True, text=True, timeout=300, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})

    def launched(self) -> list[Path]:
        """The events files of the sweeps started on the host."""
        folder = self.data / "events"
        return sorted(folder.iterdir()) if folder.is_dir() else []

    def runs(self) -> list[tuple[int, str, int, str]]:
        db = store.open_db(self.data / "results.sqlite", readonly=True)
        try:
            return [(r.experiment_id, r.method, r.repeat, r.status) for r in store.runs(db)]
        finally:
            store.close(db)


@pytest.mark.usefixtures("demo_models")
def test_a_remote_dry_run_shows_the_hosts_commands_and_starts_nothing(sshd, tmp_path):
    there = Host(sshd, tmp_path, "dry-data")
    done = there.run("--dry-run")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("vllm serve") == 2 and "draft_model N=2 · builtin · c=1 · #1" in done.stdout
    # Nothing started there, and no database created on either side.
    assert there.launched() == [] and not (there.data / "results.sqlite").exists()
    assert not there.local.exists() and "started on" not in done.stderr


@pytest.mark.usefixtures("demo_models")
def test_again_and_add_repeats_run_on_the_host(sshd, tmp_path):
    there = Host(sshd, tmp_path, "rerun-data")
    label = there.host.label
    never = there.run("--add-repeats", "1")  # nothing run there yet: the host's one line, nothing launched
    assert never.returncode == 2 and never.stderr.strip().splitlines() == [
        f"draftbench: {label}: plan 'remote-more' has never been run in this results database: nothing to add "
        "repeats to; run it first"], never.stderr
    assert there.launched() == []

    first = there.run()
    assert first.returncode == 0, first.stderr[-2000:]
    runs = there.runs()
    one = runs[0][0]
    assert runs == [(one, "baseline", 1, "completed"), (one, "draft_model", 1, "completed")]

    dry = there.run("--add-repeats", "1", "--dry-run")
    assert dry.returncode == 0 and "add repeats: 2 run(s) added to experiment" in dry.stdout, dry.stderr[-2000:]
    assert "draft_model N=2 · builtin · c=1 · #2" in dry.stdout and len(there.launched()) == 1

    more = there.run("--add-repeats", "1")
    assert more.returncode == 0, more.stderr[-2000:]
    assert there.runs() == [*runs, (one, "baseline", 2, "completed"), (one, "draft_model", 2, "completed")]
    local = store.open_db(there.local, readonly=True)
    assert sorted((r.method, r.repeat) for r in store.runs(local)) == [
        ("baseline", 1), ("baseline", 2), ("draft_model", 1), ("draft_model", 2)]  # mirrored here
    store.close(local)

    again = there.run("--again")
    assert again.returncode == 0, again.stderr[-2000:]
    (two,) = {e for e, *_ in there.runs()} - {one}
    assert there.runs()[4:] == [(two, "baseline", 1, "completed"), (two, "draft_model", 1, "completed")]
