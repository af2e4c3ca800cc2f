"""The sweep's one database writer (workbench.sweep.outbox): events go out only after the rows
sent before them are committed, and none after a write has failed."""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest

from workbench import events, messages, store
from workbench.sweep import outbox
from workbench.sweep.rows import PositionRow, RunSummary, SampleRow


def _summary(**figures) -> RunSummary:
    """A run's summary with nothing measured but `figures`."""
    blank = {f.name: None for f in dataclasses.fields(RunSummary) if f.default is dataclasses.MISSING}
    return RunSummary(**{**blank, "window_s": 1.0, "output_tokens": 10, "requests_ok": 1, "requests_failed": 0,
                         "alarms": "[]", **figures})


def _finished(run: int) -> events.RunFinished:
    return events.RunFinished(run=run, label=f"run {run}", output_tok_s=10.0, mal=None, acceptance_rate=None)


@pytest.fixture
def db_path(tmp_path):
    path = tmp_path / "results.sqlite"
    db = store.open_db(path)
    with db.conn:
        for key in ("a", "b"):
            db["runs"].insert({"key": key, "status": "running"})
    store.close(db)
    return path


def test_an_event_follows_the_rows_sent_before_it(db_path):
    seen = []

    def emit(event) -> None:
        # When the event goes out, the run it names is already stored as completed.
        db = store.open_db(db_path, readonly=True)
        seen.append((event.KIND, db["runs"].get(event.run)["status"]))
        store.close(db)

    writer = outbox.Writer(str(db_path), emit).start()
    sender = writer.sender()
    sender.record.run_completed(1, _summary(output_tok_s=10.0))
    sender.emit(_finished(1))
    writer.close()
    assert seen == [(events.Kind.RUN_FINISHED, "completed")]


def test_no_event_goes_out_after_a_failed_write(db_path):
    """A run's write fails (here SQLite refuses a column it does not have; on a full disk it
    refuses the bytes): the run's `run_finished`, sent after it, is not emitted, nor anything
    later, so no reader is told of rows that are not there. The sweep ends with the error."""
    emitted = []
    writer = outbox.Writer(str(db_path), emitted.append).start()
    sender = writer.sender()
    sender.emit(events.RunStarted(run=1, label="run 1", index=1, total=2))
    sender.record.telemetry([{"no_such_column": 1.0}])
    sender.record.run_completed(1, _summary(output_tok_s=10.0))
    sender.emit(_finished(1))
    sender.record.run_completed(2, _summary(output_tok_s=10.0))
    sender.emit(_finished(2))
    with pytest.raises(Exception, match="no_such_column"):
        writer.close()
    assert [e.KIND for e in emitted] == [events.Kind.RUN_STARTED]
    db = store.open_db(db_path, readonly=True)
    assert db["runs"].get(1)["status"] == "completed"  # the writes go on; the events stop
    store.close(db)


def test_each_write_is_a_recorder_operation_with_its_parameters():
    """The messages mirror the Recorder: each kind is an operation's name and its fields are that
    operation's parameters, so a call that would work on the database works through the writer,
    and nothing else is accepted."""
    import inspect

    ops = set(outbox.WRITES)
    assert "reset_runs" in ops and "run_completed" in ops and "sample" in ops
    for op, cls in outbox.WRITES.items():
        recorder = list(inspect.signature(getattr(store.Recorder, op)).parameters)[1:]
        assert [f.name for f in dataclasses.fields(cls)] == recorder, op
    record = outbox.Sender(lambda m: None).record
    with pytest.raises(AttributeError):
        record.cancel_running  # reads the database's runs: not a job's write
    with pytest.raises(TypeError):
        record.run_started(1, 2)  # the operation's parameters, no more


