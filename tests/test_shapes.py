"""The shipped model shapes (resources/shapes/): what they claim, the servable folders made from them
(config files plus a generated tokenizer of exactly the config's vocabulary), and what
transformers and vLLM make of those folders."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from workbench.checkpoints import shapes

# The real vocabularies (the LM head is a large part of a decode step, so none may be reduced).
REAL_VOCAB = {
    "qwen3-8b": 151936, "qwen3-8b-eagle3": 151936, "qwen3-8b-dflash": 151936, "qwen3-8b-dspark": 151936,
    "llama-3.1-8b": 128256, "llama-3.1-8b-eagle3": 128256, "mimo-7b-rl": 151680,
    "gemma-4-26b-a4b-it": 262144, "gemma-4-26b-a4b-it-assistant": 262144,
}


# The special ids each target's tokenizer must hold where its config puts them.
SPECIAL = {
    "qwen3-8b": {"<bos>": 151643, "<eos>": 151645},
    "llama-3.1-8b": {"<bos>": 128000, "<eos>": 128001, "<eos:128008>": 128008, "<eos:128009>": 128009},
    "gemma-4-26b-a4b-it": {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<eos:106>": 106},
}
TARGETS = [s.name for s in shapes.ALL if s.role == "target"]


@pytest.fixture(scope="session")
def shape_root(tmp_path_factory, worker_id) -> Path:
    """One folder of made shapes for the whole run, every worker included: shapes.folder makes each
    shape once, safely across processes (a tokenizer of 150k-260k ids takes about a second)."""
    base = tmp_path_factory.getbasetemp()
    return (base if worker_id == "master" else base.parent) / "shapes"


@pytest.fixture(scope="session")
def made(shape_root):
    """made(name): the shape's servable folder."""
    return lambda name: shapes.folder(name, shape_root)


def _tokenizer(folder: Path):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(folder / "tokenizer.json"))


def test_every_shape_cites_its_sources_and_drafts_belong_to_target_shapes():
    assert sorted(shapes.names()) == sorted(REAL_VOCAB)
    for s in shapes.ALL:
        assert s.repo.count("/") == 1 and s.notes, s.name
        assert s.sources and all(src.startswith("https://") for src in s.sources), s.name
        assert s.vocab_size == REAL_VOCAB[s.name], s.name
        if s.role == "draft":
            assert s.method in shapes.METHODS and shapes.get(s.target).role == "target"
    pairs = {(p.target, p.draft, p.method) for p in shapes.pairs()}
    assert pairs == {("qwen3-8b", "qwen3-8b-eagle3", "eagle3"), ("qwen3-8b", "qwen3-8b-dflash", "dflash"),
                     ("qwen3-8b", "qwen3-8b-dspark", "dspark"), ("llama-3.1-8b", "llama-3.1-8b-eagle3", "eagle3"),
                     ("mimo-7b-rl", None, "mtp"), ("gemma-4-26b-a4b-it", "gemma-4-26b-a4b-it-assistant", "mtp")}


