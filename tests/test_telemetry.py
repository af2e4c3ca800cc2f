"""Telemetry: the parsers on recorded real output of nvidia-smi (two H200s) and amd-smi, the
sampler reading this host for real, per-GPU and summed series, and energy per token checked
against the database of the real two-GPU run committed under docs/gpu/."""

import json
import sqlite3
import time
from pathlib import Path

import pytest

from workbench import store
from workbench.host import gpus
from workbench.metrics import telemetry

ROOT = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures" / "telemetry"
TP2_DB = ROOT / "docs" / "gpu" / "h200x2-tp2.sqlite"


def test_nvidia_smi_query_on_two_h200s_under_load():
    readings = telemetry.parse_nvidia_smi_csv((FIX / "nvidia-smi-query-2xh200-load.csv").read_text(), 10.0)
    assert [(r.physical, r.index, r.name) for r in readings] == [(0, 0, "NVIDIA H200"), (1, 1, "NVIDIA H200")]
    busy, idle = readings
    assert (busy.util_pct, busy.mem_used_mib, busy.mem_total_mib, busy.power_w, busy.temp_c) == \
        (13.0, 43467.0, 143771.0, 127.14, 39.0)
    assert (idle.util_pct, idle.mem_used_mib, idle.power_w) == (0.0, 0.0, 79.98)


def test_physical_indices_map_to_the_ones_vllm_sees():
    # A profile that selects physical GPU 1 only: vLLM calls it cuda:0.
    readings = telemetry.parse_nvidia_smi_csv((FIX / "nvidia-smi-query-2xh200-idle.csv").read_text(), 0.0, {1: 0})
    assert [(r.physical, r.index) for r in readings] == [(1, 0)]
    assert telemetry.label("gpu", 1, 0) == "GPU 0 (physical 1)"
    assert telemetry.label("gpu", 1, 1) == "GPU 1"


def test_nvidia_smi_list_and_banner():
    listed = gpus.parse_nvidia_smi_list((FIX / "nvidia-smi-L-2xh200.txt").read_text())
    assert [(g.index, g.name) for g in listed] == [(0, "NVIDIA H200"), (1, "NVIDIA H200")]
    assert gpus.parse_cuda_version((FIX / "nvidia-smi-banner-2xh200.txt").read_text()) == "13.0"


def test_amd_smi_metric_list_layout():
    readings = telemetry.parse_amd_smi_metric((FIX / "amd-smi-metric-list-rx6600.json").read_text(), 5.0)
    assert len(readings) == 1
    r = readings[0]
    assert (r.physical, r.index, r.util_pct, r.power_w, r.temp_c) == (0, 0, 1.0, 6.0, 37.0)  # hotspot
    assert (r.mem_used_mib, r.mem_total_mib) == (202.0, 8176.0)  # amd-smi's "MB" are MiB


def test_amd_smi_power_only_and_wrapped_layout():
    text = (FIX / "amd-smi-metric-power-rocm6.1.json").read_text()
    (r,) = telemetry.parse_amd_smi_metric(text, 0.0)
    assert r.power_w == 10.0 and r.util_pct is None and r.mem_used_mib is None
    # ROCm 7 wraps the same per-GPU objects in {"gpu_data": [...]}.
    (w,) = telemetry.parse_amd_smi_metric(json.dumps({"gpu_data": json.loads(text)}), 0.0)
    assert w.power_w == 10.0
    listed = gpus.parse_amd_smi_list((FIX / "amd-smi-static-list-rx6600.json").read_text())
    assert [(g.index, g.name) for g in listed] == [(0, "Navi 23 [Radeon RX 6600/6600 XT")]


def test_sampler_reads_this_host_for_real():
    """Three readings arrive, one after another; waited for, not timed, so a loaded machine only
    makes the test slower."""
    sampler = telemetry.Sampler(telemetry.sources_for("none")[0], interval_s=0.2).start()
    readings: list = []
    deadline = time.monotonic() + 60
    try:
        while len(readings) < 3 and time.monotonic() < deadline:
            readings += sampler.drain()
            time.sleep(0.05)
    finally:
        sampler.stop()
    assert len(readings) >= 3
    assert [r.t for r in readings] == sorted(r.t for r in readings) and len({r.t for r in readings}) == len(readings)
    assert all(r.device == "host" and 0 <= r.util_pct <= 100 and 0 < r.mem_used_mib < r.mem_total_mib
               for r in readings)


