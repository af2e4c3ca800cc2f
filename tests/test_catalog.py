"""The catalog of published pairs and the plans made from them."""

import subprocess
import sys

from workbench import methods, plan
from workbench.plan import catalog


def test_catalog_holds_every_publisher_and_valid_methods():
    pairs = catalog.load()
    publishers = {p.publisher for p in pairs}
    assert {"Google", "Z-Lab", "Red Hat AI", "DeepSeek", "LightSeek", "Inferact", "Draftbench"} <= publishers
    for p in pairs:
        spec = methods.get(p.method)
        assert p.n and all(spec.max_n is None or n <= spec.max_n for n in p.n), p.name
    gemma = catalog.get("gemma-4-26b-a4b-assistant")
    assert gemma.method == "mtp" and gemma.gated and gemma.target == "google/gemma-4-26B-A4B-it"
    assert not catalog.get("qwen3-8b-speculator-eagle3").gated
    assert [p.draft for p in catalog.for_target("qwen/qwen3-8b")] == [
        "z-lab/Qwen3-8B-DFlash-b16", "RedHatAI/Qwen3-8B-speculator.eagle3",
        "deepseek-ai/eagle3_qwen3_8b_ttt7", "deepseek-ai/dflash_qwen3_8b_block7", "deepseek-ai/dspark_qwen3_8b_block7"]


def test_every_pair_makes_a_valid_plan():
    for pair in catalog.load():
        p = plan.loads(catalog.plan_text(pair))
        spec_runs = [r for r in p.runs if r.server.method != "baseline"]
        assert sorted({r.server.n for r in spec_runs}) == sorted(pair.n)
        assert {r.server.method for r in p.runs} == {"baseline", pair.method}


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], capture_output=True, text=True, cwd=cwd)


def test_cli_new_writes_a_plan_and_never_overwrites(tmp_path):
    done = _cli("new", "--pair", "demo", "--out", "plan.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    p = plan.load(tmp_path / "plan.toml")
    assert {r.server.draft for r in p.runs if r.server.draft}.pop().endswith("smollm2-135m-draft-noisy-copy")
    again = _cli("new", "--pair", "demo", "--out", "plan.toml", cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr
    unknown = _cli("new", "--pair", "qwen", cwd=tmp_path)
    assert unknown.returncode == 2 and "did you mean qwen3-8b-dflash-b16" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    listing = _cli("catalog", cwd=tmp_path)
    assert listing.returncode == 0 and "RedHatAI/Qwen3-8B-speculator.eagle3" in listing.stdout
