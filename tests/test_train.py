"""`draftbench train` on a tiny configuration: every step for real (the target's responses from a
real vLLM CPU server, speculators' prepare-data and training, hidden states from the real target),
cancelled part-way and resumed."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from workbench import plan, train
from workbench.train import data_steps, records
from workbench.plan import catalog

def _config(out: Path, **kw) -> train.TrainConfig:
    base = dict(target="demo:smollm2-135m", out=str(out), prompts="self", num_prompts=4, max_tokens=24,
                seq_length=256, epochs=1, draft_vocab_size=256, name="test-trained-eagle3")
    base.update(kw)
    return train.TrainConfig(**base)


def test_train_cancel_resume_and_register(tmp_path, draft_server, monkeypatch):
    monkeypatch.setenv("DRAFTBENCH_CONFIG_DIR", str(tmp_path / "config"))
    out = tmp_path / "run"
    events: list = []

    def cancel_after_first_hidden_state(event):
        events.append(event)
        if event.KIND == "progress" and event.step == "hidden_states":
            pipeline.cancel()

    pipeline = train.Pipeline(_config(out), emit=cancel_after_first_hidden_state,
                              endpoint=draft_server.spec.base_url, api_key=draft_server.api_key)
    with pytest.raises(train.Cancelled):
        pipeline.run()
    done = json.loads((out / "manifest.json").read_text())["done"]
    assert set(done) == {"prompts", "responses", "prepare"}
    # Prompts written by the target itself (the Magpie method), distinct and complete user turns.
    assert done["prompts"]["prompts"] == 4 and done["responses"]["responses"] == 4
    assert done["prompts"]["source"].startswith("written by the target")
    asked = [json.loads(line)["messages"][0]["content"] for line in (out / "prompts.jsonl").read_text().splitlines()]
    assert len(set(asked)) == 4 and all(len(a) >= 12 and "<|im_" not in a for a in asked)
    assert 0 < done["responses"]["completion_tokens"] <= 4 * 24
    rows = [json.loads(line) for line in (out / "responses.jsonl").read_text().splitlines()]
    assert all(len(r["input_ids"]) == len(r["loss_mask"]) and r["loss_mask"][0] == 0 and r["loss_mask"][-1] == 1
               for r in rows)
    assert (out / "data" / "hidden_states" / "hs_0.safetensors").exists()
    assert not (out / "data" / "hidden_states" / "hs_1.safetensors").exists()

    # The rerun skips the finished steps, reuses the cached hidden-state file and trains.
    events.clear()
    summary = train.Pipeline(_config(out), emit=events.append).run()
    skipped = [e.step for e in events if e.KIND == "step_skipped"]
    assert skipped == ["prompts", "responses", "prepare"]
    hs = next(e.info for e in events if e.KIND == "step_finished" and e.step == "hidden_states")
    assert hs["reused"] == 1 and hs["written"] == hs["files"] - 1
    steps = [e for e in events if e.KIND == "train_step"]
    assert steps and all(isinstance(e.loss, float) for e in steps)
    assert any(e.KIND == "validation" for e in events)

    ckpt = Path(summary["checkpoint"])
    cfg = json.loads((ckpt / "config.json").read_text())
    verifier = cfg["speculators_config"]["verifier"]["name_or_path"]
    assert Path(verifier).is_absolute() and (Path(verifier) / "config.json").exists()
    assert cfg["draft_vocab_size"] == 256
    pair = catalog.get("test-trained-eagle3")
    assert pair.method == "eagle3" and pair.draft == str(ckpt)
    p = plan.load(summary["plan"])
    assert {r.server.method for r in p.runs} == {"baseline", "eagle3"}

    # A third run has nothing left to do.
    events.clear()
    train.Pipeline(_config(out), emit=events.append).run()
    assert all(e.KIND != "step_started" for e in events)

    # DFlash on the same data: the data steps come from the EAGLE-3 folder (hidden states linked,
    # not extracted again); only training, checkpoint and registration run.
    events.clear()
    flash = tmp_path / "dflash"
    summary = train.Pipeline(_config(flash, speculator_type="dflash", name="test-trained-dflash", reuse=str(out),
                                     max_steps=3), emit=events.append).run()
    assert [e.steps for e in events if e.KIND == "reused"] == [list(train.DATA_STEPS)]
    assert [e.step for e in events if e.KIND == "step_started"] == ["train", "checkpoint", "register"]
    hs = "data/hidden_states/hs_0.safetensors"
    assert (flash / hs).stat().st_ino == (out / hs).stat().st_ino
    cfg = json.loads((Path(summary["checkpoint"]) / "config.json").read_text())
    assert cfg["speculators_model_type"] == "dflash" and cfg["aux_hidden_state_layer_ids"] == [2, 15, 27]
    assert Path(cfg["speculators_config"]["verifier"]["name_or_path"]).is_absolute()
    pair = catalog.get("test-trained-dflash")
    assert pair.method == "dflash" and max(pair.n) <= cfg["block_size"] - 1
    assert {r.server.method for r in plan.load(summary["plan"]).runs} == {"baseline", "dflash"}


def test_other_configuration_in_the_same_folder_is_refused(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps({"config": _config(out, num_prompts=8).key(),
                                                   "done": {"prompts": {"prompts": 8}}}))
    with pytest.raises(train.TrainError, match="another configuration"):
        train.Pipeline(_config(out)).run()


def test_a_failed_first_attempt_does_not_lock_the_folder(tmp_path):
    from workbench import launch

    out = tmp_path / "run"
    with pytest.raises(train.TrainError, match="unknown built-in family"):
        train.Pipeline(_config(out, prompts="builtin:nope")).run()
    # Other settings are taken, since nothing was finished; nothing listens on the endpoint: one line.
    dead = f"http://127.0.0.1:{launch.free_port()}"
    with pytest.raises(train.TrainError, match="cannot reach the target's server") as err:
        train.Pipeline(_config(out, prompts="builtin"), endpoint=dead).run()
    assert "\n" not in str(err.value)
    done = json.loads((out / "manifest.json").read_text())
    assert done["config"]["prompts"] == "builtin" and list(done["done"]) == ["prompts"]


def test_a_refused_key_is_one_line(tmp_path, standin_server):
    with pytest.raises(train.TrainError, match="refused the API key") as err:
        train.Pipeline(_config(tmp_path / "run", prompts="builtin"), endpoint=standin_server.base_url,
                       api_key="not-the-key").run()
    assert "\n" not in str(err.value)


def test_a_cut_response_line_is_dropped_on_resume(tmp_path):
    partial = tmp_path / "responses.partial.jsonl"
    partial.write_text('{"id": "p0", "input_ids": [1], "loss_mask": [0]}\n{"id": "p1", "inp')
    records._cut_to_last_line(partial)
    assert partial.read_text() == '{"id": "p0", "input_ids": [1], "loss_mask": [0]}\n'


def test_reuse_needs_the_same_data_settings(tmp_path):
    source = tmp_path / "eagle3"
    source.mkdir()
    (source / "manifest.json").write_text(json.dumps({"config": _config(source, num_prompts=8).key(),
                                                      "done": {"prompts": {"prompts": 8}}}))
    with pytest.raises(train.TrainError, match="num_prompts differ"):
        train.Pipeline(_config(tmp_path / "dflash", speculator_type="dflash", reuse=str(source))).run()
    with pytest.raises(train.TrainError, match="layer_ids differ"):
        train.Pipeline(_config(tmp_path / "dflash", num_prompts=8, layer_ids=[1, 2, 3], reuse=str(source))).run()
    with pytest.raises(train.TrainError, match="no training run to reuse"):
        train.Pipeline(_config(tmp_path / "other", reuse=str(tmp_path / "empty"))).run()


def test_cli_bad_target_is_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "workbench.cli", "train", "--target", str(tmp_path / "nope"),
                        "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "does not exist" in r.stderr


class _Answers:
    """The two calls the responses step makes of a vLLM server, answered from memory."""

    def __init__(self):
        self.asked: list[str] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def get(self, path):
        return _Reply({"data": [{"id": "target"}]})

    def post(self, path, json):
        question = json["messages"][-1]["content"]
        self.asked.append(question)
        return _Reply({"prompt_token_ids": [1, 2], "choices": [{"message": {"content": question.upper()},
                                                                "token_ids": [3, 4, 5]}]})


class _Reply:
    status_code = 200

    def __init__(self, body):
        self.body = body

    def json(self):
        return self.body


def test_the_responses_step_resumes_from_its_partial_file(tmp_path, monkeypatch):
    out = tmp_path / "run"
    out.mkdir()
    records._write_jsonl(out / "prompts.jsonl", [records.Prompt(id=f"p{i}", messages=[{"role": "user", "content": q}])
                                                 for i, q in enumerate(("one?", "two?", "three?"))])
    done = records.Response(id="p1", messages=[{"role": "user", "content": "two?"}], input_ids=[9], loss_mask=[1])
    # One response answered before an interrupt, and the line being written when it came.
    (out / "responses.partial.jsonl").write_text(json.dumps(dataclasses.asdict(done)) + '\n{"id": "p2", "mess')
    server = _Answers()
    monkeypatch.setattr(data_steps, "_client", lambda base_url, api_key: server)

    config = _config(out)

    class Context:
        cancel_event = threading.Event()
        emit = staticmethod(lambda event: None)

        @property
        def config(self):
            return config

        @property
        def out(self):
            return out

        def server_endpoint(self):
            return "http://target", None

        def check(self):
            pass

    summary = data_steps.Responses().run(Context())
    assert sorted(server.asked) == ["one?", "three?"]  # the answered one is not asked again
    written = records.read_responses(out / "responses.jsonl")
    assert [r.id for r in written] == ["p0", "p1", "p2"] and written[1] == done
    assert written[0].messages[-1] == {"role": "assistant", "content": "ONE?"}
    assert (written[0].input_ids, written[0].loss_mask) == ([1, 2, 3, 4, 5], [0, 0, 1, 1, 1])
    assert summary == {"responses": 3, "completion_tokens": 7, "tokens": 11}
    (out / "prompts.jsonl").write_text('{"id": "p0"}\n')
    with pytest.raises(train.TrainError, match="without a valid 'messages'"):
        data_steps.Responses().run(Context())