def one_of_each() -> list[outbox.WriterMessage]:
    """Every kind of message, with its optional fields set and unset."""
    sample = SampleRow(run_id=1, t=0.5, drafts=4.0, draft_tokens=12.0, accepted=6.0, generation_tokens=20.0,
                       output_tokens=18, mal=2.5, acceptance_rate=0.5, output_tok_s=None, running=2.0, waiting=0.0,
                       kv_cache_usage=None)
    positions = [PositionRow(run_id=1, t=0.5, position=1, accepted=4.0, drafts=4.0, acceptance=1.0)]
    found = [
        outbox.LogLines(1, [(1.0, "stderr", "hello")]), outbox.Telemetry([{"run_id": 1, "t": 1.0, "device": "gpu"}]),
        outbox.ServerCommand([1, 2], "vllm serve m", ["--port", "8000"]), outbox.ServerPlacement([1], [0, 1], {"A": "1"}),
        outbox.ServerPlacement([2], None, {}), outbox.ServerEnvironment([1], {"kind": "local"}),
        outbox.ServerProvenance([1], {"vllm_version": "0.11"}), outbox.RunStarted(1), outbox.PromptsSeen(1, False),
        outbox.PromptsSeen(2, True, ["suffix reuse"]), outbox.Sample(3, sample, positions, [{"run_id": 1, "ok": 1}]),
        outbox.RunCompleted(1, _summary(output_tok_s=10.0, per_position="[0.5]", energy_j=12.5)),
        outbox.RunPartial(2, _summary(warnings='["busy"]'), "1 of 4 requests failed"),
        outbox.RunFailed(1, "no server", "tail"), outbox.RunSkipped(2, "enough repeats"), outbox.Heartbeat(3, 1.5),
        outbox.ResetRuns([1, 2]), outbox.Emitted(_finished(1)),
    ]
    assert {type(m).KIND for m in found} == set(outbox.WriterMessage.KINDS)
    return found


def test_messages_cross_a_process_boundary_as_plain_data():
    sent = []
    sender = outbox.Sender(sent.append)
    sender.record.log_lines(1, [(1.0, "stderr", "hello")])
    sender.record.prompts_seen(2, True)
    sender.record.run_completed(1, _summary(output_tok_s=10.0))
    sender.emit(_finished(1))
    assert [type(m) for m in sent] == [outbox.LogLines, outbox.PromptsSeen, outbox.RunCompleted, outbox.Emitted]
    assert sent[1] == outbox.PromptsSeen(2, True, None)
    plain = [outbox.encode(m) for m in sent]
    assert plain[2]["op"] == "run_completed" and plain[2]["summary"]["output_tok_s"] == 10.0
    assert "energy_j" not in plain[2]["summary"] and plain[2]["summary"]["mal"] is None  # unknown vs measured as none
    assert plain[3] == {"op": "event", "event": _finished(1).to_json()}
    for message in one_of_each():
        data = outbox.encode(message)
        assert pickle.loads(pickle.dumps(data)) == data
        assert outbox.decode(pickle.loads(pickle.dumps(data))) == message
        assert outbox.decode(json.loads(json.dumps(data))) == message  # tuples become lists, and back
    for bad in ({"op": "drop_table", "run_id": 1}, {"op": "run_completed", "run": 1}, ["rec", "sample"], {"op": "event"},
                {"op": "run_started", "run_id": "1"}, {"op": "event", "event": {"event": "gpu_throttled"}},
                {"op": "run_completed", "run_id": 1, "summary": {"output_tok_s": 10.0}}):
        with pytest.raises(ValueError):
            outbox.decode(bad)
    with pytest.raises(messages.UnknownKindError, match="unknown op 'drop_table'"):
        outbox.decode({"op": "drop_table", "run_id": 1})


def test_a_decoded_message_is_applied_like_the_call(db_path):
    writer = outbox.Writer(str(db_path), lambda e: None).start()
    writer.put(outbox.decode({"op": "run_failed", "run_id": 2, "error": "no server", "log_tail": "tail"}))
    writer.close()
    db = store.open_db(db_path, readonly=True)
    row = db["runs"].get(2)
    store.close(db)
    assert (row["status"], row["error"], row["log_tail"]) == ("failed", "no server", "tail")
