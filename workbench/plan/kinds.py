"""The kinds of value a plan key takes: what a value must be, in the words every message and the
docs use, whether a value has the right type, and the loader's one-line refusal of a wrong one.

Two checks, because two places ask: `fits` is the type alone (the Experiment form asks it when a
plan is opened, before it converts anything), `check` is type and range (the plan loader asks it,
and its refusal is the PlanError the user reads)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from workbench.plan.fields import PlanError, _list, _number
from workbench.plan.model import parse_parallel


def _whole(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number_like(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _in_range(value: Any, lo: float, hi: float, where: str, integer: bool) -> int | float:
    # `_number` names a value by its table and key: "workload.max_tokens" split back into them.
    table, _, key = where.rpartition(".")
    return _number({key: value}, key, None, lo, hi, table, integer=integer)


def _say(x: float) -> str:
    """A bound as the docs write it: 10,000,000 rather than 1e+07."""
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


@dataclass(frozen=True)
class Kind:
    """A value of any type (checked elsewhere, as a what-if curve or a profile is)."""
    says: ClassVar[str] = "any value"

    def fits(self, value: object) -> bool:
        return True

    def check(self, value: Any, where: str) -> Any:
        return value

    def limits(self) -> str:
        """The allowed values beyond the type, as the docs' table says them ("" for none)."""
        return ""


@dataclass(frozen=True)
class Whole(Kind):
    says: ClassVar[str] = "a whole number"
    lo: float = 0
    hi: float = 0

    def fits(self, value: object) -> bool:
        return _whole(value)

    def check(self, value: Any, where: str) -> int | float:
        return _in_range(value, self.lo, self.hi, where, integer=True)

    def limits(self) -> str:
        return f"{_say(self.lo)} to {_say(self.hi)}"


@dataclass(frozen=True)
class Number(Whole):
    says: ClassVar[str] = "a number"

    def fits(self, value: object) -> bool:
        return _number_like(value)

    def check(self, value: Any, where: str) -> int | float:
        return _in_range(value, self.lo, self.hi, where, integer=False)