def test_series_per_gpu_and_summed_over_a_tick():
    rows = [(1.0, "gpu", 0, 0, 50.0, 150.0, 1.0), (1.0, "gpu", 1, 1, 40.0, 160.0, 1.0),
            (2.0, "gpu", 0, 0, 60.0, 155.0, 1.0), (2.0, "gpu", 1, 1, 45.0, 165.0, 1.0),
            (2.0, "host", None, None, 12.0, None, 3.0)]
    s = telemetry.series(rows)
    assert set(s) == {"GPU 0", "GPU 1", "host CPU", "all GPUs"}
    assert s["all GPUs"].power == [310.0, 320.0]
    assert s["GPU 1"].util == [40.0, 45.0]


def test_energy_of_the_real_tensor_parallel_run_matches_its_readings():
    db = store.open_db(TP2_DB, readonly=True)
    run = db["runs"].get(3)  # ngram N=4, c=1, TP=2 on two H200s
    env = json.loads(run["environment"])
    assert env["telemetry"] == "CPU/RAM (psutil), NVIDIA GPUs (NVML)" and env["gpu_models"] == ["NVIDIA H200"] * 2
    rows = [dict(r) for r in db["telemetry"].rows_where("run_id = ?", [3])]
    assert {r["physical"] for r in rows if r["device"] == "gpu"} == {0, 1}
    # The window the runner integrated over is the run's load window, inside [started, finished].
    t1 = run["finished"]
    t0 = t1 - run["window_s"] - 5
    readings = [telemetry.Reading(r["t"], r["device"], r["physical"], r["index"], power_w=r["power_w"],
                                  util_pct=r["util_pct"], mem_used_mib=r["mem_used_mib"]) for r in rows]
    figures = telemetry.energy(readings, run["started"], t1)
    assert figures.energy_j >= run["energy_j"] * 0.9
    window = [r for r in rows if r["device"] == "gpu" and r["t"] >= t0]
    mean_power = sum(r["power_w"] for r in window) / len(window) * 2  # two GPUs
    assert run["power_mean_w"] == pytest.approx(mean_power, rel=0.1)
    assert run["joules_per_token"] == pytest.approx(run["energy_j"] / run["output_tokens"])


def test_energy_needs_two_power_readings():
    one = telemetry.Reading(1.0, "gpu", 0, 0, power_w=100.0)
    assert telemetry.energy([one], 0, 2) == telemetry.Energy() and telemetry.Energy().columns() == {}
    two = [telemetry.Reading(t, "gpu", 0, 0, util_pct=10.0, power_w=p, mem_used_mib=5.0)
           for t, p in ((0.0, 100.0), (2.0, 200.0))]
    assert telemetry.energy(two, 0, 2).columns() == {"energy_j": 300.0, "power_mean_w": 150.0,
                                                     "gpu_util_mean": 10.0, "gpu_mem_peak_mib": 5.0}


def test_amd_smi_version_parse():
    text = json.dumps([{"tool": "AMDSMI Tool", "version": "26.2.0+021c61fc", "amdsmi_library_version": "26.2.0",
                        "rocm_version": "7.0.2", "amdgpu_version": "6.16.6", "amd_hsmp_driver_version": "N/A"}])
    assert gpus.parse_amd_smi_version(text) == {"rocm_version": "7.0.2", "amdgpu_version": "6.16.6",
                                                "amdsmi_library_version": "26.2.0"}


def test_older_databases_open_and_gain_the_telemetry_table(tmp_path):
    path = tmp_path / "v3.sqlite"
    conn = sqlite3.connect(path)
    conn.close()
    db = store.open_db(path)
    assert "telemetry" in db.table_names() and "joules_per_token" in db["runs"].columns_dict


def test_model_runner_read_from_the_real_gpu_server_logs():
    from workbench.sweep import runner

    db = store.open_db(ROOT / "docs" / "gpu" / "h200-tp1.sqlite", readonly=True)
    lines = {run: [r["line"] for r in db["logs"].rows_where("run_id = ?", [run])] for run in (1, 3)}
    # vLLM 0.26 serves the baseline with its default runner, and n-gram with the V1 fallback.
    assert runner.model_runner(lines[1]) == {}
    assert runner.model_runner(lines[3]) == {"model_runner": "V1", "async_scheduling": False}
