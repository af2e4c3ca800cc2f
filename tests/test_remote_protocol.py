"""The follow stream's messages (workbench.remote.protocol) without SSH: the wire lines as every
version writes them, and a host database carried into a local one by the agent's messages, as
the stream applies them."""

from __future__ import annotations

import io
import json

import pytest

from workbench import events, store
from workbench.remote import RemoteHost, protocol
from workbench.remote.agent import Follower
from workbench.remote.control import Launched
from workbench.remote.stream import Stream

P = protocol

# The wire format: these lines were written by earlier versions and must keep parsing as they are.
WIRE = {
    '{"k":"rows","t":"samples","rows":[{"id":3,"run_id":1,"t":0.5}]}': P.Rows("samples", [{"id": 3, "run_id": 1, "t": 0.5}]),
    '{"k":"reset","t":"positions","run":7}': P.Reset("positions", 7),
    '{"k":"ev","line":"{\\"event\\":\\"run_started\\"}","off":24}': P.EventLine('{"event":"run_started"}', 24),
    '{"k":"beat","t":1700000000.5}': P.Beat(1700000000.5),
    '{"k":"end"}': P.End(),
    # The local side's first line, which carried no kind before.
    '{"cursors":{"samples":4},"signature":{"samples":{"1":[4,4]}}}': P.Resume({"samples": 4}, {"samples": {"1": [4, 4]}}),
    '{}': P.Resume(),
}


@pytest.mark.parametrize("line", WIRE)
def test_lines_of_every_version_decode(line):
    assert P.decode(line) == WIRE[line]
    assert P.decode(line.encode()) == WIRE[line]


@pytest.mark.parametrize("message", list(WIRE.values()))
def test_each_message_round_trips_with_the_short_keys(message):
    line = P.encode(message)
    assert "\n" not in line and P.decode(line) == message
    kind = json.loads(line)["k"]
    assert kind == {P.Rows: "rows", P.Reset: "reset", P.EventLine: "ev", P.Beat: "beat", P.End: "end",
                    P.Resume: "resume"}[type(message)]


@pytest.mark.parametrize("line", [
    "", "\n", '{"k":"rows","t":"samples","ro', "not json", "[1, 2]", b"\xff\xfe",
    '{"k":"compressed","data":"..."}',       # a kind of a newer version
    '{"k":"rows","t":"samples"}',           # a known kind without its fields
    '{"k":"reset","t":"samples","run":"7"}',
    '{"k":"ev","line":5,"off":1}',
])
def test_what_is_not_a_message_decodes_to_none(line):
    assert P.decode(line) is None


def test_encode_refuses_what_is_not_a_message():
    with pytest.raises(TypeError):
        P.encode({"k": "end"})


def _host_db(path):
    db = store.open_db(path)
    exp = store.experiment_for(db, "synthetic", "hash-1", "name = 'synthetic'", "p.toml", {})
    with db.conn:
        runs = [db["runs"].insert({"experiment_id": exp, "key": k, "status": "completed"}).last_pk for k in "ab"]
    for run, n, base in zip(runs, (5, 4), (100.0, 200.0)):
        _samples(db, run, n, base)
    return db, runs


def _samples(db, run_id: int, n: int, base: float) -> None:
    with db.conn:
        db["samples"].insert_all([{"run_id": run_id, "t": base + i, "mal": 1.0 + i / 10} for i in range(n)])


def _follow(host_path, stream: Stream, events_path=None) -> list[str]:
    """One connection: the agent's lines for where the stream's mirror stands, then applied by it."""
    state = stream.mirror.state()
    resume = P.decode(P.encode(P.Resume(state.cursors, state.signature)))
    out = io.StringIO()
    Follower(str(host_path), events_path and str(events_path), stream.offset, resume, out).run(None)
    lines = out.getvalue().splitlines()
    assert [stream.receive(P.decode(line)) for line in lines][-1] is True  # it ends with End
    return lines


