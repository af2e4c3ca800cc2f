"""AMD Instinct support, against recorded real output (tests/fixtures/rocm/SOURCES.md): the amd-smi
and rocm-smi parsers, the attention backend from vLLM's log, ROCm host detection and the launch
profile it proposes (its `docker run` checked by the docker stand-in), the gpu extra refused on a
ROCm host, known-bad combinations warned before launch and stored with the run, provenance stored
and shown, and Compare flagging runs whose provenance differs."""

import ast
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from helpers.plans import demo_plan
from workbench import launch, plan, store
from workbench.host import amdsmi, detect, engine, provenance
from workbench.launch import provenance as server_provenance
from workbench.metrics import telemetry
from workbench.plan import knownbad, profiles
from workbench.usecases import findings, gpu_setup

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = '[workload]\nnum_prompts = 4\nmax_tokens = 32\nwarmup = 0\nconcurrency = [1]\ntemperature = 0.0\n'

FIX = Path(__file__).parent / "fixtures" / "rocm"
TELEMETRY = Path(__file__).parent / "fixtures" / "telemetry"
STANDIN = Path(__file__).parent / "helpers" / "standins" / "docker"
MI300A_STATIC = (FIX / "amd-smi-static-mi300a.txt").read_text()


def fake_amd_smi(folder: Path, static: Path = FIX / "amd-smi-static-mi300a.txt") -> Path:
    """An `amd-smi` that answers `static` and `topology` with recorded output, and nothing else."""
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / "amd-smi"
    tool.write_text(f"#!{sys.executable}\nimport sys\n"
                    f"answers = {{'static': {str(static)!r}, "
                    f"'topology': {str(FIX / 'amd-smi-topology-access-type-2gpu.json')!r}}}\n"
                    "path = answers.get(sys.argv[1] if len(sys.argv) > 1 else '')\n"
                    "sys.exit(1) if path is None else print(open(path).read())\n")
    tool.chmod(0o755)
    return folder


