"""The events between the engine and the app: every kind round-trips through its JSON line with
the field names files and remote streams use, a reader of another version copes, the follower
waits for a line's end, and every kind has a consumer."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import pytest

from workbench import events
from workbench.events import Kind

ROOT = Path(__file__).resolve().parent.parent

EXAMPLES: dict[Kind, events.Event] = {
    Kind.SWEEP_STARTED: events.SweepStarted(experiment=3, db="/data/r.sqlite", runs=6, pending=4,
                                            skipped=["suffix: arctic_inference missing"], warnings=["temperature 0.0"]),
    Kind.SWEEP_FINISHED: events.SweepFinished(experiment=3, seconds=12.5, completed=5, failed=1, cancelled=False,
                                              launches=3, recommendations=[{"event": "recommendation", "context": "c"}]),
    Kind.SERVER_STARTING: events.ServerStarting(run=7, command="vllm serve m --port 8000", kind="local"),
    Kind.SERVER_READY: events.ServerReady(seconds=31.2, port=8000),
    Kind.RUN_STARTED: events.RunStarted(run=7, label="ngram N=2 · builtin · c=2 · #1", index=1, total=6),
    Kind.RUN_FINISHED: events.RunFinished(run=7, label="baseline", output_tok_s=88.5, mal=None, acceptance_rate=None),
    Kind.RUN_FAILED: events.RunFailed(run=8, error="vLLM server died during the run: exit code -9"),
    Kind.ALARM: events.Alarm(run=7, kind="collapsed", message="acceptance collapsed: every draft rejected"),
    Kind.PROGRESS: events.Progress(run=7, done=3, total=6, t=1.25, output_tok_s=90.0, mal=2.1),
    Kind.ADAPTIVE_STARTED: events.AdaptiveStarted(contexts=1, probes={"ngram · builtin · c=1": [5, 1]}),
    Kind.PREDICTION: events.Prediction(context="ngram · builtin · c=1", best_n=3, uncertain=True, runner_up=2,
                                       measured_n=[1, 5], next_n=[3, 2], curve=[[1, 1.1, 0.05], [2, 1.3, 0.06]]),
    Kind.RECOMMENDATION: events.Recommendation(context="ngram · builtin · c=1", message="best N = 3", runs_used=4,
                                               runs_total=6, best_n=3, predicted_speedup=1.4,
                                               predicted_half_width=0.1, measured_speedup=1.38, uncertain=False),
    Kind.STEP_STARTED: events.StepStarted(step="prompts"),
    Kind.STEP_SKIPPED: events.StepSkipped(step="responses"),
    Kind.STEP_FINISHED: events.StepFinished(step="hidden_states", info={"files": 4, "written": 3, "seconds": 2.5}),
    Kind.REUSED: events.Reused(source="/runs/eagle3", steps=["prompts", "responses"]),
    Kind.TRAIN_STEP: events.TrainStep(step=12, epoch=0, loss=3.25, metrics={"loss": 3.25, "full_acc_0": 0.4}),
    Kind.VALIDATION: events.Validation(epoch=0, loss=3.5, metrics={"loss_epoch": 3.5}),
    Kind.DONE: events.Done(out="/runs/x", checkpoint="/runs/x/checkpoints/checkpoint_best", pair="trained-x",
                           plan="/runs/x/evaluate.toml"),
}


def test_every_kind_has_a_record_and_an_example():
    assert set(events.RECORDS) == set(Kind)
    assert set(EXAMPLES) == set(Kind)
    assert all(type(EXAMPLES[k]) is events.RECORDS[k] for k in Kind)


@pytest.mark.parametrize("kind", list(Kind), ids=str)
def test_every_kind_round_trips_through_its_json_line(kind):
    record = EXAMPLES[kind]
    line = events.dumps(record)
    assert "\n" not in line and json.loads(line)["event"] == str(kind)
    assert events.parse(line) == record
    assert events.parse(line.encode()) == record


def test_the_field_names_are_the_wire_format():
    # Lines as earlier versions wrote them still read as the typed records, and the records write
    # the same objects: an older file, or a host running another version, stays readable.
    lines = {
        '{"event":"run_finished","run":7,"label":"b","output_tok_s":88.5,"mal":null,"acceptance_rate":null}':
            events.RunFinished(run=7, label="b", output_tok_s=88.5, mal=None, acceptance_rate=None),
        '{"event":"sweep_finished","cancelled":true}': events.SweepFinished(cancelled=True),
        # A sweep stopped by an error: the line the app's warning comes from.
        '{"event":"sweep_finished","experiment":3,"seconds":4.5,"cancelled":false,"error":"the results database cannot be used: disk I/O error"}':
            events.SweepFinished(experiment=3, seconds=4.5, error="the results database cannot be used: disk I/O error"),
        '{"event":"progress","step":"responses","done":2,"total":4}': events.Progress(step="responses", done=2, total=4),
        '{"event":"server_starting","command":"vllm serve m"}': events.ServerStarting(command="vllm serve m"),
        '{"event":"step_finished","step":"prompts","prompts":4,"seconds":0.1}':
            events.StepFinished(step="prompts", info={"prompts": 4, "seconds": 0.1}),
        '{"event":"prediction","context":"c","error":"too few runs","next_n":[]}':
            events.Prediction(context="c", error="too few runs", next_n=[]),
    }
    for line, record in lines.items():
        assert events.parse(line) == record
        assert record.to_json() == json.loads(line)


def test_a_reader_copes_with_other_versions_and_with_lines_that_are_not_events():
    newer = events.parse('{"event":"gpu_throttled","gpu":0,"clock_mhz":900}')
    assert isinstance(newer, events.Other) and newer.event == "gpu_throttled" and newer.fields["gpu"] == 0
    assert newer.to_json() == {"event": "gpu_throttled", "gpu": 0, "clock_mhz": 900}
    # A newer version's extra field is ignored; a line that lacks a field is kept, but not typed.
    extra = events.parse('{"event":"run_failed","run":1,"error":"x","host":"gpu-box"}')
    assert extra == events.RunFailed(run=1, error="x")
    short = events.parse('{"event":"run_failed","error":"x"}')
    assert isinstance(short, events.Other) and short.event == "run_failed"
    for line in ("", "   ", "not json", '{"event": 3}', "[1, 2]", '{"run": 1}', '{"event":"run_fa', b"\xff\xfe"):
        assert events.parse(line) is None, line


def test_writer_flushes_each_event_and_the_follower_waits_for_a_lines_end(tmp_path):
    path = tmp_path / "events.jsonl"
    follow = events.Follower(path)
    assert follow.read() == []  # not there yet
    write = events.Writer.append_to(path)
    write(EXAMPLES[Kind.SWEEP_STARTED])
    assert follow.read() == [EXAMPLES[Kind.SWEEP_STARTED]]  # flushed: readable before the writer closes
    line = events.dumps(EXAMPLES[Kind.RUN_STARTED])
    with path.open("a") as f:
        f.write(line[:20])  # a line half written
    assert follow.read() == []
    with path.open("a") as f:
        f.write(line[20:] + "\n" + "garbage\n")
    assert follow.read() == [EXAMPLES[Kind.RUN_STARTED]]
    write(EXAMPLES[Kind.SWEEP_FINISHED])
    write.close()
    assert follow.read() == [EXAMPLES[Kind.SWEEP_FINISHED]]
    assert follow.offset == path.stat().st_size
    # A follower started at an offset reads only what follows it.
    assert events.Follower(path, follow.offset).read() == []

    stream = io.StringIO()
    events.Writer(stream)(EXAMPLES[Kind.DONE])
    assert stream.getvalue() == events.dumps(EXAMPLES[Kind.DONE]) + "\n"


def test_read_objects_skips_a_line_cut_by_a_crash(tmp_path):
    path = tmp_path / "train-metrics.jsonl"
    path.write_text('{"train": {"loss": 3.0}}\n[1]\n{"val": {"loss": 2.0}}\n{"train": {"lo')
    assert events.read_objects(path) == [{"train": {"loss": 3.0}}, {"val": {"loss": 2.0}}]
    assert events.read_objects(tmp_path / "missing.jsonl") == []


def _consumer_modules() -> list[Path]:
    return sorted(p for folder in (ROOT / "app", ROOT / "workbench" / "cli") for p in folder.rglob("*.py"))


def _references(path: Path) -> set[str]:
    """Kind members (as `Kind.X`) and record classes (as `events.Cls` or an imported `Cls`) a module names."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "Kind":
                names.add(f"Kind.{node.attr}")
            else:
                names.add(node.attr)
        elif isinstance(node, ast.Name):
            names.add(node.id)
    return names


def test_every_kind_has_a_consumer_in_the_app_or_the_cli():
    referenced = set().union(*map(_references, _consumer_modules()))
    unconsumed = [str(kind) for kind in Kind
                  if f"Kind.{kind.name}" not in referenced and events.RECORDS[kind].__name__ not in referenced]
    assert not unconsumed, f"event kinds that nothing in app/ or workbench/cli/ reads: {unconsumed}"


def test_the_consumer_scan_sees_a_reference():
    # The scan above must be able to fail: a module naming none of the records gives nothing.
    assert "RunFinished" not in _references(ROOT / "workbench" / "paths.py")
    assert {"RunFinished", "SweepStarted"} <= _references(ROOT / "app" / "main.py")
