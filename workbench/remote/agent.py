"""The host side of a remote run: `python -m workbench.remote.agent COMMAND`, started over SSH.

Stdlib, the store and the process helper only, so it answers quickly on the host. Every reply is JSON on stdout;
`follow` reads where the local mirror stands and writes the stream's messages (workbench.remote.protocol),
one per line, until the sweep's runner is gone and all is sent.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO

from workbench import __version__, messages, store
from workbench.host import gpus, process
from workbench.remote import protocol
from workbench.remote.control import Launched
from workbench.usecases import doctor

# Rows of store.RUN_TABLES are only ever appended (streamed by id); those of store.MUTABLE_TABLES
# change in place (sent again whenever their content changes), parents before children.
POLL_S = 0.25
BATCH = 2000


def _data_dir(path: str) -> Path:
    # The path arrives quoted, so the remote shell never expanded `~`; it is done here.
    return Path(os.path.expanduser(path))


def check(args: argparse.Namespace) -> int:
    platform_name, devices = gpus.detect()
    data = _data_dir(args.data_dir)
    print(json.dumps({
        "version": __version__, "python": sys.executable,
        "doctor": doctor.report(), "accelerator": platform_name,
        "gpus": [{"index": d.index, "name": d.name} for d in devices],
        "data_dir": str(data), "data_dir_exists": data.is_dir(),
    }))
    return 0


def launch(args: argparse.Namespace) -> int:
    """Write the plan (read from stdin) into the data dir and start `draftbench run` detached: its
    own session (setsid), stdin closed and output to a file, so neither a dropped connection nor
    the SSH server's hang-up signal reaches it."""
    data = _data_dir(args.data_dir)
    plan, digest = _write_plan(data, sys.stdin.read())
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for sub in ("events", "logs"):
        (data / sub).mkdir(parents=True, exist_ok=True)
    events = data / "events" / f"{stamp}-{digest}-{os.getpid()}.jsonl"
    log = data / "logs" / f"{stamp}-{digest}-{os.getpid()}.log"
    db = _db(args, data)
    argv = [sys.executable, "-m", "workbench.cli", "run", str(plan), "--db", str(db),
            "--events", str(events), "--log", str(log), *args.extra]
    with open(log, "ab") as out:
        proc = process.start(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, close_fds=True)
    print(messages.dumps(Launched(proc.pid, events=str(events), db=str(db), plan=str(plan), log=str(log))))
    return 0


def dry_run(args: argparse.Namespace) -> int:
    """`draftbench run --dry-run` of the plan (read from stdin) against this host's vLLM and
    database, in the foreground: what it prints comes back over SSH, and its exit status with it
    (2 and one line when it refuses the plan). Nothing is started and no database is created."""
    data = _data_dir(args.data_dir)
    plan, _ = _write_plan(data, sys.stdin.read())
    argv = [sys.executable, "-m", "workbench.cli", "run", str(plan), "--db", str(_db(args, data)), "--dry-run",
            *args.extra]
    sys.stdout.flush()
    return subprocess.run(argv, stdin=subprocess.DEVNULL).returncode


