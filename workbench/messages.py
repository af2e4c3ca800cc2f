"""One base for the messages that cross a process boundary as plain data, and the one codec between
them and that data: the events a sweep or a training run writes (workbench.events), the writes a
server's job sends the sweep's one database writer (workbench.sweep.outbox), and the lines of a
remote sweep's SSH stream (workbench.remote.protocol).

A family of messages is a subclass of `Message` that names the key its kinds are written under
(TAG: "event", "op", "k"); each member is a frozen dataclass that names its kind (KIND, the value
written under that key) and declares typed fields. As plain data a message is one object,
{TAG: KIND, ...its fields}: a field is written under its own name unless its metadata names
another key (`key("t")`, a wire format's short key); a field whose default is None is left out
while None; a `REST` field (a dict) holds what a kind carries beyond its named fields, flat beside
them. Files and streams written by other versions must keep decoding, so a key may be added but
never renamed. A field may also hold a typed record (any frozen dataclass: a run's summary), which
is written as an object of its fields by the same rules, without a tag.

`decode` checks what arrives against the fields' annotations (a float field takes an integer; a
record or message inside is decoded in turn), ignores keys it does not know (a newer version's),
and raises MessageError, one line naming the kind and the key, for anything else: UnknownKindError for a
kind the family does not have. Each reader decides what that costs it: the events keep such a line
whole as `events.Other`, the stream skips it, the outbox ends the worker that sent it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin

from workbench.errors import DraftbenchError

# Field metadata: REST marks the dict of keys beyond the named fields; `key` a field's other name.
REST = {"rest": True}
_WIRE = "wire"

T = TypeVar("T")


def key(name: str) -> dict[str, str]:
    """A field's metadata: it is written under `name`, not under its own name."""
    return {_WIRE: name}


class MessageError(DraftbenchError, ValueError):
    """Plain data that is not the message or record asked for; says which kind and which key."""


class UnknownKindError(MessageError):
    """A kind its family does not have: one of another version's, or not a message at all."""


class Message:
    """The base of every message. A direct subclass that sets TAG starts a family (its kinds are
    registered in its KINDS as they are defined); a subclass that sets KIND is a member."""

    TAG: ClassVar[str]
    KIND: ClassVar[str | None] = None
    KINDS: ClassVar[dict[str, type[Message]]]
    # Every member is a dataclass; declared so that type checkers let dataclasses.fields read one.
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "TAG" in vars(cls):
            cls.KINDS = {}
        kind = vars(cls).get("KIND")
        if kind is not None:
            if kind in cls.KINDS:
                raise TypeError(f"two kinds {kind!r} under {cls.TAG!r}: {cls.KINDS[kind].__name__}, {cls.__name__}")
            cls.KINDS[kind] = cls


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    key: str
    type: Any
    required: bool
    omitted_while_none: bool
    rest: bool
    nested: bool  # its annotation names a record or message, written field by field


@functools.cache
def _nests(tp: Any) -> bool:
    if isinstance(tp, type) and (issubclass(tp, Message) or dataclasses.is_dataclass(tp)):
        return True
    return any(_nests(arg) for arg in get_args(tp))


@functools.cache
def _fields(cls: Any) -> tuple[_Field, ...]:
    # The annotations are strings (postponed evaluation): resolved once per class, in its module.
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        tp = hints.get(f.name, Any)
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append(_Field(f.name, f.metadata.get(_WIRE, f.name), tp, required, f.default is None,
                          bool(f.metadata.get("rest")), _nests(tp)))
    return tuple(out)


# -- encoding -----------------------------------------------------------------------------------------
def encode(obj: Any) -> dict[str, Any]:
    """A message as plain data ({TAG: KIND, ...its fields}), or a typed record as {...its fields}.
    Raises TypeError for anything else (a programming error, not bad data)."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        raise TypeError(f"not a message or record: {type(obj).__name__}")
    if not isinstance(obj, Message):
        return _write(obj, {}, None)
    cls = type(obj)
    out = {} if cls.KIND is None else {cls.TAG: str(cls.KIND)}
    _write(obj, out, cls.TAG)
    if cls.TAG not in out:  # a kind-less member must carry its kind in a field (events.Other)
        raise TypeError(f"{cls.__name__} names no kind")
    return out


def dumps(obj: Any) -> str:
    """`encode`'s data as one compact JSON line (without the newline)."""
    return json.dumps(encode(obj), separators=(",", ":"))


