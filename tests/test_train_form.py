"""The Train page starts `draftbench train` with arguments the CLI's own parser reads: every field
of the form arrives as the option the parser reads, and the usecases' list of its options is the
parser's."""

from __future__ import annotations

import pytest

from workbench import cli
from workbench.cli import train as train_cli
from workbench.usecases import children


def test_every_field_of_the_train_form_reaches_the_cli_parser(qtbot, tmp_path):
    from app.pages.train_page import TrainPage

    page = TrainPage()
    qtbot.addWidget(page)
    form = page.form
    form.target.setCurrentText(str(tmp_path / "target"))
    form.method.setCurrentIndex(form.method.findData("dflash"))
    form.prompts.setCurrentText("gsm8k")
    for box, value in ((form.num_prompts, 17), (form.max_tokens, 33), (form.seq_length, 777), (form.epochs, 5),
                       (form.vocab, 1234)):
        box.setValue(value)
    form.lr.setValue(0.00025)
    form.layers.setText("3, 9 20")
    form.name.setText("my-pair")
    form.out.setText(str(tmp_path / "out"))
    form.reuse.setText(str(tmp_path / "earlier"))
    form.endpoint.setText("http://127.0.0.1:8000")
    form.key_env.setText("MY_KEY")

    args = cli._parser().parse_args(page.argv(tmp_path / "events.jsonl"))
    assert args.command == "train" and args.handler is train_cli.train_verb
    parsed = {k: v for k, v in vars(args).items() if k not in ("command", "handler", "info", "debug")}
    assert parsed == {
        "target": str(tmp_path / "target"), "out": str(tmp_path / "out"), "prompts": "gsm8k", "num_prompts": 17,
        "max_tokens": 33, "seq_length": 777, "epochs": 5, "lr": 0.00025, "speculator_type": "dflash",
        "draft_vocab_size": 1234, "layer_ids": [3, 9, 20], "max_steps": None, "name": "my-pair",
        "endpoint": "http://127.0.0.1:8000", "api_key_env": "MY_KEY", "vllm_python": None,
        "events": str(tmp_path / "events.jsonl"), "reuse": str(tmp_path / "earlier"),
    }
    # Every option the form sets is one the parser has; the empty optional fields are left out.
    assert set(form.options()) <= set(parsed)
    form.reuse.clear(), form.endpoint.clear(), form.key_env.clear(), form.layers.clear(), form.name.clear()
    argv = page.argv(tmp_path / "events.jsonl")
    assert not {"--reuse", "--endpoint", "--api-key-env", "--layer-ids"} & set(argv)
    assert argv[argv.index("--name") + 1] == form.name.placeholderText() == "trained-dflash-target"


def test_an_option_the_parser_lacks_is_refused():
    assert children.train_args(target="t", out="o", num_prompts=4) == \
        ["train", "--target", "t", "--out", "o", "--num-prompts", "4"]
    with pytest.raises(ValueError, match="no option for 'num_prompt'"):
        children.train_args(target="t", out="o", num_prompt=4)


def test_the_usecases_name_every_option_of_the_train_parser():
    # The usecases sit below the CLI and build `train` without its parser: their list of options
    # and the flag each becomes must be exactly the parser's.
    sub = cli.common.Parser(prog="draftbench").add_subparsers()
    train_cli.register(sub)
    flags = {a.dest: next(o for o in a.option_strings if o.startswith("--"))
             for a in sub.choices["train"]._actions if a.option_strings and a.dest != "help"}
    assert flags == {name: "--" + name.replace("_", "-") for name in children.TRAIN_OPTIONS}
