"""The fields of a plan file that need more than a type check: model references (a folder, a
demo model, a Hub repo id), a draft's vocabulary against its target's, numbers and lists."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from workbench.checkpoints import demo, shapes
from workbench.errors import DraftbenchError

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
DEMO_PREFIX = "demo:"
# A shipped shape (resources/shapes): a model's config with a generated tokenizer of its
# vocabulary, served with dummy weights in a what-if sweep.
SHAPE_PREFIX = "shape:"


class PlanError(DraftbenchError, ValueError):
    """A one-line reason a plan cannot be run."""


def resolve_model(ref: str, what: str, base: Path) -> str:
    """A local folder (absolute, relative to the plan, or demo:NAME) or a Hub repo id."""
    if not isinstance(ref, str) or not ref.strip():
        raise PlanError(f"{what} must be a model folder or a Hugging Face repo id")
    ref = ref.strip()
    if ref.startswith(SHAPE_PREFIX):
        try:
            return str(shapes.folder(ref[len(SHAPE_PREFIX):]))
        except shapes.ShapeError as exc:
            raise PlanError(f"{what}: {exc}") from None
    if ref.startswith(DEMO_PREFIX):
        name = ref[len(DEMO_PREFIX):]
        model = next((m for m in demo.ALL if m.name == name), None)
        if model is None:
            raise PlanError(f"{what}: unknown demo model {name!r}; known: {', '.join(m.name for m in demo.ALL)}")
        return str(demo.folder(model))
    path = Path(ref).expanduser()
    if not path.is_absolute():
        path = base / path
    if path.exists():
        if not (path / "config.json").is_file():
            raise PlanError(f"{what} {ref!r} is a path but holds no config.json (not a model folder)")
        return str(path.resolve())
    if ref.startswith(("/", ".", "~")) or not REPO_ID.match(ref):
        raise PlanError(f"{what} {ref!r} does not exist (neither a folder nor an owner/name repo id)")
    return ref


def _vocab_size(folder: str) -> int | None:
    """A local checkpoint's vocabulary size from its config.json (None for a Hub id or no entry)."""
    config = Path(folder) / "config.json"
    if not config.is_file():
        return None
    try:
        doc = json.loads(config.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        raise PlanError(f"{config} is not readable JSON") from None
    if not isinstance(doc, dict):
        raise PlanError(f"{config} is not a model config (not a JSON object)")
    size = doc.get("vocab_size", (doc.get("text_config") or {}).get("vocab_size"))
    return size if isinstance(size, int) else None


def check_pair(method: str, target: str, draft: str | None, where: str) -> None:
    """A draft model proposes token ids the target must score: their vocabularies must agree
    (vLLM only finds out after loading both, minutes later on a big target)."""
    if method != "draft_model" or draft is None:
        return
    t, d = _vocab_size(target), _vocab_size(draft)
    if t is not None and d is not None and t != d:
        raise PlanError(f"{where}: the draft's vocabulary ({d} tokens) differs from the target's ({t}); "
                        "draft_model needs a draft with the target's tokenizer")


def _list(value: Any, what: str, kind: type[int] | type[str] = int) -> list[Any]:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise PlanError(f"{what} is empty")
    for v in values:
        if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
            raise PlanError(f"{what} must hold whole numbers, not {v!r}")
        if kind is str and not isinstance(v, str):
            raise PlanError(f"{what} must hold strings, not {v!r}")
    return values


def _number(table: dict[str, Any], key: str, default: Any, lo: float, hi: float, what: str,
            integer: bool = False) -> int | float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise PlanError(f"{what}.{key} must be a {'whole ' if integer else ''}number, not {value!r}")
    if not lo <= value <= hi:
        raise PlanError(f"{what}.{key} must be between {lo:g} and {hi:g}, not {value}")
    return value