def _write(obj: Any, out: dict[str, Any], tag: str | None) -> dict[str, Any]:
    for f in _fields(obj.__class__):
        value = getattr(obj, f.name)
        if f.rest:
            out.update((k, v) for k, v in value.items() if k != tag)
        elif value is not None or not f.omitted_while_none:
            out[f.key] = _plain(value) if f.nested else value
    return out


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return encode(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


# -- decoding -----------------------------------------------------------------------------------------
def decode(obj: Any, cls: type[T]) -> T:
    """The message of `encode`'s data, of the family (or the kind) `cls`; or the record `cls`,
    where it is a plain dataclass. Raises MessageError when `obj` is not one."""
    if not (isinstance(cls, type) and issubclass(cls, Message)):
        if not isinstance(obj, dict):
            raise MessageError(f"{cls.__name__}: not an object but {_what(obj)}")
        return cls(**_read(cls, obj, cls.__name__, None))
    if not isinstance(obj, dict):
        raise MessageError(f"not a message but {_what(obj)}")
    kind = obj.get(cls.TAG)
    member = cls.KINDS.get(kind) if isinstance(kind, str) else None
    if member is None or not issubclass(member, cls):
        known = ", ".join(sorted(k for k, c in cls.KINDS.items() if issubclass(c, cls)))
        raise UnknownKindError(f"unknown {cls.TAG} {kind!r} (known: {known})")
    return member(**_read(member, obj, str(kind), cls.TAG))


def _read(cls: type, obj: dict[str, Any], kind: str, tag: str | None) -> dict[str, Any]:
    values: dict[str, Any] = {}
    named = {tag}
    rest = None
    for f in _fields(cls):
        if f.rest:
            rest = f
            continue
        named.add(f.key)
        if f.key not in obj:
            if f.required:
                raise MessageError(f"{kind}: no {f.key!r}")
            continue
        try:
            values[f.name] = _value(f.type, obj[f.key])
        except MessageError as exc:
            raise MessageError(f"{kind}: {f.key!r} {exc}") from None
    if rest is not None:
        values[rest.name] = {k: v for k, v in obj.items() if k not in named}
    return values


def _value(tp: Any, value: Any) -> Any:
    """`value` as the annotation `tp` types it; MessageError (saying what it is not) otherwise."""
    origin = get_origin(tp)
    if origin is Union or origin is types.UnionType:
        if value is None and type(None) in get_args(tp):
            return None
        for arg in get_args(tp):
            try:
                return _value(arg, value)
            except MessageError:
                continue
        raise MessageError(f"is {_what(value)}, not {_name(tp)}")
    base = origin or tp
    if base is Any or not isinstance(base, type):
        return value  # an annotation the codec does not read: taken as it is
    if issubclass(base, Message) or dataclasses.is_dataclass(base):
        return decode(value, base)
    if base is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if base is tuple and isinstance(value, (list, tuple)):
        args = get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], v) for v in value)
        if args and len(args) != len(value):
            raise MessageError(f"has {len(value)} items, not {len(args)}")
        return tuple(_value(a, v) for a, v in zip(args, value)) if args else tuple(value)
    if not isinstance(value, base) or (isinstance(value, bool) and base is not bool):
        raise MessageError(f"is {_what(value)}, not {_name(tp)}")
    args = get_args(tp)
    if isinstance(value, list) and args:
        return [_value(args[0], v) for v in value]
    if isinstance(value, dict) and len(args) == 2 and _nests(args[1]):
        return {k: _value(args[1], v) for k, v in value.items()}
    return value


def _what(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__}"


def _name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")
