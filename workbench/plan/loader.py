"""Reading a plan file: the TOML validated table by table and expanded into runs (the baseline
added automatically), every problem one line (PlanError). Each key is read through its declaration
(`workbench.plan.schema`: type, range, default); what ties keys together is checked here."""

from __future__ import annotations

from typing import Any
import tomllib
from dataclasses import replace
from pathlib import Path

from workbench import methods
from workbench.host import cpu
from workbench.load import workloads
from workbench.plan import acceptance, profiles, schema
from workbench.plan.fields import DEMO_PREFIX, PlanError, check_pair, resolve_model
from workbench.plan.model import TEXT_DRAFTERS, AutoRepeats, Plan, Run, Server


def load(path: str | Path, available_modules: set[str] | None = None) -> Plan:
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise PlanError(f"plan file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(f"cannot read plan file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    return loads(text, path=str(path), base=path.resolve().parent, available_modules=available_modules)


def loads(text: str, path: str = "<plan>", base: Path | None = None,
          available_modules: set[str] | None = None) -> Plan:
    """Validate and expand a plan. `available_modules` lists optional packages present in the vLLM
    environment; a method marked `optional = true` whose package is missing is skipped."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"{Path(path).name} is not valid TOML: {exc}") from None
    base = base or Path.cwd()
    known = schema.top_level()
    for key in doc:
        if key not in known:
            raise PlanError(f"unknown top-level key {key!r}; expected {', '.join(sorted(known))}")
    target_t = doc.get("target")
    if not isinstance(target_t, dict):
        target_t = {}  # refused below as a plan without a target model
    target = resolve_model(schema.read(target_t, "target.model"), "target.model", base)
    served_name = schema.read(target_t, "target.served_name") or Path(target).name
    max_model_len = schema.read(target_t, "target.max_model_len")
    dtype = schema.read(target_t, "target.dtype")
    if "dtype" not in target_t and str(target_t["model"]).strip().startswith(DEMO_PREFIX):
        # The demo target is served in whichever of float32 and bf16 is faster on this CPU
        # (workbench.host.cpu): bf16 without bf16 instructions ran at a quarter of the speed.
        dtype = cpu.demo_dtype()
    extra_args = tuple(schema.read(target_t, "target.extra_args"))
    if any(a.startswith("--speculative-config") or a in ("-sc", "--api-key", "--host", "--port") for a in extra_args):
        raise PlanError("target.extra_args may not set the speculative config, host, port or API key: Draftbench sets those")
    enforce_eager = schema.read(target_t, "target.enforce_eager")

    server_t = doc.get("server", {})
    if not isinstance(server_t, dict):
        raise PlanError("[server] must be a table")
    env = schema.read(server_t, "server.env")
    health_timeout = schema.read(server_t, "server.health_timeout_s")
    per_request = schema.read(server_t, "server.per_request_metrics")

    try:
        profile = profiles.resolve(doc.get("profile"), base)
    except profiles.ProfileError as exc:
        raise PlanError(str(exc)) from None
    if profile.kind == "attach" and extra_args:
        raise PlanError("target.extra_args cannot apply to an attached server: it is already running")

    sweep_t = doc.get("sweep", {})
    if not isinstance(sweep_t, dict):
        raise PlanError("[sweep] must be a table")
    unknown = set(sweep_t) - set(schema.names("sweep"))
    if unknown:
        raise PlanError(f"sweep: unknown key {sorted(unknown)[0]!r}; expected {schema.said(schema.names('sweep'))}")
    mode = schema.read(sweep_t, "sweep.mode")
    relaunch = schema.read(sweep_t, "sweep.relaunch")
    if relaunch and profile.kind == "attach":
        raise PlanError("sweep.relaunch needs servers Draftbench starts: an attached server cannot be relaunched")
    # baseline = false leaves the baseline out: for a sweep that re-measures configurations whose
    # baseline is already stored (the real/what-if pairs), where each baseline costs a server start.
    with_baseline = schema.read(sweep_t, "sweep.baseline")
    if not with_baseline and mode == "adaptive":
        raise PlanError("sweep.baseline = false: an adaptive sweep predicts from the baseline, so it needs one")
    # A failed baseline is retried before any speculative run starts: without it nothing they
    # measure can be compared. Still failed after that: their runs wait ("skip") unless told to go on.
    baseline_retries = schema.read(sweep_t, "sweep.baseline_retries")
    without_baseline = schema.read(sweep_t, "sweep.without_baseline")
    what_if = mode == "what-if"
    if what_if and profile.kind == "attach":
        raise PlanError("a what-if sweep needs servers Draftbench starts (dummy weights, imposed acceptance): "
                        "an attached server serves what it was started with")
    workload_t = doc.get("workload")
    if relaunch and isinstance(workload_t, dict) and workload_t.get("repeats") == "auto":
        raise PlanError('workload.repeats = "auto" decides from the repeats of one server; with sweep.relaunch each '
                        "repeat has its own: give repeats a number")
    if relaunch and mode == "adaptive":
        raise PlanError("sweep.relaunch works with exhaustive sweeps only (an adaptive sweep counts one launch per N)")
    parallel = schema.read(sweep_t, "sweep.parallel")
    if parallel not in (None, 1) and profile.kind == "attach":
        raise PlanError("sweep.parallel: an attached server is one server, so its runs go one at a time")

    w = doc.get("workload", {})
    if not isinstance(w, dict):
        raise PlanError("[workload] must be a table")
    names = schema.read(w, "workload.names")
    for name in names:
        try:
            workloads.check(name, base)
        except workloads.WorkloadError as exc:
            raise PlanError(f"workload: {exc}") from None
    names = [workloads.resolve(name, base) for name in names]
    ignore_eos = schema.read(w, "workload.ignore_eos")
    concurrency = schema.read(w, "workload.concurrency")
    request_rate = schema.read(w, "workload.request_rate")
    auto_repeats = None
    if w.get("repeats") == "auto":
        auto_repeats = AutoRepeats(schema.read(w, "workload.repeats_target"), schema.read(w, "workload.repeats_max"))
        # Every repeat up to the maximum is a run of the plan; the sweep skips those it no longer needs.
        repeats = auto_repeats.maximum
    else:
        if not isinstance(w.get("repeats"), str):  # a word is refused as such first
            for key in ("repeats_target", "repeats_max"):
                if key in w:
                    raise PlanError(f'workload.{key} applies only with repeats = "auto"')
        repeats = schema.read(w, "workload.repeats")
    # A number, or {per_concurrency = K, min = M}: max(M, K x concurrency) prompts at each
    # concurrency, so every level gets several waves without a c=1 run lasting minutes.
    prompts = schema.read(w, "workload.num_prompts")
    if isinstance(prompts, dict):
        per_c, at_least = prompts["per_concurrency"], prompts["min"]
        prompts_for = lambda c: max(at_least, per_c * c)  # noqa: E731
    else:
        prompts_for = lambda c: prompts  # noqa: E731
    max_tokens = schema.read(w, "workload.max_tokens")
    if max_tokens >= max_model_len:
        raise PlanError(f"workload.max_tokens={max_tokens} leaves no room for the prompt in max_model_len={max_model_len}")
    temperature = schema.read(w, "workload.temperature")
    top_p = schema.read(w, "workload.top_p")
    warmup = schema.read(w, "workload.warmup")

    method_list = doc.get("methods", [])
    if not isinstance(method_list, list) or not all(isinstance(m, dict) for m in method_list):
        raise PlanError("methods must be an array of tables: [[methods]]")
    entries: list[tuple[str, int | None, str | None, dict[str, Any], acceptance.Curve | None]] = (
        [("baseline", None, None, {}, None)] if with_baseline else [])
    skipped: list[str] = []
    for i, m in enumerate(method_list, 1):
        where = f"methods #{i}"
        unknown = set(m) - set(schema.names("methods"))
        if unknown:
            raise PlanError(f"{where}: unknown key {sorted(unknown)[0]!r}")
        if "method" not in m:
            raise PlanError(f"{where} has no `method`")
        try:
            spec = methods.get(str(m["method"]))
        except methods.MethodError as exc:
            raise PlanError(f"{where}: {exc}") from None
        if spec.name == "baseline":
            continue
        if spec.needs_package and available_modules is not None and spec.needs_package not in available_modules:
            if schema.read(m, "methods.optional", f"{where}.optional"):
                skipped.append(f"{spec.name}: the vLLM environment lacks the {spec.needs_package} package")
                continue
            raise PlanError(f"{where}: {spec.name} needs the {spec.needs_package} package in the vLLM environment")
        if "n" not in m:
            raise PlanError(f"{where}: {spec.name} needs `n` (a number or a list of numbers of speculative tokens)")
        ns = schema.read(m, "methods.n", f"{where}.n")
        draft = m.get("draft")
        if draft is not None:
            draft = resolve_model(draft, f"{where}.draft", base)
            check_pair(spec.name, target, draft, where)
        options = schema.read(m, "methods.options", f"{where}.options")
        curve = None
        if what_if:
            if spec.name in TEXT_DRAFTERS:
                raise PlanError(f"{where}: {spec.name} drafts from the generated text, which dummy weights make "
                                "noise: it is not a what-if method (measure it with real weights)")
            if "acceptance" not in m:
                raise PlanError(f"{where}: a what-if method needs `acceptance` (a list of per-position rates, "
                                "{p1, decay}, {mal}, {published} or {rates, source})")
            try:
                curve = acceptance.parse(m["acceptance"], max(ns), f"{where}.acceptance")
            except acceptance.AcceptanceError as exc:
                raise PlanError(str(exc)) from None
        elif "acceptance" in m:
            raise PlanError(f'{where}: acceptance is imposed only in a what-if sweep ([sweep] mode = "what-if")')
        for n in ns:
            try:
                methods.speculative_config(spec.name, n, draft, options)
            except methods.MethodError as exc:
                raise PlanError(f"{where}: {exc}") from None
            dtp = options.get("draft_tensor_parallel_size")
            if dtp is not None and dtp not in (1, profile.tensor_parallel_size):
                raise PlanError(f"{where}: draft_tensor_parallel_size must be 1 or the target's "
                                f"tensor_parallel_size ({profile.tensor_parallel_size}), not {dtp}")
            entries.append((spec.name, n, draft, options, curve))

    if not entries:
        raise PlanError("the plan has nothing to run: sweep.baseline = false and no [[methods]]")
    if profile.kind == "attach":
        # An attached server runs one fixed configuration: the plan only says what it is.
        if len(entries) > 2:
            raise PlanError("an attached server runs one configuration: list at most one method with one N "
                            "(the one it was started with)")
        entries = entries[-1:]
    runs: list[Run] = []
    for method, n, draft, options, curve in entries:
        server = Server(target, served_name, method, n, draft, tuple(sorted(options.items())),
                        max_model_len, dtype, extra_args, env, enforce_eager,
                        per_request and method != "baseline", profile, what_if=what_if,
                        imposed=curve.for_n(n) if curve and n is not None else None,
                        imposed_source=curve.source if curve else None)
        for workload in names:
            for c in concurrency:
                for rep in range(1, repeats + 1):
                    # Grouped by server key (Plan.servers), so with relaunch each launch serves
                    # its repeat of every workload and concurrency.
                    runs.append(Run(replace(server, launch=rep) if relaunch else server, workload, c,
                                    request_rate, rep, prompts_for(c), max_tokens, float(temperature),
                                    float(top_p), warmup, ignore_eos))
    name = schema.read(doc, "name") or Path(path).stem
    return Plan(name, text, path, runs, float(health_timeout), skipped, mode, parallel=parallel,
                auto_repeats=auto_repeats, baseline_retries=int(baseline_retries),
                without_baseline=without_baseline, settings=schema.settings(doc))
