"""The demo on this CPU: its dtype chosen from the CPU's flags and a measurement stored once,
`doctor` saying both, and the ETA and the Quick demo's duration from server starts measured here."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench import events, plan
from workbench.checkpoints import demo
from workbench.host import cpu
from workbench.sweep import eta
from workbench.usecases import demo_time
from workbench.usecases import doctor as doctor_report

# Flag sets as /proc/cpuinfo lists them: a 2-core cloud VM without bf16 instructions (the machine
# where bf16 ran at a quarter of float32's speed), a Sapphire Rapids, a Zen 4.
NO_BF16 = frozenset("fpu sse2 avx avx2 fma avx512f avx512bw".split())
AMX = frozenset("fpu sse2 avx avx2 avx512f avx512_bf16 amx_bf16 amx_tile".split())
ZEN4 = frozenset("fpu sse2 avx avx2 avx512f avx512_bf16".split())
FAST_BF16 = {"float32": 0.004, "bfloat16": 0.001}
SLOW_BF16 = {"float32": 0.004, "bfloat16": 0.016}


def _cpu(flags, model="Test CPU", cores=2) -> cpu.CpuInfo:
    return cpu.CpuInfo(model, cores, flags)


@pytest.mark.parametrize("flags, seconds, dtype", [
    (NO_BF16, FAST_BF16, "float32"),   # emulated bf16 never chosen, whatever a timing says
    (NO_BF16, None, "float32"),
    (AMX, FAST_BF16, "bfloat16"),
    (ZEN4, FAST_BF16, "bfloat16"),
    (ZEN4, SLOW_BF16, "float32"),      # instructions present, but measured slower here
    (AMX, None, "bfloat16"),           # not measured yet: the flags decide
    (frozenset(), FAST_BF16, "float32"),
])
def test_the_demo_dtype_follows_the_flags_and_the_timing(flags, seconds, dtype):
    assert cpu.choose(_cpu(flags), seconds).dtype == dtype


def test_cpuinfo_is_read_and_unknown_where_missing(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
                    f"flags\t\t: {' '.join(sorted(AMX))}\n\nprocessor\t: 1\nmodel name\t: other\n")
    read = cpu.read(info)
    assert read.model == "Intel(R) Xeon(R) Platinum 8480+" and read.flags == AMX and read.known
    assert "avx512_bf16 yes" in read.flag_line() and "amx_bf16 yes" in read.flag_line()
    missing = cpu.read(tmp_path / "absent")
    assert not missing.known and missing.flags == frozenset() and "unknown" in missing.flag_line()
    assert cpu.choose(missing, FAST_BF16).dtype == "float32"


def test_the_measurement_is_stored_once_per_cpu_and_torch(tmp_path, monkeypatch):
    store = tmp_path / "tuning.json"
    calls = []

    def timer(dtypes, threads):
        calls.append((dtypes, threads))
        return dict(SLOW_BF16)

    info = _cpu(ZEN4)
    first = cpu.demo_choice(info=info, store=store, timer=timer)
    assert first.dtype == "float32" and first.seconds == SLOW_BF16 and calls == [(cpu.DTYPES, 2)]
    again = cpu.demo_choice(info=info, store=store, timer=timer)
    assert again == first and len(calls) == 1
    monkeypatch.setattr(cpu, "torch_version", lambda: "9.9.9")   # another torch: measured again
    cpu.demo_choice(info=info, store=store, timer=timer)
    assert len(calls) == 2
    # Without bf16 instructions there is nothing to time: float32 is stored at once.
    assert cpu.demo_choice(info=_cpu(NO_BF16, "Other"), store=store, timer=timer).dtype == "float32"
    assert len(calls) == 2
    store.write_text("{not json")   # a damaged store is measured again, not an error
    assert cpu.demo_choice(info=info, store=store, timer=timer).dtype == "float32"


def test_a_demo_plan_without_a_dtype_is_served_in_the_chosen_one(tmp_path, monkeypatch):
    monkeypatch.setenv("DRAFTBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cpu, "read", lambda cpuinfo=cpu.CPUINFO: _cpu(NO_BF16))
    for name in ("demo-quick.toml", "demo.toml"):
        p = plan.load(Path("resources/plans") / name)
        assert {r.server.dtype for r in p.runs} == {"float32"}, name
    text = (Path("resources/plans") / "demo-quick.toml").read_text()
    named = plan.loads(text.replace("enforce_eager = true", 'enforce_eager = true\ndtype = "bfloat16"'))
    assert {r.server.dtype for r in named.runs} == {"bfloat16"}   # a plan that names one keeps it


def test_doctor_says_the_cpu_its_flags_and_the_demo_dtype(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DRAFTBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cpu, "read", lambda cpuinfo=cpu.CPUINFO: _cpu(ZEN4, "AMD EPYC 9654", 2))
    monkeypatch.setattr(cpu, "time_matmul", lambda dtypes, threads: dict(SLOW_BF16))
    monkeypatch.setattr(doctor_report, "report", lambda python=None: doctor_report.cpu_rows())
    from workbench.cli import doctor
    assert doctor.doctor() == 0
    out = capsys.readouterr().out
    assert "AMD EPYC 9654, 2 usable cores" in out
    for flag in ("avx2 yes", "avx512f yes", "avx512_bf16 yes", "amx_bf16 no"):
        assert flag in out
    assert "float32 on 2 threads" in out and "measured slower" in out and "bfloat16 16.00 ms" in out
    assert "not measured yet" in out


def test_doctor_rows_include_the_cpu():
    assert {"cpu", "cpu flags", "demo dtype", "demo server start"} <= {
        k for k, _ in doctor_report.cpu_rows(_cpu(NO_BF16), cpu.choose(_cpu(NO_BF16), None), {})}


def _starting(command: str, index: int = 1) -> events.ServerStarting:
    return events.ServerStarting(run=1, command=command, index=index, servers=3)


def test_the_eta_starts_from_a_start_measured_here_before(tmp_path):
    store = tmp_path / "tuning.json"
    target = str(demo.folder(demo.TARGET))
    info = _cpu(NO_BF16)
    t = [0.0]
    stored = eta.recording(lambda e: None, target, lambda *a, **k: cpu.record(*a, info=info, store=store, **k),
                           now=lambda: t[0])
    # One earlier sweep on this machine: servers took 48 s to start, runs 50 s.
    stored(events.ServerReady(seconds=48.0, port=1))
    stored(events.RunStarted(run=1, label="r1", index=1, total=9))
    t[0] = 50.0
    stored(events.RunFinished(run=1, label="r1", output_tok_s=23.2, mal=None, acceptance_rate=None))
    known = cpu.measured(info, store)
    assert known == {target: {"start_s": 48.0, "run_s": 50.0}}

    clock = eta.SweepClock(now=lambda: 0.0, known=known)
    clock.feed(events.SweepStarted(experiment=1, db="x", runs=9, pending=9))
    clock.feed(_starting(f"vllm serve {target} --dtype float32 --port PORT"))
    # From the first server on: 3 starts of 48 s and 9 runs of 50 s, said to come from before.
    assert clock.seconds_left() == 3 * 48.0 + 9 * 50.0
    assert clock.text().startswith("ETA 9 min 54 s") and "earlier" in clock.text()
    other = eta.SweepClock(known=known)   # another model's sweep is not timed by the demo's starts
    other.feed(events.SweepStarted(experiment=1, db="x", runs=9, pending=9))
    other.feed(_starting("vllm serve /models/other --port PORT"))
    assert other.seconds_left() is None and "once a server has started" in other.text()


def test_the_quick_demo_duration_is_measured_here_or_said_to_be_rough(tmp_path, monkeypatch):
    monkeypatch.setenv("DRAFTBENCH_CACHE_DIR", str(tmp_path))
    quick = plan.load(Path("resources/plans/demo-quick.toml"))
    rough = demo_time.estimate(quick, {})
    assert (rough.servers, rough.runs) == (2, 6) and "rough" in rough.line()
    target = quick.runs[0].server.target
    measured = demo_time.estimate(quick, {target: {"start_s": 48.0, "run_s": 50.0}})
    assert measured.seconds == (396.0, 396.0)   # 2 x 48 s + 6 x 50 s
    assert "about 7 min on this machine" in measured.line() and "48 s a server start" in measured.line()