def _write_plan(data: Path, text: str) -> tuple[Path, str]:
    """The plan's file in the data dir, named by its content, and that digest."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    (data / "plans").mkdir(parents=True, exist_ok=True)
    plan = data / "plans" / f"{digest}.toml"
    plan.write_text(text, encoding="utf-8")
    return plan, digest


def _db(args: argparse.Namespace, data: Path) -> Path:
    return Path(os.path.expanduser(args.db)) if args.db else data / "results.sqlite"


class Follower:
    """Sends the rows the local mirror lacks, then new ones as they are written, and the events."""

    def __init__(self, db_path: str, events_path: str | None, offset: int, resume: protocol.Resume,
                 out: TextIO = sys.stdout) -> None:
        self.source = store.Source(db_path)
        self.events_path = events_path
        self.offset = offset
        self.out = out
        self.cursors = {t: int(resume.cursors.get(t) or 0) for t in store.RUN_TABLES}
        self.sent: dict[tuple[str, int], str] = {}
        self.local_signature = resume.signature
        self.status: dict[int, str | None] = {}  # per host run, the status last seen

    def send(self, message: protocol.StreamMessage) -> None:
        self.out.write(protocol.encode(message) + "\n")

    def reconcile(self) -> None:
        """Runs whose rows differ from the local copy (a resumed run rewrites its rows, and SQLite
        may hand the freed ids out again) are sent whole, replacing the local ones."""
        tables = self.source.tables()
        for table in store.RUN_TABLES:
            if table not in tables:
                continue
            remote, lowest = {}, {}
            for sig in self.source.run_signatures(table):  # keyed by the run id as text, as the local side's are
                remote[str(sig.run_id)] = [sig.count, sig.highest]
                lowest[str(sig.run_id)] = sig.lowest
            local = self.local_signature.get(table, {})
            for run_id in sorted(set(remote) | set(local), key=int):
                if remote.get(run_id) == local.get(run_id):
                    continue
                # Rows above the cursor arrive by streaming anyway; the rest is sent whole.
                if run_id in local or lowest[run_id] <= self.cursors[table]:
                    self.send(protocol.Reset(table, int(run_id)))
                    rows = self.source.rows_of_run(table, int(run_id))
                    for i in range(0, len(rows), BATCH):
                        self.send(protocol.Rows(table, rows[i:i + BATCH]))

    def poll(self) -> int:
        """One consistent snapshot (a read transaction): parents first, then the children."""
        sent = 0
        tables = self.source.tables()
        with self.source.snapshot():
            for table in store.MUTABLE_TABLES:
                if table not in tables:
                    continue
                changed = []
                for row in self.source.all_rows(table):
                    head = protocol.stamp(row)
                    if head.id is None:  # never: every stored row has its table's rowid
                        continue
                    blob = json.dumps(row, sort_keys=True, default=str)
                    if self.sent.get((table, head.id)) != blob:
                        self.sent[(table, head.id)] = blob
                        changed.append(row)
                    if table == "runs":
                        if head.status == "pending" and self.status.get(head.id) not in (None, "pending"):
                            self._reset_run(head.id, tables)
                        self.status[head.id] = head.status
                if changed:
                    self.send(protocol.Rows(table, changed))
                    sent += len(changed)
            for table in store.RUN_TABLES:
                if table not in tables:
                    continue
                while True:
                    rows = self.source.rows_after(table, self.cursors[table], BATCH)
                    if not rows:
                        break
                    self.cursors[table] = rows[-1]["id"]
                    self.send(protocol.Rows(table, rows))
                    sent += len(rows)
        return sent

    def _reset_run(self, run_id: int, tables: set[str]) -> None:
        # A rerun deleted the run's rows; ids above what remains may be handed out again.
        for table in store.RUN_TABLES:
            if table in tables:
                self.send(protocol.Reset(table, run_id))
                top = self.source.max_id(table)
                self.cursors[table] = min(self.cursors[table], top)

    def read_events(self) -> list[bytes]:
        if not self.events_path or not os.path.exists(self.events_path):
            return []
        with open(self.events_path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        complete = data[:data.rfind(b"\n") + 1]  # a line still being written waits for the next poll
        return complete.splitlines()

    def send_events(self, lines: list[bytes]) -> None:
        for line in lines:
            self.offset += len(line) + 1
            self.send(protocol.EventLine(line.decode("utf-8", "replace"), self.offset))

    def run(self, pid: int | None) -> None:
        self.reconcile()
        beat = 0.0
        while True:
            running = pid is not None and process.alive(pid)
            # Events are read before the rows: the runner commits a row before it names it in an
            # event, so every row an event refers to is in this snapshot and arrives first.
            lines = self.read_events()
            n = self.poll() + len(lines)
            self.send_events(lines)
            if time.time() - beat > 2.0:
                beat = time.time()
                self.send(protocol.Beat(beat))
            self.out.flush()
            if not running:
                if n == 0:  # drained after the runner ended
                    self.send(protocol.End())
                    self.out.flush()
                    return
                continue
            time.sleep(POLL_S)


def follow(args: argparse.Namespace) -> int:
    line = sys.stdin.readline()
    resume = protocol.decode(line) if line.strip() else protocol.Resume()
    if not isinstance(resume, protocol.Resume):
        print("follow: the first line is not where the local copy stands", file=sys.stderr)
        return 1
    db = os.path.expanduser(args.db)
    pid = args.pid or None
    while not os.path.exists(db) and pid and process.alive(pid):
        time.sleep(POLL_S)  # the runner creates the database a moment after it starts
    if not os.path.exists(db):
        print(f"no database at {db}", file=sys.stderr)
        return 1
    Follower(db, args.events and os.path.expanduser(args.events),
             args.offset, resume).run(pid)
    return 0


def latest(args: argparse.Namespace) -> int:
    """The most recent sweep in the host's database: its runner's pid and events file."""
    db = os.path.expanduser(args.db)
    if not os.path.exists(db):
        print(json.dumps(None))
        return 0
    sweep = store.latest_sweep(db)
    print(json.dumps(sweep and {"pid": sweep.pid, "events": sweep.events_path, "finished": sweep.finished,
                                "db": db}))
    return 0


def stop(args: argparse.Namespace) -> int:
    """SIGTERM to the runner: it stops its server and marks the run in flight cancelled."""
    print(json.dumps({"stopped": process.send(args.pid, signal.SIGTERM)}))
    return 0


def dump(args: argparse.Namespace) -> int:
    """A consistent copy of the database (SQLite's online backup) written to stdout."""
    store.backup(os.path.expanduser(args.db), sys.stdout.buffer)
    sys.stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m workbench.remote.agent")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check")
    c.add_argument("--data-dir", required=True)
    la = sub.add_parser("launch")
    la.add_argument("--data-dir", required=True)
    la.add_argument("--db")
    la.add_argument("extra", nargs=argparse.REMAINDER)
    dr = sub.add_parser("dry-run")
    dr.add_argument("--data-dir", required=True)
    dr.add_argument("--db")
    dr.add_argument("extra", nargs=argparse.REMAINDER)
    f = sub.add_parser("follow")
    f.add_argument("--db", required=True)
    f.add_argument("--events")
    f.add_argument("--offset", type=int, default=0)
    f.add_argument("--pid", type=int)
    lt = sub.add_parser("latest")
    lt.add_argument("--db", required=True)
    st = sub.add_parser("stop")
    st.add_argument("--pid", type=int, required=True)
    d = sub.add_parser("dump")
    d.add_argument("--db", required=True)
    args = p.parse_args(argv)
    if getattr(args, "extra", None) and args.extra[0] == "--":
        args.extra = args.extra[1:]
    return {"check": check, "launch": launch, "dry-run": dry_run, "follow": follow, "latest": latest, "stop": stop,
            "dump": dump}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
