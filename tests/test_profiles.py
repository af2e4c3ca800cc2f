"""Launch profiles: the argv and environment of local and docker launches on ROCm and NVIDIA,
tensor parallelism, GPU selection, and the rules vLLM enforces (checked before anything starts)."""

import json
import shlex

import pytest

from workbench import launch, plan
from workbench.host import engine
from workbench.plan import profiles
from workbench.plan.profiles import Profile, ProfileError

CUDA_VLLM = engine.VllmInstall("/opt/venv/bin/python", "3.12.3", "0.26.0", "vllm", "/opt/venv/vllm",
                               "2.11.0+cu130", "5.17.0")
ROCM_VLLM = engine.VllmInstall("/opt/venv/bin/python", "3.12.3", "0.23.0", "vllm", "/opt/venv/vllm",
                               "2.10.0+rocm7.2", "5.17.0")


def server(profile: Profile, method="draft_model", n=3, draft="/models/draft") -> plan.Server:
    return plan.Server("/models/target", "target", method, n, draft, (), 4096, "bfloat16", (), (), False,
                       False, profile)


def spec_config(spec: launch.LaunchSpec) -> dict:
    return json.loads(spec.vllm_args[spec.vllm_args.index("--speculative-config") + 1])


def test_local_cuda_tensor_parallel_and_gpu_selection():
    p = profiles.from_table({"platform": "cuda", "gpus": [2, 3], "tensor_parallel_size": 2})
    spec = launch.prepare(server(p), CUDA_VLLM, 8001, "cuda")
    assert spec.argv[0] == "/opt/venv/bin/python"
    assert spec.vllm_args[spec.vllm_args.index("--tensor-parallel-size") + 1] == "2"
    assert spec.env["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert spec.env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"  # the indices NVML reports
    assert "HIP_VISIBLE_DEVICES" not in spec.env
    # The draft is sharded like the target unless told otherwise, and the command says so.
    assert spec_config(spec)["draft_tensor_parallel_size"] == 2
    assert p.physical_to_visible() == {2: 0, 3: 1}


def test_local_rocm_keeps_hip_and_cuda_visible_devices_equal_and_sets_aiter():
    p = profiles.from_table({"gpus": [4, 5, 6, 7], "tensor_parallel_size": 4, "rocm_use_aiter": True,
                             "attention_backend": "TRITON_ATTN", "draft_tensor_parallel_size": 1})
    spec = launch.prepare(server(p, "dflash", 7, "/models/dflash"), ROCM_VLLM, 8002, "rocm")
    assert spec.env["HIP_VISIBLE_DEVICES"] == spec.env["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"
    assert spec.env["VLLM_ROCM_USE_AITER"] == "1"
    args = spec.vllm_args
    assert args[args.index("--attention-backend") + 1] == "TRITON_ATTN"
    assert args[args.index("--tensor-parallel-size") + 1] == "4"
    assert spec_config(spec) == {"method": "dflash", "num_speculative_tokens": 7, "model": "/models/dflash",
                                 "draft_tensor_parallel_size": 1}


def test_ngram_gets_no_draft_tensor_parallel_size():
    p = profiles.from_table({"tensor_parallel_size": 2})
    spec = launch.prepare(server(p, "ngram", 4, None), CUDA_VLLM, 8003, "cuda")
    assert "draft_tensor_parallel_size" not in spec_config(spec)


def test_docker_rocm_argv(monkeypatch):
    p = profiles.from_table({"kind": "docker", "gpus": [0, 1], "tensor_parallel_size": 2,
                             "rocm_use_aiter": False, "hf_cache": "/data/hf"})
    spec = launch.prepare(server(p), ROCM_VLLM, 8004, "rocm")
    argv = spec.argv
    assert argv[:3] == ["docker", "run", "--rm"]
    line = shlex.join(argv)
    for flag in ("--device /dev/kfd", "--device /dev/dri", "--group-add=video", "--ipc=host",
                 "--cap-add=SYS_PTRACE", "--security-opt seccomp=unconfined"):
        assert flag in line
    assert argv[argv.index("-p") + 1] == "127.0.0.1:8004:8004"  # published on loopback only
    assert "/data/hf:/root/.cache/huggingface/hub" in argv
    assert "/models/target:/models/target:ro" in argv and "/models/draft:/models/draft:ro" in argv
    assert "HIP_VISIBLE_DEVICES=0,1" in argv and "CUDA_VISIBLE_DEVICES=0,1" in argv
    assert "VLLM_ROCM_USE_AITER=0" in argv
    i = argv.index("--entrypoint")
    assert argv[i + 1:i + 3] == ["vllm", profiles.ROCM_IMAGE]
    assert argv[i + 3:i + 5] == ["serve", "/models/target"]
    assert argv[argv.index("--host") + 1] == "0.0.0.0"  # inside the container
    # Secrets go by name only: their values never appear in argv (or the stored command).
    assert "HF_TOKEN" in argv and "VLLM_API_KEY" in argv
    assert not any(a.startswith(("HF_TOKEN=", "VLLM_API_KEY=")) for a in argv)
    assert spec.stop_argv[:2] == ("docker", "stop") and spec.stop_argv[-1] == argv[argv.index("--name") + 1]
    assert spec.command.startswith("docker run --rm")


def test_docker_nvidia_argv_selects_gpus_with_the_gpus_flag():
    p = profiles.from_table({"kind": "docker", "gpus": [1], "image": "vllm/vllm-openai:v0.26.0"})
    argv = launch.prepare(server(p), CUDA_VLLM, 8005, "cuda").argv
    assert argv[argv.index("--gpus") + 1] == '"device=1"'
    assert "--device" not in argv and "CUDA_VISIBLE_DEVICES=1" not in argv
    assert "vllm/vllm-openai:v0.26.0" in argv
    all_gpus = launch.prepare(server(profiles.from_table({"kind": "docker"})), CUDA_VLLM, 8006, "cuda").argv
    assert all_gpus[all_gpus.index("--gpus") + 1] == "all"
    assert profiles.CUDA_IMAGE in all_gpus


@pytest.mark.parametrize("table, message", [
    ({"kind": "kubernetes"}, "profile.kind must be one of"),
    ({"tensor_parallel_size": 0}, "tensor_parallel_size must be a whole number"),
    ({"tensor_parallel_size": 2, "draft_tensor_parallel_size": 3}, "must be 1 or the target's"),
    ({"gpus": [0], "tensor_parallel_size": 2}, "each shard needs its own GPU"),
    ({"gpus": [0, 0]}, "distinct GPU indices"),
    ({"kind": "attach"}, "needs base_url"),
    ({"kind": "attach", "base_url": "localhost:8000"}, "needs base_url"),
    ({"base_url": "http://x:1"}, "belongs to kind"),
    ({"image": "vllm/vllm-openai"}, "belongs to kind"),
    ({"env": {"HF_TOKEN": "hf_x"}}, "secrets come from your environment"),
    ({"attention_backend": "TRITON ATTN; rm"}, "backend name"),
    ({"colour": "red"}, "unknown key 'colour'"),
])
def test_bad_profiles_get_one_line_messages(table, message):
    with pytest.raises(ProfileError, match=message):
        profiles.from_table(table)


def test_plan_profile_table_and_saved_profiles(tmp_path, monkeypatch):
    monkeypatch.setenv("DRAFTBENCH_CONFIG_DIR", str(tmp_path))
    saved = profiles.from_table({"name": "mi300x", "gpus": [0, 1], "tensor_parallel_size": 2, "platform": "rocm"})
    profiles.save(saved)
    assert profiles.load_saved() == {"mi300x": saved}
    text = ('profile = "mi300x"\n[target]\nmodel = "Qwen/Qwen3-8B"\n[[methods]]\nmethod = "ngram"\nn = 2\n'
            '[workload]\ntemperature = 0.0\n')
    p = plan.loads(text)
    assert {r.server.profile for r in p.runs} == {saved}
    # A profile changes the run keys (a different measurement); the default keeps old keys.
    default = plan.loads(text.replace('profile = "mi300x"\n', ""))
    assert {r.key for r in p.runs}.isdisjoint({r.key for r in default.runs})
    with pytest.raises(plan.PlanError, match="no saved launch profile named 'h100'"):
        plan.loads(text.replace("mi300x", "h100"))
    profiles.delete("mi300x")
    assert profiles.load_saved() == {}


def test_default_profile_keeps_existing_run_keys():
    # The key of a run written before profiles existed (schema 3) must not change, or a resume
    # would redo completed runs.
    s = plan.Server("t", "t", "ngram", 2, None, (("prompt_lookup_min", 2),), 2048, "auto", (), (), False, True)
    import hashlib
    from dataclasses import asdict
    fields = asdict(s)
    del fields["profile"]
    del fields["launch"]  # nor before relaunch existed
    for name in ("what_if", "imposed", "imposed_source"):
        del fields[name]  # nor before what-if sweeps existed
    old = hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()[:16]
    assert s.key == old


def test_attach_plan_is_one_configuration():
    base = ('[target]\nmodel = "Qwen/Qwen3-8B"\n[profile]\nkind = "attach"\nbase_url = "http://127.0.0.1:8000/v1"\n'
            '[workload]\ntemperature = 0.0\n')
    p = plan.loads(base + '[[methods]]\nmethod = "ngram"\nn = 3\n')
    assert [(r.server.method, r.server.n) for r in p.runs] == [("ngram", 3)]
    assert p.runs[0].server.profile.base_url == "http://127.0.0.1:8000"
    assert [r.server.method for r in plan.loads(base).runs] == ["baseline"]
    with pytest.raises(plan.PlanError, match="one configuration"):
        plan.loads(base + '[[methods]]\nmethod = "ngram"\nn = [3, 4]\n')
