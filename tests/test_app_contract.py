"""The app's import contract (pyproject.toml), an allow-list: it is checked with the others, it
holds, and it breaks on an import it does not list, a page reaching for the CLI or the sweep runner."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = "the app imports only the engine's allowed modules"
LINT = str(Path(sys.executable).parent / "lint-imports")


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([LINT, "--no-cache"], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_the_app_contract_is_checked_and_kept():
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"{CONTRACT} KEPT" in " ".join(done.stdout.split())


@pytest.mark.parametrize("page, planted, link", [
    # The CLI is the app's own command (app.entry); a page that builds on it breaks the contract.
    ("train_page", "from workbench.cli import train", "app.pages.train_page -> workbench.cli.train"),
    ("history", "from workbench.sweep import runner", "app.pages.history -> workbench.sweep.runner"),
])
def test_a_page_that_imports_what_the_list_lacks_breaks_it(tmp_path, page, planted, link):
    for part in ("app", "workbench"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    module = tmp_path / "app" / "pages" / f"{page}.py"
    module.write_text(module.read_text() + f"\n{planted}  # noqa: E402,F401\n")
    done = _lint(tmp_path)
    out = " ".join(done.stdout.split())
    assert done.returncode == 1, out[-3000:]
    assert f"{CONTRACT} BROKEN" in out and " 1 broken." in out
    assert link in out
