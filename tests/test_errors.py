"""Every exception class Draftbench defines derives from the one base, workbench.errors.DraftbenchError,
so the command line can tell an error raised on purpose (one line) from a bug (a hint to rerun
with --debug)."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILTIN_ERRORS = {name for name, value in vars(builtins).items()
                  if isinstance(value, type) and issubclass(value, BaseException)}


def strays(source: str) -> list[str]:
    """The classes of a module that derive straight from a built-in exception without also
    deriving from DraftbenchError."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = {b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else None
                 for b in node.bases}
        if bases & BUILTIN_ERRORS and "DraftbenchError" not in bases | {node.name}:
            found.append(node.name)
    return found


def test_the_check_can_fail():
    assert strays("class A(ValueError):\n    pass\nclass B(A):\n    pass\n") == ["A"]
    assert strays("class A(DraftbenchError, ValueError):\n    pass\nclass B(errors.DraftbenchError):\n    pass\n") == []


def test_every_exception_class_derives_from_draftbench_error():
    found = []
    for part in ("workbench", "app"):
        for path in sorted((ROOT / part).rglob("*.py")):
            found += [f"{path.relative_to(ROOT)}: {name}" for name in strays(path.read_text(encoding="utf-8"))]
    assert found == []


def test_an_error_keeps_its_builtin_base_where_callers_catch_it():
    from workbench import methods
    from workbench.errors import DraftbenchError
    from workbench.plan.fields import PlanError

    assert issubclass(PlanError, DraftbenchError) and issubclass(PlanError, ValueError)
    assert issubclass(methods.MethodError, DraftbenchError) and issubclass(methods.MethodError, ValueError)
