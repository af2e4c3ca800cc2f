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
    assert store.run(db, run).mal == 2.5
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
    assert [r.id for r in store.runs(db)] == [b]
    assert db["samples"].count == 1 and db["logs"].count == 1


def test_version_5_with_or_without_a_mirror_table_is_migrated(tmp_path):
    # Before version 6 the remote mirror made `remote_rows` itself on first use: both kinds of
    # file open, and the mapping a mirror had written survives.
    for had_mirror in (False, True):
        path = tmp_path / f"v5-{had_mirror}.sqlite"
        db = store.open_db(path)
        db.execute("DROP TABLE remote_rows")
        if had_mirror:
            db.execute("CREATE TABLE remote_rows (source TEXT NOT NULL, tbl TEXT NOT NULL, remote_id INTEGER NOT NULL, "
                       "local_id INTEGER NOT NULL, PRIMARY KEY (source, tbl, remote_id))")
            db.execute("INSERT INTO remote_rows VALUES ('box:/r.sqlite', 'runs', 7, 1)")
        db["meta"].upsert({"key": "schema_version", "value": "5"}, pk="key")
        db.conn.commit()
        db.conn.close()
        db = store.open_db(path)
        assert store.schema_version(db) == store.SCHEMA_VERSION >= 6
        mapped = db.execute("SELECT * FROM remote_rows").fetchall()
        assert mapped == ([("box:/r.sqlite", "runs", 7, 1)] if had_mirror else [])
        assert "remote_rows_local" in {i.name for i in db["remote_rows"].indexes}


def test_a_rerun_of_an_unfinished_run_starts_from_nothing(tmp_path):
    db = store.open_db(tmp_path / "r.sqlite")
    record = store.Recorder(db)
    exp = record.experiment("e", "h", "", "", {})
    ids = record.register_runs(exp, ["done", "cut"], lambda i: {"experiment_id": exp, "key": ["done", "cut"][i],
                                                                "status": "pending"})
    sweep = record.sweep_started(exp, None, 1.0, 2, 2)
    for key in ids:
        record.run_started(ids[key])
        record.sample(sweep, {"run_id": ids[key], "t": 0.5}, [{"run_id": ids[key], "t": 0.5, "position": 1}], [])
        record.log_lines(ids[key], [(1.0, "stderr", "hello")])
    record.run_completed(ids["done"], {"mal": 2.0})
    again = record.register_runs(exp, ["done", "cut", "new"], lambda i: {"experiment_id": exp, "key": "new",
                                                                         "status": "pending"})
    assert again["done"] == ids["done"] and again["cut"] == ids["cut"] and again["new"] not in ids.values()
    assert {r.key: r.status for r in store.runs_of_experiment(db, exp)} == {
        "done": "completed", "cut": "pending", "new": "pending"}
    assert store.completed_run_keys(db, exp) == {"done"}
    assert store.status_counts(db, exp) == {"completed": 1, "pending": 2}
    for table in ("samples", "positions", "logs"):
        assert [r["run_id"] for r in db[table].rows] == [ids["done"]], table


def test_run_feed_returns_each_row_once(tmp_path):
    db = store.open_db(tmp_path / "r.sqlite")
    record = store.Recorder(db)
    exp = record.experiment("e", "h", "", "", {})
    run, other = record.register_runs(exp, ["a", "b"], lambda i: {"experiment_id": exp, "key": "ab"[i]}).values()
    sweep = record.sweep_started(exp, None, 1.0, 2, 2)
    record.sample(sweep, {"run_id": run, "t": 0.5, "mal": 1.5}, [], [])
    record.sample(sweep, {"run_id": other, "t": 0.5, "mal": 9.0}, [], [])
    feed = store.run_feed(db, run, {"samples": 0, "logs": 0})
    assert feed.rows == {"samples": [(0.5, 1.5, None, None)], "logs": []} and feed.after["logs"] == 0
    record.sample(sweep, {"run_id": run, "t": 1.0, "mal": 1.6}, [], [])
    feed = store.run_feed(db, run, feed.after)
    assert feed.rows["samples"] == [(1.0, 1.6, None, None)]
    assert store.run_feed(db, run, feed.after).rows == {"samples": [], "logs": []}


def test_version_14_gets_an_empty_annotations_table_and_keeps_its_runs(tmp_path):
    path = tmp_path / "v14.sqlite"
    db = store.open_db(path)
    exp = store.experiment_for(db, "e", "h", "", "", {})
    run = db["runs"].insert({"experiment_id": exp, "key": "k", "status": "completed", "mal": 2.5}).last_pk
    db.execute("DROP TABLE annotations")
    db["meta"].upsert({"key": "schema_version", "value": "14"}, pk="key")
    db.conn.commit()
    db.conn.close()
    # Read-only before the migration: no notes, no error.
    old = store.open_db(path, readonly=True)
    assert store.annotated_runs(old) == []
    store.close(old)
    db = store.open_db(path)
    assert store.schema_version(db) == store.SCHEMA_VERSION == 15
    assert store.run(db, run).mal == 2.5 and store.annotated_runs(db) == []
    store.set_annotation(db, run, "a", "b")
    assert store.annotated_runs(db) == [store.Annotation(run_id=run, tags="a", notes="b")]
