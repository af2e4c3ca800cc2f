"""The sweep's one database writer (workbench.sweep.outbox): events go out only after the rows
sent before them are committed, and none after a write has failed."""

from __future__ import annotations

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
