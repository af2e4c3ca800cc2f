"""Memory estimates from safetensors headers and configs, checked against a real vLLM CPU server."""

from __future__ import annotations

import subprocess
import sys

import pytest

from workbench import launch
from workbench.checkpoints import compat, demo, memory
from workbench.host import gpus


@pytest.fixture(scope="module")
def demo_cp(demo_models):
    return {name: compat.load(str(folder)) for name, folder in demo_models.items()}


def test_weights_from_headers_match_the_bytes_on_disk(demo_models, demo_cp):
    import struct

    path = demo_models[demo.TARGET.name] / "model.safetensors"
    with open(path, "rb") as f:
        header_len = struct.unpack("<Q", f.read(8))[0]
    assert memory.weight_bytes(demo_cp[demo.TARGET.name]) == path.stat().st_size - 8 - header_len
    assert memory.weight_bytes(demo_cp[demo.TARGET.name], "float32") == 2 * memory.weight_bytes(demo_cp[demo.TARGET.name])


def test_kv_cache_per_token():
    from helpers.checkpoints import cp

    # 2 (K and V) x layers x KV heads x head dim x 2 bytes
    assert memory.kv_bytes_per_token(cp("Qwen3-8B")) == 2 * 36 * 8 * 128 * 2
    assert memory.kv_bytes_per_token(cp("DeepSeek-V3-mtp")) == 61 * (512 + 64) * 2  # MLA latent


def test_estimate_is_within_30_percent_of_the_real_cpu_server(draft_server, demo_cp):
    """draft_server: the demo target with its noisy-copy draft, max_model_len 2048, on vLLM's CPU build."""
    est = memory.estimate(demo_cp[demo.TARGET.name], demo_cp[demo.DRAFT_NOISY.name], 2048, 1, "bfloat16", "cpu",
                          dict(draft_server.spec.env))
    assert est.kv_reserved == int(launch.CPU_ENV["VLLM_CPU_KVCACHE_SPACE"]) * memory.GiB
    got = memory.measure_tree(draft_server.proc.pid)
    assert got.processes >= 3
    ratio = est.total / got.pss
    print(f"estimate {memory.gib(est.total)} vs measured PSS {memory.gib(got.pss)} (RSS {memory.gib(got.rss)}): {ratio:.2f}")
    assert 0.7 <= ratio <= 1.3


def test_kv_and_fit_warnings(demo_cp):
    target, draft = demo_cp[demo.TARGET.name], demo_cp[demo.DRAFT_NOISY.name]
    small = memory.estimate(target, draft, 2048, 4, "bfloat16", "cpu", launch.CPU_ENV)
    assert small.warnings() == [] or all("offers" in w for w in small.warnings())
    crowded = memory.estimate(target, draft, 8192, 64, "bfloat16", "cpu", launch.CPU_ENV)
    [kv] = [w for w in crowded.warnings() if "KV cache" in w and "queue" in w]
    assert kv.startswith("the KV cache (1.00 GiB) holds fewer tokens than max_model_len x concurrency needs (22.50 GiB)")
    huge = memory.estimate(target, draft, 2048, 1, "bfloat16", "cpu", {"VLLM_CPU_KVCACHE_SPACE": "100000"})
    assert any("expect an out-of-memory failure" in w for w in huge.warnings())


def test_gpu_memory_from_vendor_tools_output():
    # The formats nvidia-smi and amd-smi print (no GPU here to ask).
    assert gpus.parse_nvidia_smi_memory("143771\n143771\n") == [143771 * 1024 ** 2] * 2
    amd = '[{"gpu": 0, "vram": {"type": "HBM", "vendor": "N/A", "size": {"value": 196592, "unit": "MB"}}}]'
    assert gpus.parse_amd_smi_vram(amd) == [196592 * 1024 ** 2]


PLAN = """
[target]
model = "demo:smollm2-135m"
max_model_len = 8192
[[methods]]
method = "draft_model"
draft = "demo:smollm2-135m-draft-noisy-copy"
n = 2
[workload]
concurrency = [64]
temperature = 0.0
"""


def test_run_warns_about_memory_before_launch(demo_models, tmp_path):
    (tmp_path / "plan.toml").write_text(PLAN)
    done = subprocess.run([sys.executable, "-m", "workbench.cli", "run", "plan.toml", "--dry-run"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "draftbench: warning: draft_model N=2: the KV cache (1.00 GiB) holds fewer tokens" in done.stderr