def test_a_host_database_is_mirrored_resumed_and_repaired_through_the_messages(tmp_path):
    host_path = tmp_path / "host.sqlite"
    there, runs = _host_db(host_path)
    events_path = tmp_path / "events.jsonl"
    events_path.write_text(events.dumps(events.RunStarted(run=runs[1], label="b", index=2, total=2)) + "\n")
    local = store.open_db(tmp_path / "local.sqlite")
    with local.conn:  # rows of its own first, so the host's ids differ from the local ones
        exp = local["experiments"].insert({"name": "here", "plan_hash": "other"}).last_pk
        local["runs"].insert({"experiment_id": exp, "key": "here", "status": "completed"})
    out = io.StringIO()
    stream = Stream(RemoteHost("box"), Launched(0, str(events_path), str(host_path), "", ""), local, out)
    source = stream.mirror.source

    def same() -> None:
        for table in ("experiments", "runs", "samples"):
            assert store.mirrored_rows(local, source, table) == list(there[table].rows_where(order_by="id")), table

    first = _follow(host_path, stream, events_path)
    same()
    assert all(isinstance(P.decode(line), (P.Rows, P.EventLine, P.Beat, P.End)) for line in first)
    # The event names the host's run by the local id of the mirrored row.
    [event] = [events.parse(line) for line in out.getvalue().splitlines()]
    assert event.run == stream.mirror.ids["runs"][runs[1]] != runs[1]
    assert stream.offset == events_path.stat().st_size
    # A reconnect resumes: no appended row is sent again (the few mutable ones are, once).
    again = [P.decode(line) for line in _follow(host_path, stream, events_path)]
    assert {m.table for m in again if isinstance(m, P.Rows)} <= set(store.MUTABLE_TABLES)
    same()
    # The second run is redone on the host: its rows go and the new ones reuse the freed ids.
    with there.conn:
        there.execute("DELETE FROM samples WHERE run_id = ?", [runs[1]])
    _samples(there, runs[1], 6, 300.0)
    repaired = [P.decode(line) for line in _follow(host_path, stream)]
    assert P.Reset("samples", runs[1]) in repaired
    same()


def test_rows_of_a_table_the_local_schema_lacks_are_skipped(tmp_path):
    local = store.open_db(tmp_path / "local.sqlite")
    mirror = store.Mirror(local, "box:db")
    mirror.apply_rows("no_such_table", [{"id": 1, "x": 2}])
    mirror.reset_run("no_such_table", 1)
    mirror.reset_run("samples", 99)  # a run it never received
    assert "no_such_table" not in local.table_names()


def test_the_stream_keeps_why_the_hosts_sweep_stopped(tmp_path):
    local = store.open_db(tmp_path / "local.sqlite")
    out = io.StringIO()
    stream = Stream(RemoteHost("box"), Launched(0, "ev.jsonl", "host.sqlite", "", ""), local, out)
    for n, event in enumerate([events.RunFailed(run=1, error="no server"),
                               events.SweepFinished(experiment=1, seconds=3.0, error="the results database cannot be used: disk I/O error")]):
        assert stream.receive(P.EventLine(events.dumps(event), 10 * (n + 1))) is False
    assert stream.error == "the results database cannot be used: disk I/O error" and stream.offset == 20
    assert [events.parse(line) for line in out.getvalue().splitlines()][-1].error == stream.error
    # Lines that are not events pass through untouched.
    for line in ("[1, 2]", "not json"):
        stream.receive(P.EventLine(line, 30))
    assert out.getvalue().splitlines()[-2:] == ["[1, 2]", "not json"]


def test_events_of_another_version_name_the_local_ids_too(tmp_path):
    local = store.open_db(tmp_path / "local.sqlite")
    out = io.StringIO()
    stream = Stream(RemoteHost("box"), Launched(0, "ev.jsonl", "host.sqlite", "", ""), local, out)
    stream.mirror.ids["runs"][7] = 2
    stream.mirror.ids["experiments"][3] = 1
    newer = '{"event":"gpu_throttled","run":7,"experiment":3,"clock_mhz":900}'
    for n, line in enumerate([newer, events.dumps(events.Alarm(run=7, kind="collapsed", message="m"))]):
        stream.receive(P.EventLine(line, n + 1))
    other, alarm = [events.parse(line) for line in out.getvalue().splitlines()]
    assert isinstance(other, events.Other) and other.fields == {"run": 2, "experiment": 1, "clock_mhz": 900}
    assert alarm == events.Alarm(run=2, kind="collapsed", message="m")


def test_the_stamp_of_a_host_row_is_read_typed():
    assert P.stamp({"id": 3, "run_id": 1, "t": 2, "mal": 1.5}) == P.Stamp(3, 1, 2.0)
    assert P.stamp({"id": 1, "status": "pending", "key": "a"}).status == "pending"
    for damaged in ({"id": "3"}, {"id": 3, "t": "soon"}, {"id": 3, "run_id": 1.5}):
        with pytest.raises(ValueError):
            P.stamp(damaged)
