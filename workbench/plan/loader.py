"""Reading a plan file: the TOML validated table by table and expanded into runs (the baseline
added automatically), every problem one line (PlanError)."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

from workbench import methods
from workbench.host import cpu
from workbench.load import workloads
from workbench.plan import acceptance, profiles
from workbench.plan.fields import DEMO_PREFIX, PlanError, _list, _number, check_pair, resolve_model
from workbench.plan.model import MODES, TEXT_DRAFTERS, AutoRepeats, Plan, Run, Server, parse_parallel


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
    known = {"name", "target", "methods", "workload", "server", "profile", "sweep"}
    for key in doc:
        if key not in known:
            raise PlanError(f"unknown top-level key {key!r}; expected {', '.join(sorted(known))}")
    target_t = doc.get("target")
    if not isinstance(target_t, dict) or "model" not in target_t:
        raise PlanError("the plan needs a [target] table with `model = ...`")
    target = resolve_model(target_t["model"], "target.model", base)
    served_name = str(target_t.get("served_name") or Path(target).name)
    max_model_len = _number(target_t, "max_model_len", 2048, 64, 10_000_000, "target", integer=True)
    dtype = str(target_t.get("dtype", "auto"))
    if "dtype" not in target_t and str(target_t["model"]).strip().startswith(DEMO_PREFIX):
        # The demo target is served in whichever of float32 and bf16 is faster on this CPU
        # (workbench.host.cpu): bf16 without bf16 instructions ran at a quarter of the speed.
        dtype = cpu.demo_dtype()
    extra_args = tuple(_list(target_t["extra_args"], "target.extra_args", str)) if target_t.get("extra_args") else ()
    if any(a.startswith("--speculative-config") or a in ("-sc", "--api-key", "--host", "--port") for a in extra_args):
        raise PlanError("target.extra_args may not set the speculative config, host, port or API key: Draftbench sets those")
    enforce_eager = bool(target_t.get("enforce_eager", False))

    server_t = doc.get("server", {})
    if not isinstance(server_t, dict):
        raise PlanError("[server] must be a table")
    env = server_t.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, (str, int, float)) for v in env.values()):
        raise PlanError("server.env must be a table of NAME = value")
    env = tuple(sorted((str(k), str(v)) for k, v in env.items()))
    health_timeout = _number(server_t, "health_timeout_s", 600, 5, 7200, "server")
    per_request = bool(server_t.get("per_request_metrics", True))

    try:
        profile = profiles.resolve(doc.get("profile"), base)
    except profiles.ProfileError as exc:
        raise PlanError(str(exc)) from None
    if profile.kind == "attach" and extra_args:
        raise PlanError("target.extra_args cannot apply to an attached server: it is already running")

    sweep_t = doc.get("sweep", {})
    if not isinstance(sweep_t, dict):
        raise PlanError("[sweep] must be a table")
    unknown = set(sweep_t) - {"mode", "relaunch", "parallel", "baseline", "baseline_retries", "without_baseline"}
    if unknown:
        raise PlanError(f"sweep: unknown key {sorted(unknown)[0]!r}; expected mode, relaunch, parallel, baseline, "
                        "baseline_retries or without_baseline")
    mode = sweep_t.get("mode", "exhaustive")
    if mode not in MODES:
        raise PlanError(f"sweep.mode must be one of {', '.join(MODES)}, not {mode!r}")
    relaunch = sweep_t.get("relaunch", False)
    if not isinstance(relaunch, bool):
        raise PlanError("sweep.relaunch must be true or false")
    if relaunch and profile.kind == "attach":
        raise PlanError("sweep.relaunch needs servers Draftbench starts: an attached server cannot be relaunched")
    # baseline = false leaves the baseline out: for a sweep that re-measures configurations whose
    # baseline is already stored (the real/what-if pairs), where each baseline costs a server start.
    with_baseline = sweep_t.get("baseline", True)
    if not isinstance(with_baseline, bool):
        raise PlanError("sweep.baseline must be true or false")
    if not with_baseline and mode == "adaptive":
        raise PlanError("sweep.baseline = false: an adaptive sweep predicts from the baseline, so it needs one")
    # A failed baseline is retried before any speculative run starts: without it nothing they
    # measure can be compared. Still failed after that: their runs wait ("skip") unless told to go on.
    baseline_retries = _number(sweep_t, "baseline_retries", 1, 0, 5, "sweep", integer=True)
    without_baseline = sweep_t.get("without_baseline", "skip")
    if without_baseline not in ("skip", "run"):
        raise PlanError(f'sweep.without_baseline must be "skip" or "run", not {without_baseline!r}')
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
    try:
        parallel = parse_parallel(sweep_t["parallel"], "sweep.parallel") if "parallel" in sweep_t else None
    except ValueError as exc:
        raise PlanError(str(exc)) from None
    if parallel not in (None, 1) and profile.kind == "attach":
        raise PlanError("sweep.parallel: an attached server is one server, so its runs go one at a time")

    w = doc.get("workload", {})
    if not isinstance(w, dict):
        raise PlanError("[workload] must be a table")
    names = _list(w.get("names", ["builtin"]), "workload.names", str)
    for name in names:
        try:
            workloads.check(name, base)
        except workloads.WorkloadError as exc:
            raise PlanError(f"workload: {exc}") from None
    names = [workloads.resolve(name, base) for name in names]
    ignore_eos = w.get("ignore_eos", False)
    if not isinstance(ignore_eos, bool):
        raise PlanError("workload.ignore_eos must be true or false")
    concurrency = _list(w.get("concurrency", [1]), "workload.concurrency")
    if any(c < 1 or c > 4096 for c in concurrency):
        raise PlanError(f"workload.concurrency values must be between 1 and 4096, not {concurrency}")
    request_rate = w.get("request_rate")
    if request_rate is not None:
        request_rate = _number(w, "request_rate", None, 0.01, 100000, "workload")
    auto_repeats = None
    if w.get("repeats") == "auto":
        defaults = AutoRepeats()
        auto_repeats = AutoRepeats(_number(w, "repeats_target", defaults.target, 0.001, 0.5, "workload"),
                                   _number(w, "repeats_max", defaults.maximum, 2, 100, "workload", integer=True))
        # Every repeat up to the maximum is a run of the plan; the sweep skips those it no longer needs.
        repeats = auto_repeats.maximum
    else:
        if isinstance(w.get("repeats"), str):
            raise PlanError(f'workload.repeats must be a number or "auto", not {w["repeats"]!r}')
        for key in ("repeats_target", "repeats_max"):
            if key in w:
                raise PlanError(f'workload.{key} applies only with repeats = "auto"')
        repeats = _number(w, "repeats", 1, 1, 100, "workload", integer=True)
    # A number, or {per_concurrency = K, min = M}: max(M, K x concurrency) prompts at each
    # concurrency, so every level gets several waves without a c=1 run lasting minutes.
    prompts_t = w.get("num_prompts", 16)
    if isinstance(prompts_t, dict):
        if set(prompts_t) - {"per_concurrency", "min"} or "per_concurrency" not in prompts_t:
            raise PlanError("workload.num_prompts must be a number or {per_concurrency = K, min = M}")
        per_c = _number(prompts_t, "per_concurrency", 1, 1, 10000, "workload.num_prompts", integer=True)
        at_least = _number(prompts_t, "min", 1, 1, 100000, "workload.num_prompts", integer=True)
        prompts_for = lambda c: max(at_least, per_c * c)  # noqa: E731
    else:
        num_prompts = _number(w, "num_prompts", 16, 1, 100000, "workload", integer=True)
        prompts_for = lambda c: num_prompts  # noqa: E731
    max_tokens = _number(w, "max_tokens", 128, 1, 1_000_000, "workload", integer=True)
    if max_tokens >= max_model_len:
        raise PlanError(f"workload.max_tokens={max_tokens} leaves no room for the prompt in max_model_len={max_model_len}")
    if "temperature" not in w:
        raise PlanError("workload.temperature must be set: acceptance depends on it, so it is never left to a default")
    temperature = _number(w, "temperature", 0.0, 0.0, 2.0, "workload")
    top_p = _number(w, "top_p", 1.0, 0.0001, 1.0, "workload")
    warmup = _number(w, "warmup", 2, 0, 1000, "workload", integer=True)

    method_list = doc.get("methods", [])
    if not isinstance(method_list, list) or not all(isinstance(m, dict) for m in method_list):
        raise PlanError("methods must be an array of tables: [[methods]]")
    entries: list[tuple[str, int | None, str | None, dict, acceptance.Curve | None]] = (
        [("baseline", None, None, {}, None)] if with_baseline else [])
    skipped: list[str] = []
    for i, m in enumerate(method_list, 1):
        where = f"methods #{i}"
        unknown = set(m) - {"method", "n", "draft", "options", "optional", "acceptance"}
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
            if m.get("optional"):
                skipped.append(f"{spec.name}: the vLLM environment lacks the {spec.needs_package} package")
                continue
            raise PlanError(f"{where}: {spec.name} needs the {spec.needs_package} package in the vLLM environment")
        if "n" not in m:
            raise PlanError(f"{where}: {spec.name} needs `n` (a number or a list of numbers of speculative tokens)")
        ns = _list(m["n"], f"{where}.n")
        draft = m.get("draft")
        if draft is not None:
            draft = resolve_model(draft, f"{where}.draft", base)
            check_pair(spec.name, target, draft, where)
        options = m.get("options", {})
        if not isinstance(options, dict):
            raise PlanError(f"{where}.options must be a table")
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
    name = str(doc.get("name") or Path(path).stem)
    return Plan(name, text, path, runs, float(health_timeout), skipped, mode, parallel=parallel,
                auto_repeats=auto_repeats, baseline_retries=int(baseline_retries),
                without_baseline=without_baseline)
