"""A stored run as a typed record: built from a row however old its file, and back to the row."""

import json
import os

import pytest

from workbench import store


def _stored(tmp_path, **columns):
    db = store.open_db(tmp_path / "r.sqlite")
    exp = store.experiment_for(db, "e", "h", "", "", {})
    row = {"experiment_id": exp, "key": "k", "seq": 0, "target": "t", "method": "ngram", "n": 2, "workload": "w",
           "concurrency": 4, "status": "completed", **columns}
    return db, store.add_imported_run(db, row)


def test_a_stored_run_reads_back_typed_with_its_curve_decoded_once(tmp_path):
    db, run_id = _stored(tmp_path, per_position=json.dumps([0.75, 0.5]), mal=2.25, output_tok_s=10.0)
    record = store.run(db, run_id)
    assert isinstance(record, store.RunRecord)
    assert record.id == run_id and record.method == "ngram" and record.n == 2 and record.mal == 2.25
    assert record.per_position == (0.75, 0.5)
    assert record.status is store.RunStatus.COMPLETED and record.status == "completed"
    assert record.draft is None and record.redone_by is None
    with pytest.raises(AttributeError):
        record.mal = 3.0  # type: ignore[misc]


def test_every_column_of_the_runs_table_is_a_field(tmp_path):
    db, _ = _stored(tmp_path)
    assert set(db["runs"].columns_dict) == set(store.RUN_FIELDS)


def test_a_row_from_an_older_file_lacks_columns_and_extra_keys_are_ignored():
    record = store.run_record({"id": 1, "experiment_id": 2, "status": "pending", "tags": "x", "mal": None})
    assert record.status is store.RunStatus.PENDING and record.what_if is None and record.per_position is None


def test_every_status_the_recorder_writes_is_known():
    assert {s.value for s in store.RunStatus} == {"pending", "running", "completed", "partial", "failed",
                                                  "skipped", "cancelled"}


def test_a_row_without_its_identity_or_with_an_unknown_status_is_refused():
    with pytest.raises(store.StoreError, match="no status"):
        store.run_record({"id": 1, "experiment_id": 2})
    with pytest.raises(store.StoreError, match="unknown status 'odd'"):
        store.run_record({"id": 1, "experiment_id": 2, "status": "odd"})


def test_as_dict_gives_the_row_as_stored(tmp_path):
    db, run_id = _stored(tmp_path, per_position=json.dumps([0.75, 0.5]), mal=2.25)
    stored = db["runs"].get(run_id)
    assert store.run(db, run_id).as_dict() == stored
    assert store.run_record(dict(stored)).as_dict() == stored
    assert store.run_record(stored).as_dict() == stored


def test_a_sweep_in_progress_reads_back_as_a_record(tmp_path):
    db = store.open_db(tmp_path / "r.sqlite")
    exp = store.experiment_for(db, "e", "h", "", "", {})
    sweep_id = store.Recorder(db).sweep_started(exp, "events.jsonl", 1.0, 2, 2)
    (found,) = store.active_sweeps(db, stale_after_s=float("inf"))
    assert isinstance(found, store.SweepRecord) and found.id == sweep_id and found.pid == os.getpid()
    assert (found.events_path, found.status, found.runs_pending, found.finished) == ("events.jsonl", "running", 2, None)
    assert set(db["sweeps"].columns_dict) == set(store.records.SWEEP_FIELDS)


def test_experiments_read_back_as_records(tmp_path):
    db = store.open_db(tmp_path / "r.sqlite")
    exp = store.experiment_for(db, "my sweep", "h", "", "", {})
    (found,) = store.experiments(db)
    assert store.experiment(db, exp) == found and store.experiment(db, exp + 1) is None
    assert found == store.ExperimentRecord(exp, "my sweep", found.created) and found.created > 0
