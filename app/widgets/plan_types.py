"""The types of the plan keys the Experiment form shows, checked when a plan file is opened.

A value of the wrong type (`concurrency = "eight"`, `max_model_len = "long"`) is refused in one
line that names its key and the type it needs, worded as the plan loader words its own checks,
before the form converts anything: the user never meets a Python conversion error, and the form
keeps what it showed. What a value of the right type may be (a range, a known model, a method's
options) stays the loader's to say (`workbench.plan`), through the page's preflight."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workbench.plan import PlanError


@dataclass(frozen=True)
class Kind:
    says: str  # what the value must be, as the message says it
    fits: Callable[[object], bool]


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _list_of(fits: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda v: fits(v) or (isinstance(v, list) and all(fits(x) for x in v))


WHOLE = Kind("a whole number", _whole)
NUMBER = Kind("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))
TEXT = Kind("a string", lambda v: isinstance(v, str))
FLAG = Kind("true or false", lambda v: isinstance(v, bool))
TABLE = Kind("a table", lambda v: isinstance(v, dict))
WHOLES = Kind("a whole number or a list of whole numbers, e.g. [1, 4]", _list_of(_whole))
TEXTS = Kind('a string or a list of strings, e.g. ["builtin"]', _list_of(TEXT.fits))
REPEATS = Kind('a whole number or "auto"', lambda v: _whole(v) or v == "auto")
PROMPTS = Kind("a whole number or {per_concurrency = K, min = M}",
               lambda v: _whole(v) or (isinstance(v, dict) and all(_whole(x) for x in v.values())))

# The tables the form reads into its fields, and the type of each key it shows.
KEYS: dict[str, dict[str, Kind]] = {
    "target": {"model": TEXT, "served_name": TEXT, "max_model_len": WHOLE, "dtype": TEXT, "enforce_eager": FLAG},
    "workload": {"names": TEXTS, "concurrency": WHOLES, "repeats": REPEATS, "num_prompts": PROMPTS,
                 "max_tokens": WHOLE, "warmup": WHOLE, "temperature": NUMBER, "top_p": NUMBER, "ignore_eos": FLAG},
    "sweep": {},
}
METHOD_KEYS: dict[str, Kind] = {"method": TEXT, "n": WHOLES, "draft": TEXT, "options": TABLE, "optional": FLAG}


def _check(value, kind: Kind, where: str) -> None:
    if not kind.fits(value):
        raise PlanError(f"{where} must be {kind.says}, not {_shown(value)}")


def _shown(value) -> str:
    """The value as the plan file writes it: "eight" with TOML's double quotes, not Python's."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return repr(value)


def check(doc: dict) -> None:
    """Raises PlanError on the first key the form shows whose value has the wrong type."""
    _check(doc.get("name", ""), TEXT, "name")
    for table, keys in KEYS.items():
        if table not in doc:
            continue
        _check(doc[table], TABLE, f"[{table}]")
        for key, kind in keys.items():
            if key in doc[table]:
                _check(doc[table][key], kind, f"{table}.{key}")
    methods = doc.get("methods", [])
    if not isinstance(methods, list) or not all(isinstance(m, dict) for m in methods):
        raise PlanError("methods must be an array of tables: [[methods]]")
    for i, entry in enumerate(methods, 1):
        for key, kind in METHOD_KEYS.items():
            if key in entry:
                _check(entry[key], kind, f"methods #{i}: {key}")
