"""The sweep's one database writer (workbench.sweep.outbox): events go out only after the rows
sent before them are committed, and none after a write has failed."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from workbench import events, store
from workbench.sweep import outbox


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
    sender.record.run_completed(1, {"output_tok_s": 10.0})
    sender.emit(_finished(1))
    writer.close()
    assert seen == [(events.Kind.RUN_FINISHED, "completed")]


def test_no_event_goes_out_after_a_failed_write(db_path):
    """A run's completion fails to be written (here SQLite refuses a column it does not have; on a
    full disk it refuses the bytes): the run's `run_finished`, sent after it, is not emitted, nor
    anything later, so no reader is told of rows that are not there. The sweep ends with the error."""
    emitted = []
    writer = outbox.Writer(str(db_path), emitted.append).start()
    sender = writer.sender()
    sender.emit(events.RunStarted(run=1, label="run 1", index=1, total=2))
    sender.record.run_completed(1, {"no_such_column": 1.0})
    sender.emit(_finished(1))
    sender.record.run_completed(2, {"output_tok_s": 10.0})
    sender.emit(_finished(2))
    with pytest.raises(Exception, match="no_such_column"):
        writer.close()
    assert [e.KIND for e in emitted] == [events.Kind.RUN_STARTED]
    db = store.open_db(db_path, readonly=True)
    assert db["runs"].get(1)["status"] == "running"
    store.close(db)


def test_each_write_is_a_recorder_operation_with_its_parameters():
    """The job's Record and the messages mirror the Recorder: same names, same parameters, so a
    call that would work on the database works through the writer, and nothing else is accepted."""
    import inspect

    ops = set(outbox.WRITES)
    assert "reset_runs" in ops and "run_completed" in ops and "sample" in ops
    for op, cls in outbox.WRITES.items():
        recorder = list(inspect.signature(getattr(store.Recorder, op)).parameters)[1:]
        sender = list(inspect.signature(getattr(outbox.Record, op)).parameters)[1:]
        fields = [f.name for f in dataclasses.fields(cls)]
        assert recorder == sender, op
        assert len(fields) == len(recorder), op
    public = {name for name in vars(outbox.Record) if not name.startswith("_")}
    assert public == ops
    with pytest.raises(AttributeError):
        outbox.Sender(lambda m: None).record.cancel_running  # reads the database's runs: not a job's write


def test_messages_cross_a_process_boundary_as_plain_data():
    sent = []
    sender = outbox.Sender(sent.append)
    sender.record.log_lines(1, [(1.0, "stderr", "hello")])
    sender.record.prompts_seen(2, True)
    sender.record.run_completed(1, {"output_tok_s": 10.0})
    sender.emit(_finished(1))
    assert [type(m) for m in sent] == [outbox.LogLines, outbox.PromptsSeen, outbox.RunCompleted, outbox.Emitted]
    assert sent[1] == outbox.PromptsSeen(2, True, None)
    plain = [outbox.encode(m) for m in sent]
    assert plain[2] == {"op": "run_completed", "run_id": 1, "summary": {"output_tok_s": 10.0}}
    assert plain[3] == {"op": "event", "event": _finished(1).to_json()}
    assert pickle.loads(pickle.dumps(plain)) == plain
    assert [outbox.decode(p) for p in plain] == sent
    for bad in ({"op": "drop_table", "run_id": 1}, {"op": "run_completed", "run": 1}, ["rec", "sample"], {"op": "event"}):
        with pytest.raises(ValueError):
            outbox.decode(bad)


def test_a_decoded_message_is_applied_like_the_call(db_path):
    writer = outbox.Writer(str(db_path), lambda e: None).start()
    writer.put(outbox.decode({"op": "run_failed", "run_id": 2, "error": "no server", "log_tail": "tail"}))
    writer.close()
    db = store.open_db(db_path, readonly=True)
    row = db["runs"].get(2)
    store.close(db)
    assert (row["status"], row["error"], row["log_tail"]) == ("failed", "no server", "tail")
