"""Draft/target compatibility from config.json and safetensors headers: the demo model and its drafts,
and configs written in the published formats (tests/fixtures/configs)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.checkpoints import CONFIGS, cp, write_header_only_safetensors
from workbench.checkpoints import compat, demo

def variant(tmp_path: Path, name: str, new_name: str, **changes) -> compat.Checkpoint:
    """A copy of a fixture config with some keys changed (dotted keys reach into nested tables)."""
    config = json.loads((CONFIGS / name / "config.json").read_text())
    for key, value in changes.items():
        table = config
        *parents, leaf = key.split("__")
        for p in parents:
            table = table[p]
        table[leaf] = value
    folder = tmp_path / new_name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return compat.load(str(folder))


def levels(verdicts) -> dict[str, str]:
    return {v.check: v.level for v in verdicts}


def message(verdicts, check: str) -> str:
    return next(v.message for v in verdicts if v.check == check)


# --- the demo model and its drafts ----------------------------------------------------------------
@pytest.fixture(scope="module")
def demo_cp(demo_models):
    return {name: compat.load(str(folder)) for name, folder in demo_models.items()}


def test_demo_drafts_are_compatible(demo_cp):
    target = demo_cp[demo.TARGET.name]
    for draft in (demo.DRAFT_NOISY, demo.DRAFT_TRUNCATED):
        verdicts = compat.check("draft_model", 3, target, demo_cp[draft.name], max_model_len=2048)
        assert levels(verdicts) == {"method": "ok", "vocabulary": "ok"}
        assert message(verdicts, "vocabulary") == "draft and target share a 49152-token vocabulary"


def test_safetensors_headers_are_read_without_loading_weights(demo_models):
    tensors = compat.read_tensors(demo_models[demo.TARGET.name])
    assert tensors["model.embed_tokens.weight"] == ("BF16", [49152, 576])
    assert sum(1 for n in tensors if n.endswith("self_attn.k_proj.weight")) == 30


def renamed_copy(demo_models, tmp_path: Path, name: str) -> Path:
    """The noisy-copy draft's config under a folder name vLLM reads a method from (a copy, not a
    symlink: plans resolve symlinks, and so would vLLM)."""
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(demo_models[demo.DRAFT_NOISY.name] / "config.json", folder / "config.json")
    return folder


def test_a_draft_path_naming_another_method_is_caught(demo_models, tmp_path):
    renamed = renamed_copy(demo_models, tmp_path, "smollm2-eagle3-head")
    target = compat.load(str(demo_models[demo.TARGET.name]))
    verdicts = compat.check("draft_model", 2, target, compat.load(str(renamed)))
    assert levels(verdicts)["method"] == "error"
    assert message(verdicts, "method").startswith("vLLM would serve smollm2-eagle3-head as eagle3, not draft_model")


def test_an_ordinary_model_is_not_an_eagle3_head(demo_cp):
    verdicts = compat.check("eagle3", 3, demo_cp[demo.TARGET.name], demo_cp[demo.DRAFT_NOISY.name])
    assert message(verdicts, "method") == ("smollm2-135m-draft-noisy-copy looks like an ordinary language model, "
                                           "not a eagle3 drafter; use method = \"draft_model\" for it")


def test_context_longer_than_the_draft_supports(demo_cp):
    verdicts = compat.check("draft_model", 2, demo_cp[demo.TARGET.name], demo_cp[demo.DRAFT_NOISY.name],
                            max_model_len=16384)
    assert levels(verdicts)["context length"] == "error"
    assert "longer than the draft smollm2-135m-draft-noisy-copy supports (8192 positions)" in message(verdicts, "context length")


# --- published formats ------------------------------------------------------------------------------------
def test_red_hat_speculator_eagle3_on_its_verifier():
    verdicts = compat.check("eagle3", 3, cp("Qwen3-8B"), cp("Qwen3-8B-speculator.eagle3"))
    assert levels(verdicts) == {"method": "ok", "vocabulary": "ok", "hidden size": "ok",
                                "EAGLE-3 layers": "ok", "verifier": "ok"}
    assert message(verdicts, "EAGLE-3 layers") == "auxiliary layers [2, 18, 33] all exist in the target's 36"
    assert message(verdicts, "verifier") == "Qwen3-8B-speculator.eagle3 was trained against this target (Qwen/Qwen3-8B)"


def test_speculators_method_mismatch_is_an_error():
    verdicts = compat.check("dflash", 7, cp("Qwen3-8B"), cp("Qwen3-8B-speculator.eagle3"))
    assert message(verdicts, "method") == ("Qwen3-8B-speculator.eagle3 is a eagle3 checkpoint (from its config.json), "
                                           "but the plan serves it as dflash; set method = \"eagle3\"")


def test_eagle3_on_the_wrong_target(demo_cp):
    verdicts = compat.check("eagle3", 3, demo_cp[demo.TARGET.name], cp("Qwen3-8B-speculator.eagle3"))
    got = levels(verdicts)
    assert got["vocabulary"] == "error" and got["hidden size"] == "error" and got["EAGLE-3 layers"] == "error"
    assert got["verifier"] == "warning"
    assert message(verdicts, "vocabulary").startswith("the draft's vocabulary has 151936 tokens and the target's 49152")
    assert "target has only 30 (0..29)" in message(verdicts, "EAGLE-3 layers")
    assert "trained against Qwen/Qwen3-8B, not" in message(verdicts, "verifier")


def test_eagle3_aux_layers_beyond_a_shallower_target(tmp_path):
    shallow = variant(tmp_path, "Qwen3-8B", "Qwen3-8B-24layers", num_hidden_layers=24)
    verdicts = compat.check("eagle3", 3, shallow, cp("Qwen3-8B-speculator.eagle3"))
    assert levels(verdicts)["EAGLE-3 layers"] == "error"
    assert message(verdicts, "EAGLE-3 layers") == ("the draft reads the target's layers [2, 18, 33], but the target "
                                                   "has only 24 (0..23): it was trained for a deeper model")


def test_eagle3_input_width_from_the_safetensors_header(tmp_path):
    head = tmp_path / "qwen3-4b-eagle3-head"
    shutil.copytree(CONFIGS / "Qwen3-8B-speculator.eagle3", head)
    config = json.loads((head / "config.json").read_text())
    del config["target_hidden_size"]
    (head / "config.json").write_text(json.dumps(config))
    write_header_only_safetensors(head / "model.safetensors", {"fc.weight": ("BF16", [4096, 3 * 2560])})
    verdicts = compat.check("eagle3", 3, cp("Qwen3-8B"), compat.load(str(head)))
    assert message(verdicts, "hidden size") == ("the draft's input layer takes 7680 features, not a multiple of the "
                                                "target's hidden size 4096: it was trained for another target")
    write_header_only_safetensors(head / "model.safetensors", {"fc.weight": ("BF16", [4096, 3 * 4096])})
    assert levels(compat.check("eagle3", 3, cp("Qwen3-8B"), compat.load(str(head))))["hidden size"] == "ok"


def test_zlab_dflash_block_size_against_n(tmp_path):
    ok = compat.check("dflash", 7, cp("Qwen3-8B"), cp("Qwen3-8B-DFlash-b16"))
    assert levels(ok) == {"method": "ok", "vocabulary": "ok", "hidden size": "ok", "target layers": "ok",
                          "block size": "ok"}
    assert message(ok, "block size") == "N=7 fits the drafter's block of 16"
    b8 = variant(tmp_path, "Qwen3-8B-DFlash-b16", "Qwen3-8B-DFlash-b8", block_size=8)
    verdicts = compat.check("dflash", 11, cp("Qwen3-8B"), b8)
    assert message(verdicts, "block size") == "N=11 does not fit the drafter's block of 8: at most 7 tokens per step"
    assert levels(compat.check("dflash", 7, cp("Qwen3-8B"), b8))["block size"] == "ok"


def test_dflash_on_a_shallower_target(tmp_path):
    shallow = variant(tmp_path, "Qwen3-8B", "Qwen3-1.7B", num_hidden_layers=28)
    verdicts = compat.check("dflash", 7, shallow, cp("Qwen3-8B-DFlash-b16"))
    assert [v.level for v in verdicts if v.check == "target layers"] == ["error", "warning"]
    assert "has only 28" in message(verdicts, "target layers")


def test_gemma4_assistant_with_its_own_and_other_targets():
    assistant = cp("gemma-4-26B-A4B-it-assistant")
    own = compat.check("mtp", 3, cp("gemma-4-26B-A4B-it"), assistant)
    assert levels(own) == {"method": "ok", "vocabulary": "ok", "assistant": "ok"}
    assert message(own, "assistant") == "gemma-4-26B-A4B-it-assistant is the assistant published for gemma-4-26B-A4B-it"
    other = compat.check("mtp", 3, cp("gemma-4-31B-it"), assistant)
    assert levels(other)["hidden size"] == "error" and levels(other)["assistant"] == "warning"
    assert message(other, "hidden size") == ("the assistant was built for a target with hidden size 2816, "
                                             "but this target has 5376")
    not_gemma = compat.check("mtp", 1, cp("Qwen3-8B"), assistant)
    assert levels(not_gemma)["assistant"] == "error" and levels(not_gemma)["vocabulary"] == "error"
    wrong_method = compat.check("eagle3", 3, cp("gemma-4-26B-A4B-it"), assistant)
    assert "is a mtp checkpoint" in message(wrong_method, "method")


def test_native_mtp_needs_mtp_layers():
    assert message(compat.check("mtp", 1, cp("DeepSeek-V3-mtp"), None), "MTP") == "the target carries 1 MTP layer(s)"
    assert levels(compat.check("mtp", 3, cp("DeepSeek-V3-mtp"), None)) == {"MTP": "warning"}
    assert message(compat.check("mtp", 2, cp("Qwen3-8B"), None), "MTP").startswith("Qwen3-8B has no MTP layers")


def test_speculator_served_with_another_target(tmp_path):
    base = variant(tmp_path, "Qwen3-8B", "Qwen3-8B-Base")
    verdicts = compat.check("eagle3", 3, base, cp("Qwen3-8B-speculator.eagle3"))
    assert levels(verdicts)["verifier"] == "warning"
    assert message(verdicts, "verifier").endswith("expect lower acceptance")


# --- the launch hook ---------------------------------------------------------------------------------------
PLAN = """
[target]
model = "{target}"
[[methods]]
method = "{method}"
draft = "{draft}"
n = 3
[workload]
temperature = 0.0
"""


def _run(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "workbench.cli", "run", *args], capture_output=True, text=True,
                          cwd=tmp_path)


def test_run_refuses_an_incompatible_pair_before_any_server(demo_models, tmp_path):
    renamed = renamed_copy(demo_models, tmp_path, "smollm2-eagle3-head")
    (tmp_path / "plan.toml").write_text(PLAN.format(target="demo:smollm2-135m", method="draft_model", draft=renamed))
    # No vLLM behind it: had the check let the plan through, the run would stop at "no vLLM" instead.
    done = _run(tmp_path, "plan.toml", "--db", str(tmp_path / "r.sqlite"), "--vllm-python", str(tmp_path / "none"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(
        "draftbench: draft_model N=3 (smollm2-eagle3-head): vLLM would serve smollm2-eagle3-head as eagle3")
    assert not (tmp_path / "r.sqlite").exists()


def test_run_warns_and_goes_on(tmp_path):
    base = variant(tmp_path, "Qwen3-8B", "Qwen3-8B-Base")
    (tmp_path / "plan.toml").write_text(PLAN.format(target=base.ref, method="eagle3",
                                                    draft=CONFIGS / "Qwen3-8B-speculator.eagle3"))
    done = _run(tmp_path, "plan.toml", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "draftbench: warning: eagle3 N=3 (Qwen3-8B-speculator.eagle3): Qwen3-8B-speculator.eagle3 was trained " \
           "against Qwen/Qwen3-8B" in done.stderr
    assert "vllm serve" in done.stdout
