"""Security: servers listen on loopback only and refuse requests without the per-run API key; no
subprocess is started through a shell. (An HF token in the environment never landing in anything
Draftbench writes is checked on the sweep that tests/test_runner.py kills and resumes, so that
sweep's servers serve both.)"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import httpx
import psutil
import pytest

from workbench import launch

ROOT = Path(__file__).resolve().parent.parent


def _chat(server, key: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    body = {"model": "smollm2", "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4,
            "temperature": 0.0}
    return httpx.post(server.spec.base_url + "/v1/chat/completions", json=body, headers=headers, timeout=60)


def test_server_listens_on_loopback_only(draft_server):
    assert draft_server.spec.argv[draft_server.spec.argv.index("--host") + 1] == "127.0.0.1"
    port = draft_server.spec.port
    listening = [c for c in psutil.net_connections("inet")
                 if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port]
    assert listening, f"nothing listens on {port}"
    assert {c.laddr.ip for c in listening} == {"127.0.0.1"}


def test_requests_without_the_run_key_are_refused(draft_server):
    assert _chat(draft_server, None).status_code == 401
    assert _chat(draft_server, "not-the-key").status_code == 401
    assert httpx.get(draft_server.spec.base_url + "/v1/models", timeout=30).status_code == 401
    assert _chat(draft_server, draft_server.api_key).status_code == 200
    # The key is random per server and never on its command line (where `ps` would show it).
    assert len(draft_server.api_key) >= 24
    assert draft_server.api_key not in " ".join(draft_server.spec.argv)
    assert draft_server.api_key not in json.dumps(draft_server.spec.env)


# --- no shell ----------------------------------------------------------------------------------------
SHELL_CALLS = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput"), ("subprocess", "getstatusoutput"),
               ("asyncio", "create_subprocess_shell")}
PROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output"}


def _is_text(node: ast.AST) -> bool:
    """A command built as one string (literal, f-string, concatenation or %-formatting)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _is_text(node.left) or _is_text(node.right)
    return False


def shell_uses(source: str, name: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if not isinstance(node, ast.Call):
            continue
        where = f"{name}:{node.lineno}"
        for kw in node.keywords:
            if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                found.append(f"{where} shell={ast.unparse(kw.value)}")
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if (func.value.id, func.attr) in SHELL_CALLS:
                found.append(f"{where} {func.value.id}.{func.attr}")
            if func.value.id == "subprocess" and func.attr in PROCESS_CALLS and node.args and _is_text(node.args[0]):
                found.append(f"{where} subprocess.{func.attr} with a string command")
        if isinstance(func, ast.Attribute) and func.attr in ("startDetached", "start") and len(node.args) == 1 \
                and _is_text(node.args[0]):
            found.append(f"{where} QProcess.{func.attr} with one command string")
    return found


def test_the_scan_finds_shell_use():
    bad = ("import os, subprocess, asyncio\n"
           "os.system('ls ' + path)\n"
           "subprocess.run(f'vllm serve {model}', shell=True)\n"
           "subprocess.Popen('vllm serve x')\n"
           "asyncio.create_subprocess_shell(cmd)\n"
           "subprocess.run(args, shell=flag)\n"
           "proc.startDetached('draftbench run ' + plan)\n")
    assert len(shell_uses(bad, "bad.py")) == 7
    assert shell_uses("import subprocess\nsubprocess.run([exe, '-c', code], shell=False)\n", "ok.py") == []


@pytest.mark.parametrize("package", ["workbench", "app", "bench", "scripts", "packaging"])
def test_no_subprocess_goes_through_a_shell(package):
    files = sorted((ROOT / package).rglob("*.py"))
    if package in ("workbench", "app"):
        assert len(files) > 10
    found = [hit for f in files for hit in shell_uses(f.read_text(), str(f.relative_to(ROOT)))]
    assert found == []


def test_runner_environment_keeps_secrets_out_of_the_stored_command(vllm_install, demo_models):
    from helpers.vllm_servers import server_config
    from workbench.checkpoints import demo

    spec = launch.prepare(server_config(str(demo_models[demo.TARGET.name])), vllm_install, 8000)
    assert "VLLM_API_KEY" not in spec.env and "--api-key" not in spec.argv
    assert not any(k.startswith(("HF_", "HUGGING")) for k in spec.env)
