"""The app's import contract (pyproject.toml): it is checked with the others, it holds, and it
breaks on the import it exists to refuse, a page reaching for the sweep runner."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = "the app drives sweeps and training only as child processes"
LINT = str(Path(sys.executable).parent / "lint-imports")


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([LINT, "--no-cache"], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_the_app_contract_is_checked_and_kept():
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"{CONTRACT} KEPT" in " ".join(done.stdout.split())


def test_a_page_that_imports_the_sweep_runner_breaks_it(tmp_path):
    for part in ("app", "workbench"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    page = tmp_path / "app" / "pages" / "history.py"
    page.write_text(page.read_text() + "\nfrom workbench.sweep import runner  # noqa: E402,F401\n")
    done = _lint(tmp_path)
    out = " ".join(done.stdout.split())
    assert done.returncode == 1, out[-3000:]
    assert f"{CONTRACT} BROKEN" in out and " 1 broken." in out
    assert "app.pages.history -> workbench.sweep.runner" in out
