"""docs/architecture.md names every package and module of `workbench/` and `app/`, each by its full
dotted name in backticks (`workbench.sweep.runner`), so a module added without a word there fails."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
SKIPPED = {"__init__.py", "__main__.py"}


def modules(root: Path, parts: tuple[str, ...] = ("workbench", "app")) -> list[str]:
    """The dotted name of every package and module under `root`'s `parts`, __init__ and __main__ aside."""
    names = []
    for part in parts:
        top = root / part
        names.append(part)
        for path in sorted(top.rglob("*")):
            if "__pycache__" in path.parts:
                continue
            if path.is_dir() and (path / "__init__.py").exists():
                names.append(".".join(path.relative_to(root).parts))
            elif path.suffix == ".py" and path.name not in SKIPPED:
                names.append(".".join(path.relative_to(root).with_suffix("").parts))
    return names


def missing(names: list[str], text: str) -> list[str]:
    return [name for name in names if f"`{name}`" not in text]


def test_the_check_can_fail(tmp_path):
    (tmp_path / "workbench" / "sweep").mkdir(parents=True)
    (tmp_path / "workbench" / "__init__.py").write_text("")
    (tmp_path / "workbench" / "sweep" / "__init__.py").write_text("")
    (tmp_path / "workbench" / "sweep" / "__main__.py").write_text("")
    (tmp_path / "workbench" / "sweep" / "runner.py").write_text("")
    (tmp_path / "workbench" / "sweep" / "__pycache__").mkdir()
    (tmp_path / "workbench" / "sweep" / "__pycache__" / "stale.py").write_text("")
    names = modules(tmp_path, ("workbench",))
    assert names == ["workbench", "workbench.sweep", "workbench.sweep.runner"]
    assert missing(names, "`workbench` and `workbench.sweep` (its `runner`), workbench.sweep.runner") == [
        "workbench.sweep.runner"]


def test_the_architecture_doc_names_every_module():
    names = modules(ROOT)
    assert len(names) > 100  # the walk found the code base
    assert missing(names, DOC.read_text(encoding="utf-8")) == []
