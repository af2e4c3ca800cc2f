"""No class built at run time, and no mixin in the engine: a class's methods read only what the
class, or a base of it in `workbench`, defines, so go-to-definition always finds it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _trees(*packages: str):
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield path.relative_to(ROOT), ast.parse(path.read_text(), str(path))


def test_no_class_is_built_at_run_time():
    found = [f"{path}:{node.lineno}" for path, tree in _trees("workbench", "app") for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"
             and len(node.args) == 3]
    assert found == []


def _own(node: ast.ClassDef) -> tuple[set[str], set[str]]:
    """What the class defines (methods, class attributes, anything assigned to self) and what its
    methods read from self."""
    defined, read = set(), set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.add(item.name)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            defined.add(item.target.id)
        elif isinstance(item, ast.Assign):
            defined.update(t.id for t in item.targets if isinstance(t, ast.Name))
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
            (defined if isinstance(sub.ctx, ast.Store) else read).add(sub.attr)
    return defined, read


def test_every_engine_class_defines_what_it_reads():
    classes: dict[tuple[Path, str], tuple[list[str], set[str], set[str]]] = {}
    for path, tree in _trees("workbench"):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes[path, node.name] = ([ast.unparse(b).rpartition(".")[2] for b in node.bases], *_own(node))
    by_name: dict[str, list[tuple[Path, str]]] = {}
    for key in classes:
        by_name.setdefault(key[1], []).append(key)

    def ancestors(key: tuple[Path, str]) -> list | None:
        """The class's bases in workbench, transitively; None where one comes from elsewhere
        (Exception, argparse, a dataclass of the standard library): its attributes are not seen here."""
        out = []
        for base in classes[key][0]:
            found = (key[0], base) if (key[0], base) in classes else (by_name.get(base) or [None])[0]
            if found is None:
                return None
            above = ancestors(found)
            if above is None:
                return None
            out += [found, *above]
        return out

    mixins = []
    for key, (_, defined, read) in classes.items():
        above = ancestors(key)
        # A class with __getattr__ answers any name by design.
        if above is None or "__getattr__" in defined:
            continue
        known = defined.union(*(classes[a][1] for a in above))
        unknown = {name for name in read - known if not name.startswith("__")}  # every object has dunders
        if unknown:
            mixins.append(f"{key[0]} {key[1]}: {sorted(unknown)}")
    assert mixins == []
