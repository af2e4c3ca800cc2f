"""Adding a plan key touches only the schema: a key declared at runtime is read by the loader with
its default, shown on the Experiment form as a field (a key labelled for the form) or kept as
written (one that is not), written into new plans, and listed in the generated docs table."""

from __future__ import annotations

import tomllib

import pytest
from PySide6.QtWidgets import QSpinBox

from app.pages.experiment import ExperimentPage
from workbench import plan
from workbench.host import engine
from workbench.plan import catalog, keys_doc, kinds, schema

SPIN_UP = schema.Key("workload", "spin_up", kinds.Whole(lo=0, hi=10), "Requests sent before the warm-up", 3,
                     label="Spin-up requests", new=True)
QUIET = schema.Key("server", "quiet_s", kinds.Number(lo=0, hi=60), "Seconds of quiet before a run", 1.5)
PLAN = '[target]\nmodel = "org/t"\n[workload]\ntemperature = 0.0\n'


@pytest.fixture
def added(monkeypatch):
    before = plan.loads(PLAN).hash
    monkeypatch.setattr(schema, "KEYS", schema.KEYS + (SPIN_UP, QUIET))
    return before


@pytest.fixture
def page(qtbot, added):
    vllm = engine.VllmInstall(engine.default_python(), "?", None, None, None, None, None)
    p = ExperimentPage(vllm, set())
    qtbot.addWidget(p)
    return p


def test_the_loader_reads_it_with_its_default(added):
    p = plan.loads(PLAN)
    assert (p.settings["workload.spin_up"], p.settings["server.quiet_s"]) == (3, 1.5)
    assert p.hash == added  # a key the runs do not carry leaves the plan's hash as it was
    given = plan.loads(PLAN + "spin_up = 5\n[server]\nquiet_s = 2\n")
    assert (given.settings["workload.spin_up"], given.settings["server.quiet_s"]) == (5, 2)
    with pytest.raises(plan.PlanError, match=r"^workload.spin_up must be between 0 and 10, not 11$"):
        plan.loads(PLAN + "spin_up = 11\n")


def test_the_form_shows_a_labelled_key_and_keeps_one_it_does_not_show(page, tmp_path):
    spin = page.workload_box.field("workload.spin_up").widget
    assert isinstance(spin, QSpinBox) and (spin.minimum(), spin.maximum()) == (0, 10)
    assert spin.toolTip() == SPIN_UP.help
    path = tmp_path / "p.toml"
    path.write_text(PLAN + "spin_up = 5\n[server]\nquiet_s = 2.0\n")
    page.load_file(path)
    assert spin.value() == 5 and page.current is not None, page.status.text()
    assert tomllib.loads(page.text()) == tomllib.loads(path.read_text()) | {"name": "p", "methods": []}
    spin.setValue(7)
    doc = tomllib.loads(page.text_for_run())
    assert doc["workload"]["spin_up"] == 7 and doc["server"] == {"quiet_s": 2.0}
    assert plan.loads(page.text_for_run()).settings["workload.spin_up"] == 7
    # Left out, the field shows the default and the document still leaves it out.
    path.write_text(PLAN)
    page.load_file(path)
    assert spin.value() == 3 and "spin_up" not in tomllib.loads(page.text())["workload"]
    # A value of the wrong type is refused on opening, in the form's words.
    path.write_text(PLAN + 'spin_up = "x"\n')
    with pytest.raises(plan.PlanError, match='workload.spin_up must be a whole number, not "x"'):
        page.load_file(path)


def test_new_plans_write_it_and_the_docs_list_it(added):
    assert catalog.plan_document(catalog.get("qwen3-8b-dflash-b16"))["workload"]["spin_up"] == 3
    plan.loads(catalog.plan_text(catalog.get("qwen3-8b-dflash-b16")))
    doc = keys_doc.document()
    assert "| `spin_up` | a whole number | `3` | 0 to 10 | Requests sent before the warm-up |" in doc
    assert "| `quiet_s` | a number | `1.5` | 0 to 60 | Seconds of quiet before a run |" in doc