def test_the_configs_keep_the_real_ids_and_the_fields_vllm_reads():
    cfg = {s.name: s.config() for s in shapes.ALL}
    assert (cfg["qwen3-8b"]["bos_token_id"], cfg["qwen3-8b"]["eos_token_id"]) == (151643, 151645)
    assert cfg["qwen3-8b-dflash"]["dflash_config"] == {"mask_token_id": 151669, "target_layer_ids": [1, 9, 17, 25, 33]}
    assert cfg["qwen3-8b-dspark"]["mask_token_id"] == 151669 < cfg["qwen3-8b-dspark"]["vocab_size"]
    for name in ("qwen3-8b-eagle3", "llama-3.1-8b-eagle3"):
        c = cfg[name]
        assert c["architectures"] == ["LlamaForCausalLMEagle3"] and c["num_hidden_layers"] == 1
        assert c["target_hidden_size"] == 4096 and c["draft_vocab_size"] <= c["vocab_size"]
    llama = cfg["llama-3.1-8b"]
    assert (llama["hidden_size"], llama["num_hidden_layers"], llama["num_attention_heads"], llama["num_key_value_heads"],
            llama["hidden_size"] // llama["num_attention_heads"], llama["intermediate_size"]) == (4096, 32, 32, 8, 128, 14336)
    assert llama["rope_theta"] == 500000 and llama["rope_scaling"]["rope_type"] == "llama3"
    assert llama["max_position_embeddings"] == 131072 and llama["eos_token_id"] == [128001, 128008, 128009]
    mimo = cfg["mimo-7b-rl"]
    assert mimo["model_type"] == "qwen2" and mimo["num_nextn_predict_layers"] == 1 and "auto_map" not in mimo
    gemma, assistant = cfg["gemma-4-26b-a4b-it"], cfg["gemma-4-26b-a4b-it-assistant"]
    assert gemma["model_type"] == "gemma4_text" and (gemma["num_experts"], gemma["top_k_experts"]) == (128, 8)
    assert assistant["backbone_hidden_size"] == gemma["hidden_size"] == 2816
    # The centroid head's int64 ordering is not filled by dummy weights; the 26B assistant has none.
    assert assistant["use_ordered_embeddings"] is False


@pytest.mark.parametrize("name", shapes.names())
def test_each_folder_has_a_tokenizer_of_exactly_its_vocabulary_and_every_id_decodes(made, name):
    rng = random.Random(0)
    folder = made(name)
    size = REAL_VOCAB[name]
    tok = _tokenizer(folder)
    assert tok.get_vocab_size(with_added_tokens=True) == size
    assert sorted(tok.get_vocab(with_added_tokens=True).values()) == list(range(size))
    ids = [0, 1, 2, size - 2, size - 1] + [rng.randrange(size) for _ in range(300)]
    assert all(isinstance(tok.id_to_token(i), str) for i in ids)
    assert all(tok.decode([i], skip_special_tokens=False) for i in ids)
    assert isinstance(tok.decode(ids), str)
    config = json.loads((folder / "config.json").read_text())
    assert {k: v for k, v in config.items() if k != "transformers_version"} == \
        {k: v for k, v in shapes.get(name).config().items() if k != "transformers_version"}
    manifest = json.loads((folder / shapes.MANIFEST).read_text())
    assert manifest["vocab_size"] == size and "tokenizer.json" in manifest["files"]
    # The special ids sit where the config puts them, and decoding can skip them.
    special = SPECIAL.get(name, {})
    assert {t: tok.token_to_id(t) for t in special} == special
    if name == "gemma-4-26b-a4b-it":
        assert tok.decode([2, 106, 1], skip_special_tokens=True) == ""


def test_prompts_round_trip_into_varied_ids(made):
    tok = _tokenizer(made("qwen3-8b"))
    first, second = "Natalia sold clips to 48 of her friends in April.", "Weng earns $12 an hour for babysitting."
    a, b = tok.encode(first).ids, tok.encode(second).ids
    assert a[:3] != b[:3]  # different prompts share no prefix for vLLM's cache to hit
    assert 10 <= len(a) <= 2 * len(first.split()) + 4  # about 2 tokens a word (real BPE: about 1.3)
    for text in (first, "Naïve café, 東京 — 3.14\n\tdone"):
        assert tok.decode(tok.encode(text).ids) == text  # byte-level: nothing is unknown


def test_transformers_loads_every_folder_as_the_same_tokenizer(made):
    # One test, not one a shape: importing transformers costs seconds in every worker that does it.
    from transformers import AutoConfig, AutoTokenizer

    for name in shapes.names():
        assert AutoConfig.from_pretrained(made(name)).get_text_config().vocab_size == REAL_VOCAB[name], name
    text = "Weng earns $12 an hour for babysitting. Yesterday, she did 50 minutes of babysitting."
    for name in TARGETS:
        # transformers picks its own class for some model types (Qwen2Tokenizer for MiMo's qwen2)
        # and rebuilds the pipeline: it must still be exactly the generated tokenizer.
        tok, raw = AutoTokenizer.from_pretrained(made(name)), _tokenizer(made(name))
        assert len(tok) == REAL_VOCAB[name], name
        assert tok(text)["input_ids"] == raw.encode(text).ids, name
        ids = [5, REAL_VOCAB[name] - 1, 200, 60000]
        assert tok.decode(ids) == raw.decode(ids)
        prompt = tok.apply_chat_template([{"role": "user", "content": "What is 2 + 2?"}], add_generation_prompt=True,
                                         tokenize=False)
        assert prompt == "user: What is 2 + 2?\nassistant:"


def test_folder_is_made_once_and_again_when_the_shipped_config_changes(tmp_path, monkeypatch):
    first = shapes.folder("qwen3-8b-dflash", tmp_path)
    stamp = (first / "tokenizer.json").stat().st_mtime_ns
    assert shapes.folder("qwen3-8b-dflash", tmp_path) == first
    assert (first / "tokenizer.json").stat().st_mtime_ns == stamp

    shipped = tmp_path / "shipped"
    shutil.copytree(shapes.shipped_dir(), shipped)
    config = json.loads((shipped / "qwen3-8b-dflash" / "config.json").read_text())
    (shipped / "qwen3-8b-dflash" / "config.json").write_text(json.dumps(dict(config, vocab_size=160000)))
    monkeypatch.setattr(shapes, "shipped_dir", lambda: shipped)
    again = shapes.folder("qwen3-8b-dflash", tmp_path)
    assert again == first and _tokenizer(again).get_vocab_size(with_added_tokens=True) == 160000
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_crashed_write_leaves_the_old_folder_or_none(tmp_path, monkeypatch):
    def crash(*args, **kwargs):
        raise RuntimeError("killed while writing")

    monkeypatch.setattr(shapes, "tokenizer_files", crash)
    with pytest.raises(RuntimeError):
        shapes.folder("mimo-7b-rl", tmp_path)
    assert list(tmp_path.iterdir()) == []  # neither the folder nor its temporary one

    monkeypatch.undo()
    good = shapes.folder("mimo-7b-rl", tmp_path)
    manifest = (good / shapes.MANIFEST).read_text()
    monkeypatch.setattr(shapes, "GENERATOR_VERSION", shapes.GENERATOR_VERSION + 1)  # asks for a rebuild
    monkeypatch.setattr(shapes, "tokenizer_files", crash)
    with pytest.raises(RuntimeError):
        shapes.folder("mimo-7b-rl", tmp_path)
    assert (good / shapes.MANIFEST).read_text() == manifest and (good / "tokenizer.json").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["mimo-7b-rl"]


def test_two_callers_at_once_get_one_complete_folder(tmp_path):
    got, errors = [], []

    def make():
        try:
            got.append(shapes.folder("llama-3.1-8b-eagle3", tmp_path))
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=make) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(got)) == 1
    assert _tokenizer(got[0]).get_vocab_size(with_added_tokens=True) == 128256
    assert [p.name for p in tmp_path.iterdir()] == ["llama-3.1-8b-eagle3"]


