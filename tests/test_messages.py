"""The one message base and codec (workbench.messages): every kind of every family round-trips
through it, events files written before it still read, and what is not a message says why."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from test_events import EXAMPLES
from test_outbox import one_of_each
from workbench import events, messages
from workbench.remote import protocol
from workbench.sweep import outbox

FIXTURES = Path(__file__).resolve().parent / "fixtures"

STREAM = [protocol.Resume({"samples": 4}, {"samples": {"1": [4, 4]}}), protocol.Resume(),
          protocol.Rows("samples", [{"id": 3, "run_id": 1, "t": 0.5}]), protocol.Reset("positions", 7),
          protocol.EventLine('{"event":"run_started"}', 24), protocol.Beat(1700000000.5), protocol.End()]


def _every_message() -> list[messages.Message]:
    return [*EXAMPLES.values(), *one_of_each(), *STREAM]


@pytest.mark.parametrize("family", [events.Event, outbox.WriterMessage, protocol.StreamMessage], ids=lambda f: f.TAG)
def test_every_kind_of_every_family_has_an_example(family):
    assert {type(m).KIND for m in _every_message() if isinstance(m, family)} == set(family.KINDS)


@pytest.mark.parametrize("message", _every_message(), ids=lambda m: f"{type(m).TAG}={type(m).KIND}")
def test_every_kind_round_trips_through_the_one_codec(message):
    family = next(f for f in (events.Event, outbox.WriterMessage, protocol.StreamMessage) if isinstance(message, f))
    data = messages.encode(message)
    assert data[family.TAG] == type(message).KIND
    assert messages.decode(data, family) == message
    # Through JSON as a file or the SSH stream carries it, and decoded as its own kind.
    assert messages.decode(json.loads(messages.dumps(message)), type(message)) == message


def test_an_events_file_written_before_the_codec_still_reads():
    # Lines as the hand-written events codec wrote them: every kind a sweep, an adaptive sweep and
    # a training run sent, and a kind of a newer version. They decode to the records and back to
    # the very same lines.
    lines = (FIXTURES / "events_v1.jsonl").read_text(encoding="utf-8").splitlines()
    read = [events.parse(line) for line in lines]
    assert all(e is not None for e in read)
    assert {e.KIND for e in read if not isinstance(e, events.Other)} == set(events.Kind)
    assert [e.event for e in read if isinstance(e, events.Other)] == ["gpu_throttled"]
    assert [events.dumps(e) for e in read] == lines
    finished = [e for e in read if isinstance(e, events.RunFinished)]
    assert finished[0].mal is None and finished[1].mal == 2.31
    assert read[19] == events.StepFinished(step="prompts", info={"prompts": 64, "seconds": 0.4})


# -- the codec's rules, on a family of its own ----------------------------------------------------------
class Note(messages.Message):
    TAG = "note"


@dataclass(frozen=True)
class Reading:
    gpu: int
    watts: float | None


@dataclass(frozen=True)
class Power(Note):
    KIND = "power"
    host: str = field(metadata=messages.key("h"))
    readings: list[Reading]
    span: tuple[float, float]
    limit_w: float | None = None
    extra: dict = field(default_factory=dict, metadata=messages.REST)


def test_keys_nesting_and_what_is_left_out():
    power = Power("gpu-box", [Reading(0, 310.5), Reading(1, None)], (1.0, 2.0), extra={"driver": "550"})
    data = messages.encode(power)
    assert data == {"note": "power", "h": "gpu-box", "readings": [{"gpu": 0, "watts": 310.5}, {"gpu": 1, "watts": None}],
                    "span": (1.0, 2.0), "driver": "550"}
    assert messages.decode(json.loads(json.dumps(data)), Note) == power
    # An integer where a float is declared is taken as the float it stands for.
    assert messages.decode({"note": "power", "h": "a", "readings": [], "span": [1, 2], "limit_w": 300}, Note) == \
        Power("a", [], (1.0, 2.0), 300.0)


@pytest.mark.parametrize("data, said", [
    ({"note": "energy"}, "unknown note 'energy' (known: power)"),
    ({"h": "a"}, "unknown note None (known: power)"),
    ({"note": "power", "readings": [], "span": [1, 2]}, "power: no 'h'"),
    ({"note": "power", "h": 3, "readings": [], "span": [1, 2]}, "power: 'h' is a int, not str"),
    ({"note": "power", "h": "a", "readings": [{"gpu": True, "watts": 1.0}], "span": [1, 2]},
     "power: 'readings' Reading: 'gpu' is a bool, not int"),
    ({"note": "power", "h": "a", "readings": [], "span": [1, 2, 3]}, "power: 'span' has 3 items, not 2"),
    ({"note": "power", "h": "a", "readings": [], "span": [1, 2], "limit_w": "high"}, "power: 'limit_w' is a str"),
    ([1, 2], "not a message but a list"),
])
def test_what_is_not_a_message_raises_one_error_saying_why(data, said):
    with pytest.raises(messages.MessageError) as raised:
        messages.decode(data, Note)
    assert said in str(raised.value) and "\n" not in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_an_unknown_kind_is_its_own_error_and_encode_refuses_what_is_not_a_message():
    with pytest.raises(messages.UnknownKindError):
        messages.decode({"note": "energy"}, Note)
    with pytest.raises(TypeError):
        messages.encode({"note": "power"})
    with pytest.raises(TypeError, match="two kinds 'power'"):
        @dataclass(frozen=True)
        class Again(Note):
            KIND = "power"
