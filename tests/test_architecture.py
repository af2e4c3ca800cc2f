"""The shape of the code base, checked on its source files."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# --- the store is the only door to the database ---------------------------------------------------
STORE = ROOT / "workbench" / "store"
# SQL as this project writes it (keywords in capitals), in shapes that prose does not take: a
# docstring may say "select" or "update", but not "SELECT ... FROM" or "UPDATE runs SET".
SQL = re.compile(r"\bSELECT\b.+?\bFROM\b|\bINSERT\s+(?:OR\s+[A-Z]+\s+)?INTO\b|\bUPDATE\s+\[?\w+\]?\s+SET\b"
                 r"|\bDELETE\s+FROM\b|\b(?:CREATE|DROP|ALTER)\s+(?:UNIQUE\s+)?(?:TABLE|INDEX|VIEW|TRIGGER)\b"
                 r"|\bPRAGMA\s+\w+", re.DOTALL)
EXECUTE = {"execute", "executemany", "executescript"}
# Receivers that are a database or a connection by their name.
DATABASE_NAMES = {"db", "conn", "con", "connection", "cursor", "cur"}
TABLES = {"meta", "experiments", "runs", "sweeps", "recommendations", "samples", "positions", "requests",
          "logs", "telemetry", "remote_rows", "annotations"}
DRIVERS = {"sqlite3", "sqlite_utils"}


def _text(node: ast.AST) -> str | None:
    """The text of a string expression: a literal, an f-string (each field stands as `x`), or
    literals joined with +."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        if left is not None or right is not None:
            return (left or "x") + (right or "x")
    return None


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def database_code(source: str) -> list[str]:
    """Each place in a module's source that talks to the database itself, as `line: what`."""
    found = []
    inner: set[int] = set()  # pieces of a string expression already read as a whole
    for node in ast.walk(ast.parse(source)):
        if id(node) in inner:
            continue
        text = _text(node)
        if text is not None:
            inner.update(id(n) for n in ast.walk(node) if n is not node)
            match = SQL.search(text)
            if match:
                found.append(f"{node.lineno}: SQL {' '.join(match.group(0).split())[:60]!r}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in EXECUTE:
            receiver = _name(node.func.value)
            if (node.func.attr != "execute" or receiver in DATABASE_NAMES
                    or (node.args and _text(node.args[0]) is not None)):
                found.append(f"{node.lineno}: .{node.func.attr}(")
        elif isinstance(node, ast.Attribute) and node.attr == "table_names":
            found.append(f"{node.lineno}: .table_names")
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Subscript)
              and isinstance(node.value.slice, ast.Constant) and node.value.slice.value in TABLES):
            found.append(f"{node.lineno}: [{node.value.slice.value!r}].{node.attr}")
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] in DRIVERS]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in DRIVERS:
            found.append(f"{node.lineno}: from {node.module} import")
    return sorted(found, key=lambda f: (int(f.split(":")[0]), f))


def test_the_scanner_finds_database_code_and_spares_prose():
    assert database_code('"""Select the runs from an experiment, update them, delete what is left."""') == []
    assert database_code("self.execute(pending)\nstrategy.execute()\nstate['done'].get('x')\n") == []
    assert database_code('rows = db.execute("SELECT id FROM runs WHERE key = ?", [k])') == [
        "1: .execute(", "1: SQL 'SELECT id FROM'"]
    assert database_code('q = f"SELECT {cols} " f"FROM {table}"') == ["1: SQL 'SELECT x FROM'"]
    assert database_code('q = "DELETE " + "FROM runs"') == ["1: SQL 'DELETE FROM'"]
    assert database_code('x = "UPDATE runs SET status = 1"\ny = "PRAGMA foreign_keys=ON"') == [
        "1: SQL 'UPDATE runs SET'", "2: SQL 'PRAGMA foreign_keys'"]
    assert database_code("conn.executescript(script)\nfrom sqlite_utils import Database\nimport sqlite3") == [
        "1: .executescript(", "2: from sqlite_utils import", "3: import sqlite3"]
    assert database_code('db["runs"].insert(row)\nnames = db.table_names()') == [
        "1: ['runs'].insert", "2: .table_names"]


def test_only_the_store_talks_to_the_database():
    files = [p for base in ("workbench", "app") for p in sorted((ROOT / base).rglob("*.py"))
             if STORE not in p.parents]
    assert len(files) > 50  # the whole code base was read, not an empty folder
    problems = [f"{path.relative_to(ROOT)}:{finding}" for path in files
                for finding in database_code(path.read_text(encoding="utf-8"))]
    assert problems == [], "SQL or database access outside workbench/store (add a named operation there):\n" + \
        "\n".join(problems)


# --- layers, size, and imports that can be read off each module's header --------------------------
PACKAGES = [ROOT / "workbench", ROOT / "app"]
MAX_LINES = 400


def _modules():
    for top in PACKAGES:
        yield from sorted(top.rglob("*.py"))


def test_the_import_contracts_hold():
    # The layers, "workbench never imports Qt or the app" and "only the store opens the database",
    # as import-linter checks them (pyproject.toml): an upward import fails here.
    import subprocess
    import sys

    done = subprocess.run([str(Path(sys.executable).parent / "lint-imports")], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "BROKEN" not in done.stdout and "0 broken" in done.stdout


def test_no_module_is_over_400_lines():
    long = {str(f.relative_to(ROOT)): n for f in _modules() if (n := len(f.read_text().splitlines())) > MAX_LINES}
    assert not long, f"split these modules (over {MAX_LINES} lines): {long}"


def _deferred_imports(source: str) -> list[int]:
    """Lines of imports inside a function that no comment explains (on the line, or in the comment
    block just above it)."""
    lines = source.splitlines()
    bare = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Import, ast.ImportFrom)):
                i = sub.lineno - 1
                said = "#" in lines[i]
                j = i - 1
                while not said and j >= 0 and (lines[j].strip().startswith(("#", "import ", "from ")) or
                                               not lines[j].strip()):
                    said = lines[j].strip().startswith("#")
                    j -= 1
                if not said:
                    bare.append(sub.lineno)
    return sorted(set(bare))


def test_every_import_inside_a_function_says_why():
    bare = {str(f.relative_to(ROOT)): lines for f in _modules() if (lines := _deferred_imports(f.read_text()))}
    assert not bare, f"imports inside functions without a comment saying why they are deferred: {bare}"


def test_the_deferred_import_check_can_fail():
    assert _deferred_imports("def f():\n    import json\n    return json\n") == [2]
    assert _deferred_imports("def f():\n    # heavy: only this verb needs it\n    import json\n") == []


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each an import cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_between_modules():
    # Imports inside functions count too (grimp reads them), so a cycle cannot hide in one.
    import grimp

    graph = grimp.build_graph("workbench", "app")
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(edges) == []


def test_the_cycle_check_can_fail():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