def test_an_unknown_or_unwritable_shape_is_one_line(tmp_path):
    with pytest.raises(shapes.ShapeError) as unknown:
        shapes.folder("qwen3-9b")
    message = str(unknown.value)
    assert "\n" not in message and "no shape named 'qwen3-9b'" in message and "gemma-4-26b-a4b-it" in message
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(shapes.ShapeError, match=r"^cannot write shape qwen3-8b into .*file") as unwritable:
        shapes.folder("qwen3-8b", blocker)
    assert "\n" not in str(unwritable.value)


@pytest.mark.vllm
def test_vllms_config_check_accepts_every_pair(made, vllm_install):
    """vLLM's own engine-config step (config parsing, architecture resolution, the speculative
    config) and tokenizer loading for each target and pair. The CPU build has no Model Runner V2,
    which DSpark needs."""
    script = """
import json, sys
from vllm.engine.arg_utils import EngineArgs
try:
    from vllm.tokenizers import get_tokenizer
except ImportError:
    from vllm.transformers_utils.tokenizer import get_tokenizer
results = {}
for target, draft, method in json.loads(sys.argv[1]):
    spec = {"method": method, "num_speculative_tokens": 3, **({"model": draft} if draft else {})} if method else None
    try:
        config = EngineArgs(model=target, load_format="dummy", max_model_len=2048, speculative_config=spec).create_engine_config()
        vocab = config.model_config.get_vocab_size()
        results[f"{target} {draft} {method}"] = "ok" if len(get_tokenizer(target)) == vocab else f"tokenizer is not {vocab}"
    except Exception as exc:
        results[f"{target} {draft} {method}"] = str(exc).replace("\\n", " ")
print("RESULTS" + json.dumps(results))
"""
    cases = [(str(made(t)), None, None) for t in ("qwen3-8b", "llama-3.1-8b", "gemma-4-26b-a4b-it")]
    cases += [(str(made(p.target)), str(made(p.draft)) if p.draft else None, p.method) for p in shapes.pairs()]
    done = subprocess.run([vllm_install.python, "-c", script, json.dumps(cases)], capture_output=True,
                          text=True, timeout=600)
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULTS"))
    results = json.loads(line.removeprefix("RESULTS"))
    for case, outcome in results.items():
        if case.endswith(" dspark"):
            assert outcome == "ok" or "Model Runner V1 does not support" in outcome, outcome
        else:
            assert outcome == "ok", f"{case}: {outcome}"