@dataclass(frozen=True)
class Flag(Kind):
    says: ClassVar[str] = "true or false"

    def fits(self, value: object) -> bool:
        return isinstance(value, bool)

    def check(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            raise PlanError(f"{where} must be true or false")
        return value


@dataclass(frozen=True)
class Text(Kind):
    says: ClassVar[str] = "a string"

    def fits(self, value: object) -> bool:
        return isinstance(value, str)

    def check(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise PlanError(f"{where} must be a string, not {value!r}")
        return value


@dataclass(frozen=True)
class Model(Text):
    """A model reference; what it names (a folder, a Hub repo id, a demo or shape) is
    workbench.plan.fields' to check."""

    def check(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise PlanError(f"{where} must be a model folder or a Hugging Face repo id")
        return value


@dataclass(frozen=True)
class Choice(Kind):
    """One of a few words: two said as `"a" or "b"`, more as `one of a, b, c`."""
    says: ClassVar[str] = "a string"
    values: tuple[str, ...] = ()

    @property
    def words(self) -> str:
        if len(self.values) == 2:
            return " or ".join(f'"{v}"' for v in self.values)
        return "one of " + ", ".join(self.values)

    def fits(self, value: object) -> bool:
        return isinstance(value, str)

    def check(self, value: Any, where: str) -> str:
        if value not in self.values:
            raise PlanError(f"{where} must be {self.words}, not {value!r}")
        return value

    def limits(self) -> str:
        return self.words


@dataclass(frozen=True)
class Wholes(Kind):
    """A whole number or a list of them (a single number is a list of one); a range when lo < hi."""
    says: ClassVar[str] = "a whole number or a list of whole numbers, e.g. [1, 4]"
    lo: float = 0
    hi: float = 0

    def fits(self, value: object) -> bool:
        return _whole(value) or (isinstance(value, list) and all(_whole(x) for x in value))

    def check(self, value: Any, where: str) -> list[int]:
        values = _list(value, where)
        if self.lo < self.hi and any(v < self.lo or v > self.hi for v in values):
            raise PlanError(f"{where} values must be between {self.lo:g} and {self.hi:g}, not {values}")
        return values

    def limits(self) -> str:
        return f"each {_say(self.lo)} to {_say(self.hi)}" if self.lo < self.hi else ""


@dataclass(frozen=True)
class Texts(Kind):
    """A string or a list of strings; `empty` lets a key that has nothing to say be left empty."""
    says: ClassVar[str] = 'a string or a list of strings, e.g. ["builtin"]'
    empty: bool = False

    def fits(self, value: object) -> bool:
        return isinstance(value, str) or (isinstance(value, list) and all(isinstance(x, str) for x in value))

    def check(self, value: Any, where: str) -> list[str]:
        if self.empty and not value:
            return []
        return _list(value, where, str)


@dataclass(frozen=True)
class Args(Texts):
    """Command-line arguments: a list of strings, which may be empty."""
    says: ClassVar[str] = "a list of strings"
    empty: bool = True


@dataclass(frozen=True)
class Repeats(Kind):
    says: ClassVar[str] = 'a whole number or "auto"'
    hi: int = 100

    def fits(self, value: object) -> bool:
        return _whole(value) or value == "auto"

    def check(self, value: Any, where: str) -> int | float | str:
        if value == "auto":
            return value
        if isinstance(value, str):
            raise PlanError(f'{where} must be a number or "auto", not {value!r}')
        return _in_range(value, 1, self.hi, where, integer=True)

    def limits(self) -> str:
        return f'1 to {self.hi}, or "auto"'


@dataclass(frozen=True)
class Prompts(Kind):
    """A count, or {per_concurrency = K, min = M}: max(M, K x concurrency) at each concurrency."""
    says: ClassVar[str] = "a whole number or {per_concurrency = K, min = M}"

    def fits(self, value: object) -> bool:
        return _whole(value) or (isinstance(value, dict) and all(_whole(x) for x in value.values()))

    def check(self, value: Any, where: str) -> int | float | dict[str, int | float]:
        if not isinstance(value, dict):
            return _in_range(value, 1, 100000, where, integer=True)
        if set(value) - {"per_concurrency", "min"} or "per_concurrency" not in value:
            raise PlanError(f"{where} must be a number or {{per_concurrency = K, min = M}}")
        return {"per_concurrency": _number(value, "per_concurrency", 1, 1, 10000, where, integer=True),
                "min": _number(value, "min", 1, 1, 100000, where, integer=True)}

    def limits(self) -> str:
        return "1 to 100,000; per_concurrency 1 to 10,000"


@dataclass(frozen=True)
class Table(Kind):
    says: ClassVar[str] = "a table"

    def fits(self, value: object) -> bool:
        return isinstance(value, dict)

    # Any, not a dict: Env, a table too, reads its table as sorted pairs.
    def check(self, value: Any, where: str) -> Any:
        if not isinstance(value, dict):
            raise PlanError(f"{where} must be a table")
        return value


@dataclass(frozen=True)
class Env(Table):
    """Environment variables: NAME = value, read as sorted (name, text) pairs."""
    says: ClassVar[str] = "a table of NAME = value"

    def fits(self, value: object) -> bool:
        return isinstance(value, dict) and all(isinstance(v, (str, int, float)) for v in value.values())

    def check(self, value: Any, where: str) -> tuple[tuple[str, str], ...]:
        if not self.fits(value):
            raise PlanError(f"{where} must be {self.says}")
        return tuple(sorted((str(k), str(v)) for k, v in value.items()))


@dataclass(frozen=True)
class Parallel(Kind):
    says: ClassVar[str] = 'a whole number or "auto"'

    def fits(self, value: object) -> bool:
        return _whole(value) or isinstance(value, str)

    def check(self, value: Any, where: str) -> int | str:
        try:
            return parse_parallel(value, where)
        except ValueError as exc:
            raise PlanError(str(exc)) from None

    def limits(self) -> str:
        return 'at least 1, or "auto"'


@dataclass(frozen=True)
class NameOrTable(Kind):
    """A saved launch profile's name or a profile table (read by workbench.plan.profiles)."""
    says: ClassVar[str] = "a string or a table"

    def fits(self, value: object) -> bool:
        return isinstance(value, (str, dict))
