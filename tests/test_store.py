"""The results database: schema versions, migrations, and refusing files it must not touch."""

import sqlite3

import pytest

from workbench import store


def test_new_database_is_wal_and_current(tmp_path):
    db = store.open_db(tmp_path / "r.sqlite")
    assert store.schema_version(db) == store.SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert {"experiments", "runs", "samples", "positions", "requests", "logs", "sweeps"} <= set(db.table_names())


def test_version_1_is_migrated_without_losing_rows(tmp_path):
    path = tmp_path / "old.sqlite"
    db = store.open_db(path)
    # Turn it back into what version 1 wrote: no sweeps table, no acceptance column.
    db.execute("DROP TABLE sweeps")
    db["positions"].transform(drop={"acceptance"})
    db["requests"].transform(drop={"category"})
    db["runs"].transform(drop={"prompt_template", "ignore_eos", "warnings"})
    db["meta"].upsert({"key": "schema_version", "value": "1"}, pk="key")
    exp = store.experiment_for(db, "e", "h", "", "", {})
    run = db["runs"].insert({"experiment_id": exp, "key": "k", "status": "completed", "mal": 2.5}).last_pk
    db["positions"].insert({"run_id": run, "t": 1.0, "position": 1, "accepted": 3, "drafts": 4})
    db.conn.commit()
    db.conn.close()
    db = store.open_db(path)
    assert store.schema_version(db) == store.SCHEMA_VERSION
    assert store.run(db, run)["mal"] == 2.5
    assert "acceptance" in db["positions"].columns_dict and db["positions"].count == 1
    assert "category" in db["requests"].columns_dict and "warnings" in db["runs"].columns_dict


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "new.sqlite"
    db = store.open_db(path)
    db["meta"].upsert({"key": "schema_version", "value": "99"}, pk="key")
    db.conn.commit()
    db.conn.close()
    with pytest.raises(store.StoreError, match="newer Draftbench"):
        store.open_db(path)
    with pytest.raises(store.StoreError, match="newer Draftbench"):
        store.open_db(path, readonly=True)


def test_other_sqlite_file_is_left_alone(tmp_path):
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    with pytest.raises(store.StoreError, match="not a Draftbench one"):
        store.open_db(path)
    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["notes"]


def test_corrupt_file_is_refused(tmp_path):
    path = tmp_path / "corrupt.sqlite"
    path.write_bytes(b"\x00garbage" * 1000)
    with pytest.raises(store.StoreError, match="not a usable Draftbench database"):
        store.open_db(path)
    assert path.read_bytes() == b"\x00garbage" * 1000


def test_delete_run_removes_its_rows_only(tmp_path):
    db = store.open_db(tmp_path / "r.sqlite")
    exp = store.experiment_for(db, "e", "h", "", "", {})
    a = db["runs"].insert({"experiment_id": exp, "key": "a", "status": "completed"}).last_pk
    b = db["runs"].insert({"experiment_id": exp, "key": "b", "status": "completed"}).last_pk
    for run in (a, b):
        db["samples"].insert({"run_id": run, "t": 0.5})
        db["logs"].insert({"run_id": run, "t": 0.5, "line": "x"})
    store.delete_run(db, a)
    assert [r["id"] for r in store.runs(db)] == [b]
    assert db["samples"].count == 1 and db["logs"].count == 1
