"""Zero-padded attention heads: the demo target made divisible by tensor-parallel sizes computes
the same function (checked with transformers on the real demo weights)."""

import json

import pytest

from workbench.checkpoints import demo, headpad


@pytest.mark.parametrize("q, kv, tp, expected", [(9, 3, 2, (12, 4)), (9, 3, 4, (12, 4)), (9, 3, 3, (9, 3)),
                                                 (32, 8, 8, (32, 8)), (15, 5, 2, (18, 6))])
def test_padded_head_counts_keep_the_group_size(q, kv, tp, expected):
    new_q, new_kv = headpad.padded_heads(q, kv, tp)
    assert (new_q, new_kv) == expected
    assert new_q % tp == 0 and new_kv % tp == 0 and new_q // new_kv == q // kv


def test_padded_demo_target_computes_the_same_logits(demo_models, tmp_path):
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = demo_models[demo.TARGET.name]
    info = headpad.pad(src, tmp_path / "tp2", 2)
    assert info == {"heads": [9, 12], "kv_heads": [3, 4], "head_dim": 64, "divides": True}
    config = json.loads((tmp_path / "tp2" / "config.json").read_text())
    assert (config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"]) == (12, 4, 64)
    tok = AutoTokenizer.from_pretrained(src)
    ids = tok("What is 12 times 7? Answer:", return_tensors="pt").input_ids
    with torch.no_grad():
        a = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32)(ids).logits
        b = AutoModelForCausalLM.from_pretrained(tmp_path / "tp2", dtype=torch.float32)(ids).logits
    assert (a - b).abs().max().item() < 1e-3
    assert torch.equal(a.argmax(-1), b.argmax(-1))