@pytest.fixture
def rocm_host(tmp_path, monkeypatch):
    """This machine as a ROCm host: amd-smi on PATH printing an MI300A node's recorded output."""
    folder = fake_amd_smi(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder


# --- parsers -----------------------------------------------------------------------------------

def test_amd_smi_static_text_on_an_mi300a_node():
    facts = amdsmi.static_facts(MI300A_STATIC)
    # Four APUs; the four EPYC "CPU:" blocks before them are not GPUs.
    assert [f.gpu for f in facts] == [0, 1, 2, 3]
    assert {f.model for f in facts} == {"MI300A"}
    assert {(f.compute_partition, f.memory_partition) for f in facts} == {("SPX", "NPS1")}
    assert [f.power_cap_w for f in facts] == [550.0] * 4
    assert [f.numa_node for f in facts] == [0, 1, 2, 3]
    assert facts[0].firmware is None  # VBIOS: N/A on that node
    assert facts[0].driver == "6.9.0-rc5+"


def test_amd_smi_static_json_reads_vbios_and_power_cap():
    (fact,) = amdsmi.static_facts((TELEMETRY / "amd-smi-static-list-rx6600.json").read_text())
    assert fact.firmware == "020.003.000.030.000000"
    assert fact.power_cap_w == 100.0
    assert fact.compute_partition is None and fact.memory_partition is None  # N/A on a Radeon


def test_amd_smi_metric_on_mi300_reads_partitioned_usage():
    # The MI300 `--usage` sample in the text layout, read into the JSON layout's tree.
    gpus = amdsmi.read((FIX / "amd-smi-metric-usage-mi300.txt").read_text())
    assert len(gpus) == 2
    assert len(gpus[0]["usage"]["gfx_busy_inst"]) == 8  # one list per XCP
    assert len(gpus[0]["usage"]["jpeg_activity"]) == 32  # a list continued over three lines
    readings = telemetry.parse_amd_smi_metric(json.dumps(gpus), t=1.0)
    assert [(r.physical, r.util_pct) for r in readings] == [(0, 0.0), (1, 0.0)]


def test_amd_smi_topology_json():
    links = amdsmi.topology_links((FIX / "amd-smi-topology-access-type-2gpu.json").read_text())
    assert links == {0: {1: "PCIE"}, 1: {0: "PCIE"}}
    assert amdsmi.interconnect(links) == "PCIE"


def test_rocm_smi_meminfo_where_amd_smi_is_absent():
    vram = amdsmi.rocm_smi_vram((FIX / "rocm-smi-showmeminfo-vram-mi300x-cpx.txt").read_text())
    assert [v.gpu for v in vram] == list(range(7))
    assert {v.total_bytes for v in vram} == {206141652992}  # 192 GiB: each CPX partition shows it all
    (one,) = amdsmi.rocm_smi_vram((FIX / "rocm-smi-showmeminfo-vram-1gpu.txt").read_text())
    assert one == amdsmi.Vram(gpu=0, total_bytes=4278190080, used_bytes=108814336)
    prov = provenance.rocm_host(static_text="", topology_text="",
                                meminfo_text=(FIX / "rocm-smi-showmeminfo-vram-mi300x-cpx.txt").read_text())
    assert prov["gpu_model"] == "7 AMD GPU(s), 192 GiB VRAM each"


def test_attention_backend_from_a_recorded_mi300x_log():
    lines = (FIX / "vllm-rocm-attention-backend-mi300x.log").read_text().splitlines()
    assert provenance.attention_backend(lines) == "ROCM_ATTN"
    assert provenance.attention_backend(["INFO Using TRITON Unquantized MoE backend out of potential backends"]) is None


def test_attention_backend_matches_every_selection_message_of_vllm(vllm_install):
    # The messages vLLM's ROCm platform logs when it picks a backend, read from its source.
    source = Path(vllm_install.package_dir, "platforms", "rocm.py").read_text()
    messages = [node.args[0].value for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str) and "potential backends" in node.args[0].value
                or isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and "selected via --attention-backend" in str(node.args[0].value)]
    assert len(messages) >= 3
    for message in messages:
        # The chosen backend where the message names it, other backends (rejected, or the valid list) elsewhere.
        filled = (message.replace("Using %s", "Using ROCM_AITER_FA").replace("Overriding with %s", "Overriding with "
                  "ROCM_AITER_FA").replace("%s", "['TRITON_ATTN', 'ROCM_ATTN']"))
        assert provenance.attention_backend([f"INFO 04-21 12:32:12 [rocm.py:496] {filled}"]) == "ROCM_AITER_FA", message


def test_provenance_from_the_host_and_a_docker_profile(rocm_host, tmp_path):
    host = provenance.rocm_host(selected=(1, 2))
    assert host["gpu_model"] == "MI300A" and host["power_cap_w"] == "550"
    assert (host["compute_partition"], host["memory_partition"]) == ("SPX", "NPS1")
    p = plan.loads('name = "p"\n[target]\nmodel = "org/m"\n[profile]\nkind = "docker"\nplatform = "rocm"\n'
                   'image = "vllm/vllm-openai-rocm:v0.27.1"\nrocm_use_aiter = true\n'
                   f'docker = "{STANDIN}"\nhf_cache = "{tmp_path}"\n' + WORKLOAD)
    server = p.runs[0].server
    spec = launch.prepare(server, engine.VllmInstall("python3", "3.11", None, None, None, None, None), 0, "rocm")
    prov = server_provenance.for_server(server, spec, engine.VllmInstall("python3", "3.11", None, None, None, None, None),
                                        {"platform": "rocm", **host},
                                        (FIX / "vllm-rocm-attention-backend-mi300x.log").read_text().splitlines(),
                                        "0.27.1")
    assert prov["image"] == "vllm/vllm-openai-rocm:v0.27.1" and prov["vllm_version"] == "0.27.1"
    assert prov["rocm_env"] == {"VLLM_ROCM_USE_AITER": "1"}
    assert prov["attention_backend"] == "ROCM_ATTN"
    assert "image_digest" not in prov  # the stand-in has no image store: not pulled, so no digest
    shown = dict(provenance.rows(prov))
    assert shown["compute partition"] == "SPX" and shown["ROCm variables"] == "VLLM_ROCM_USE_AITER=1"


