"""No class built at run time, and no mixin: in the engine a class's methods read only what the
class, or a base of it in `workbench`, defines; in the app a Qt class owns its parts instead of
inheriting plain project classes beside its Qt base, whose methods would read attributes only the
Qt class sets. Either way go-to-definition always finds what a method reads."""

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


QT_MODULES = ("PySide6", "pyqtgraph")


def _qt_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names a module imports from Qt (PySide6, pyqtgraph), and the names it binds to those
    modules themselves (`import pyqtgraph as pg`)."""
    names, modules = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in QT_MODULES:
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            modules.update(a.asname or a.name.split(".")[0] for a in node.names
                           if a.name.split(".")[0] in QT_MODULES)
    return names, modules


def test_no_app_class_mixes_a_plain_project_class_into_a_qt_class():
    """A class of `app` whose bases are a Qt class and a project class that is not one (as a page
    that inherits its charts' methods, `class Page(Charts, QWidget)`), or any class named *Mixin."""
    classes: dict[tuple[Path, str], list[tuple[str, bool]]] = {}  # bases: (name, imported from Qt)
    where: dict[tuple[Path, str], int] = {}
    for path, tree in _trees("app", "workbench"):
        qt_names, qt_modules = _qt_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases]
                classes[path, node.name] = [(b.rpartition(".")[2], b in qt_names or b.split(".")[0] in qt_modules)
                                            for b in bases]
                where[path, node.name] = node.lineno
    by_name: dict[str, list[tuple[Path, str]]] = {}
    for key in classes:
        by_name.setdefault(key[1], []).append(key)

    def project(path: Path, name: str) -> tuple[Path, str] | None:
        return (path, name) if (path, name) in classes else (by_name.get(name) or [None])[0]

    def is_qt(key: tuple[Path, str], seen: frozenset = frozenset()) -> bool:
        """Whether the project class derives from a Qt class, through its project bases too."""
        for name, from_qt in classes[key]:
            found = None if from_qt else project(key[0], name)
            if from_qt or (found is not None and found not in seen and is_qt(found, seen | {key})):
                return True
        return False

    mixed = []
    for key, bases in classes.items():
        if key[1].endswith("Mixin"):
            mixed.append(f"{key[0]}:{where[key]} {key[1]}: named a mixin")
        if key[0].parts[0] != "app" or not is_qt(key):
            continue
        plain = [name for name, from_qt in bases
                 if not from_qt and (found := project(key[0], name)) is not None and not is_qt(found)]
        if plain:
            mixed.append(f"{key[0]}:{where[key]} {key[1]}: a Qt class inheriting the plain project "
                         f"class(es) {plain}; own an instance of each instead")
    assert mixed == []