def test_vllm_commit_from_its_version_file_or_version(tmp_path):
    (tmp_path / "_version.py").write_text("__commit_id__ = commit_id = 'a1b2c3d4e5f6'\n")
    assert provenance.vllm_commit(str(tmp_path), "0.27.1") == "a1b2c3d4e5f6"
    assert provenance.vllm_commit(None, "0.22.1rc1.dev499+g470229c37.d20260613") == "470229c37"
    assert provenance.vllm_commit(None, "0.27.1") is None


# --- host detection, the proposed profile, the gpu extra ---------------------------------------

def test_a_rocm_host_is_detected_and_gets_the_rocm_image_through_docker(rocm_host, demo_models, tmp_path):
    host = detect.scan(kfd=tmp_path / "no-kfd")
    assert host.accelerator == "rocm" and host.gpus == ("MI300A",) * 4 and "amd-smi" in host.tools
    assert host.lines()[0] == "ROCm host: 4 GPU(s) (MI300A, MI300A, MI300A, MI300A)"
    host = detect.Host(host.accelerator, host.gpus, host.tools, False, str(STANDIN))
    proposal = gpu_setup.propose(host, engine.VllmInstall("python3", "3.11", None, None, None, None, None))
    assert proposal.profile.kind == "docker" and proposal.profile.image == profiles.ROCM_IMAGE
    # The demo target served with it: the docker stand-in checks the command line as the engine would.
    p = plan.loads('name = "demo"\n[target]\nmodel = "demo:smollm2-135m"\nserved_name = "smollm2"\n' + WORKLOAD)
    demo = p.runs[0].server.target
    server = replace(p.runs[0].server, profile=proposal.profile)
    spec = launch.prepare(server, engine.VllmInstall("python3", "3.11", None, None, None, None, None), 8123, "rocm")
    state = tmp_path / "standin"
    state.mkdir()
    env = {**os.environ, "DRAFTBENCH_STANDIN_DIR": str(state), "DRAFTBENCH_STANDIN_CHECK_ONLY": "1",
           "DRAFTBENCH_STANDIN_PYTHON": sys.executable}
    done = subprocess.run(spec.argv, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    (call,) = [json.loads(line) for line in (state / "calls.jsonl").read_text().splitlines()]
    assert call["image"] == "vllm/vllm-openai-rocm:latest"
    assert call["argv"][call["argv"].index("--device") + 1] == "/dev/kfd" and "--group-add=video" in call["argv"]
    assert f"{demo}:{demo}:ro" in call["argv"] and "--served-model-name" in call["argv"]


def test_the_stand_in_refuses_a_rocm_container_without_the_gpu_devices(tmp_path):
    state = tmp_path / "standin"
    state.mkdir()
    env = {**os.environ, "DRAFTBENCH_STANDIN_DIR": str(state), "DRAFTBENCH_STANDIN_CHECK_ONLY": "1"}
    done = subprocess.run([str(STANDIN), "run", "--rm", "--name", "x", "-p", "127.0.0.1:1:1", "--entrypoint",
                           "vllm", "vllm/vllm-openai-rocm:latest", "serve", "m"], env=env, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 125 and "/dev/kfd" in done.stderr


def test_no_gpu_keeps_the_cpu_build(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no vendor tool at all
    host = detect.scan(kfd=tmp_path / "no-kfd")
    assert host.accelerator == "none"
    assert gpu_setup.propose(host, engine.VllmInstall("python3", "3.11", None, None, None, None, None)).profile is None
    assert detect.refuse_extra(host, "gpu") is None


def test_a_found_rocm_vllm_environment_is_proposed_without_docker():
    host = detect.Host("rocm", ("AMD Instinct MI300X",), ("amd-smi",), True, None)
    vllm = engine.VllmInstall("/opt/venv/bin/python", "3.12", "0.27.1", "vllm", "/x/vllm", "2.9.0+rocm7.0", "4.57")
    proposal = gpu_setup.propose(host, vllm)
    assert proposal.profile.kind == "local" and proposal.profile.python == "/opt/venv/bin/python"


def test_the_gpu_extra_is_refused_on_a_simulated_rocm_host(rocm_host):
    # Exactly what scripts/bootstrap.sh runs before installing an extra.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "workbench.host.detect", "--extra", "gpu"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert done.stderr.strip().splitlines() == [detect.ROCM_ROUTE]
    assert "vllm/vllm-openai-rocm" in done.stderr
    ok = subprocess.run([sys.executable, "-m", "workbench.host.detect", "--extra", "cpu"], env=env,
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stdout.startswith("ROCm host: 4 GPU(s)")


def test_bootstrap_stops_before_installing_the_gpu_extra_on_a_rocm_host(rocm_host, tmp_path):
    # The bootstrap's own host check, run on its own (the rest would install packages).
    script = (ROOT / "scripts" / "bootstrap.sh").read_text()
    body = "\n".join(line for line in script.splitlines() if line.startswith("say()"))
    start = script.index("host_check() {")
    body += "\n" + script[start:script.index("\n}\n", start) + 3]
    done = subprocess.run(["bash", "-c", f"set -euo pipefail\n{body}\nROOT={ROOT}\nEXTRAS=gpu,test\nhost_check\n"
                           "echo installed"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": f"{rocm_host}{os.pathsep}{os.environ['PATH']}"})
    assert done.returncode == 3 and "installed" not in done.stdout
    assert detect.ROCM_ROUTE in done.stderr


def test_a_cuda_vllm_on_a_rocm_host_stops_a_local_plan_with_the_rocm_route(demo_models):
    # What `pip install draftbench[gpu]` leaves on a ROCm host.
    cuda_vllm = engine.VllmInstall("/venv/bin/python", "3.11", "0.27.1", "vllm", "/venv/vllm", "2.9.0", "4.57")
    p = plan.loads('name = "p"\n[target]\nmodel = "demo:smollm2-135m"\n' + WORKLOAD)
    errors = findings.errors(findings.preflight(p, cuda_vllm, host_platform="rocm"))
    assert [e.message for e in errors] == [f"vLLM 0.27.1 in /venv/bin/python is a CUDA build; {detect.ROCM_ROUTE}"]
    assert not findings.errors(findings.preflight(p, cuda_vllm, host_platform="cuda"))


def test_a_saved_default_profile_is_used_by_plans_naming_none(tmp_path, monkeypatch):
    monkeypatch.setattr(profiles, "saved_path", lambda: tmp_path / "profiles.toml")
    gpu_setup.save(profiles.Profile(kind="docker", platform="rocm", image=profiles.ROCM_IMAGE), make_default=True)
    p = plan.loads('name = "p"\n[target]\nmodel = "org/m"\n' + WORKLOAD)
    assert p.runs[0].server.profile.kind == "docker" and p.runs[0].server.profile.image == profiles.ROCM_IMAGE


# --- a sweep on a (simulated) ROCm host: known problems warned and stored, provenance stored ----



def mtp_plan(profile: dict, method: dict | None = None) -> str:
    return demo_plan("rocm-attach", target={"enforce_eager": None}, profile=profile,
                     methods=[method or {"method": "mtp", "n": 3}],
                     workload={"num_prompts": 4, "max_tokens": 32, "warmup": 0})


def attach_profile(url: str) -> dict:
    return {"kind": "attach", "base_url": url, "api_key_env": "STANDIN_KEY"}


def test_known_bad_rows_cite_sources_and_versions():
    rows = knownbad.load()
    assert rows and all(r.sources and all(s.startswith("https://github.com/") for s in r.sources) for r in rows)
    assert all(knownbad.version_tuple(r.vllm_from) for r in rows)
    eagle_aiter = [r for r in rows if "eagle3" in r.methods and "ROCM_AITER_FA" in r.attention_backends]
    assert eagle_aiter and "vllm-project/vllm/pull/54180" in eagle_aiter[0].sources[0]
    assert eagle_aiter[0].applies("eagle3", "ROCM_AITER_FA", "0.27.1")
    assert not eagle_aiter[0].applies("eagle3", "ROCM_AITER_FA", "0.26.0")  # before it was reported
    assert not eagle_aiter[0].applies("eagle3", "TRITON_ATTN", "0.27.1")
    assert knownbad.image_version("vllm/vllm-openai-rocm:v0.27.1") == "0.27.1"
    assert knownbad.image_version("vllm/vllm-openai-rocm:latest") is None
    assert knownbad.image_version("localhost:5000/vllm") is None


def test_preflight_warns_of_a_known_bad_combination_only_on_rocm(demo_models, vllm_install):
    p = plan.loads(mtp_plan({"kind": "docker", "image": "vllm/vllm-openai-rocm:v0.27.1",
                              "attention_backend": "ROCM_AITER_FA"},
                             {"method": "eagle3", "draft": "org/eagle3-head", "n": 3}))
    found = [f for f in findings.preflight(p, vllm_install, host_platform="rocm") if "known problem" in f.message]
    assert len(found) == 1 and found[0].level == findings.WARNING and found[0].label == "eagle3 N=3"
    assert "https://github.com/vllm-project/vllm/pull/54180" in found[0].message and "0.27.1" in found[0].message
    assert not [f for f in findings.preflight(p, vllm_install, host_platform="cuda") if "known problem" in f.message]


def test_a_sweep_on_a_rocm_host_stores_the_warning_and_the_provenance(rocm_host, standin_server, demo_models,
                                                                      vllm_install, tmp_path, monkeypatch):
    from workbench.analysis import run_summary
    from workbench.sweep import runner

    monkeypatch.setenv("STANDIN_KEY", standin_server.api_key)
    monkeypatch.setenv("VLLM_ROCM_USE_AITER", "1")
    p = plan.loads(mtp_plan(attach_profile(standin_server.base_url)))
    events: list = []
    db_path = tmp_path / "rocm.sqlite"
    summary = runner.Runner(p, str(db_path), vllm_install, emit=events.append, scrape_interval_s=0.1).run()
    assert summary["completed"] == 1
    # Said before anything was measured ...
    started = next(e for e in events if e.KIND == "sweep_started")
    known = [w for w in started.warnings if w.startswith("known problem on ROCm for eagle3/mtp")]
    assert len(known) == 1 and "https://github.com/vllm-project/vllm/issues/46596" in known[0]
    db = store.open_db(db_path, readonly=True)
    (row,) = store.runs(db)
    # ... and stored with the run.
    assert known[0] in json.loads(row.warnings)
    prov = json.loads(row.provenance)
    assert prov["kind"] == "attach" and prov["platform"] == "rocm"
    assert prov["gpu_model"] == "MI300A" and prov["compute_partition"] == "SPX" and prov["memory_partition"] == "NPS1"
    assert prov["power_cap_w"] == "550" and prov["interconnect"] == "PCIE"
    # An attached server was started by someone else: this shell's AITER switch says nothing about it.
    assert "rocm_env" not in prov
    assert prov["vllm_version"] == launch.server_version(standin_server.base_url) == "0.32.0"
    assert ("warning", known[0]) in run_summary(db, row)
    shown = dict(run_summary(db, row))
    assert shown["provenance: compute partition"] == "SPX" and shown["provenance: power cap (W)"] == "550"
    # export-bench carries it along.
    from workbench.report import benchjson

    assert benchjson.export_run(row)["draftbench_provenance"] == prov


def test_compare_flags_runs_whose_provenance_differs(qtbot):
    from app.pages.compare_page import ComparePage
    from app.widgets.provenance_note import ProvenanceNote

    base = {"kind": "docker", "image": "vllm/vllm-openai-rocm:v0.27.1", "memory_partition": "NPS1",
            "attention_backend": "ROCM_ATTN"}
    rows = [store.run_record({"id": i, "experiment_id": 1, "status": "completed", "provenance": text})
            for i, text in ((1, json.dumps(base)), (2, json.dumps({**base, "memory_partition": "NPS4"})), (3, None))]
    note = ProvenanceNote()
    qtbot.addWidget(note)
    note.show_for(rows)
    assert not note.isHidden() and note.fields == ["memory partition"]
    assert "NPS4 (runs 2)" in note.toolTip() and "NPS1 (runs 1)" in note.toolTip()
    note.show_for(rows[:1] + rows[2:])  # one provenance, and a run without any: nothing to flag
    assert note.isHidden()
    page = ComparePage()
    qtbot.addWidget(page)
    assert isinstance(page.provenance_note, ProvenanceNote)
