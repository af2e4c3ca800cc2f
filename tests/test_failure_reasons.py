"""Why a vLLM server stopped, in one line, from its own output (launch.reason_from_log): on logs
recorded from real vLLM CPU servers that failed (tests/fixtures/vllm_logs/, see its README) and on
the short cases the runner met before. A line that only mentions an error, such as vLLM's
start-up warning about a low fd limit, is never the reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from workbench import launch
from workbench.sweep import measure

LOGS = Path(__file__).resolve().parent / "fixtures" / "vllm_logs"
ULIMIT_WARNING = "This can cause fd limit errors like `OSError: [Errno 24] Too many open files`"


def log(name: str) -> list[str]:
    return (LOGS / name).read_text().splitlines()


def test_engine_core_sigkilled_mid_run_is_the_engine_dead_error_not_the_ulimit_warning():
    lines = log("engine_core_killed.log")
    # The recording has both: vLLM's start-up warning, and the error the API server died of.
    assert sum(ULIMIT_WARNING in line for line in lines) == 1
    assert any("EngineDeadError" in line for line in lines)
    why = launch.reason_from_log(lines)
    assert why == ("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
                   "See stack trace (above) for the root cause."), why


def test_a_run_whose_engine_core_was_killed_says_so():
    """The run's error, as the runner words it from the server's kept tail."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    srv = launch.LocalServer(launch.LaunchSpec([], [], {}, 0), proc=proc)
    srv.tail.extend(log("engine_core_killed.log"))
    why = measure._died(srv, grace_s=0.1)
    assert why.startswith("vLLM server died during the run: vllm.v1.engine.exceptions.EngineDeadError: "), why
    assert "Errno 24" not in why


def test_engine_core_failing_at_start_up_is_its_own_exception_not_the_api_servers():
    lines = log("engine_core_start_failed.log")
    assert sum(ULIMIT_WARNING in line for line in lines) == 1
    # The API server's last word only points back at the engine core's.
    assert lines and any("RuntimeError: Engine core initialization failed. See root cause above." in line
                         for line in lines)
    why = launch.reason_from_log(lines)
    assert why.startswith("ValueError: To serve at least one request with the model's max seq len (65536)"), why


def test_start_up_failure_through_a_server_process(tmp_path):
    """The reason LocalServer.wait_healthy gives for a process that printed the recorded start-up
    failure and exited (its output read by the server's own pump)."""
    script = tmp_path / "printed.py"
    script.write_text(f"import sys\nsys.stdout.write(open({str(LOGS / 'engine_core_start_failed.log')!r}).read())\n"
                      "sys.exit(1)\n")
    srv = launch.LocalServer(launch.LaunchSpec([sys.executable, str(script)], [], {}, launch.free_port()))
    srv.start()
    with pytest.raises(launch.LaunchError) as failed:
        srv.wait_healthy(60)
    srv.stop()
    assert str(failed.value).startswith("vLLM exited during start-up: ValueError: To serve at least one request")


@pytest.mark.parametrize("line", [
    # vLLM 0.32's own wording (vllm/utils/system_utils.py), as the recordings show it.
    "(APIServer pid=23172) WARNING 12-03 10:18:36 [system_utils.py:255] Found ulimit of 20000 and failed to "
    "automatically increase with error current limit exceeds maximum limit. This can cause fd limit errors like "
    "`OSError: [Errno 24] Too many open files`. Consider increasing with ulimit -n",
    "WARNING 12-03 10:18:36 [x.py:1] RuntimeError: retried",
    "WARNING:  ValueError seen in a request",
    "[W1203 10:19:05.464185031 utils.cpp:68] Warning: RuntimeError: NUMA binding (function init_cpu_memory_env)",
    "REPO/x.py:138: FutureWarning: TypeError: will be raised in a later version",
    "INFO 12-03 10:18:36 [x.py:1] a low limit can cause OSError: [Errno 24] Too many open files",
])
def test_a_line_that_only_mentions_an_error_is_not_the_reason(line):
    assert launch.reason_from_log(["INFO 12-03 10:18:30 [x.py:1] starting", line]) is None
    # ... and it does not hide the real one that follows.
    assert launch.reason_from_log([line, "KeyError: 'model_type'"]) == "KeyError: 'model_type'"


def test_the_last_traceback_ends_in_its_exception_line_whatever_its_name():
    lines = ["(APIServer pid=1) WARNING 12-03 10:00:00 [s.py:1] " + ULIMIT_WARNING,
             "Traceback (most recent call last):",
             '  File "a.py", line 1, in <module>',
             "(EngineCore pid=2) INFO 12-03 10:00:01 [c.py:1] interleaved from another process",
             "    main()",
             "    ^^^^^^",
             "torch.OutOfMemoryError: CPU out of memory",
             "INFO:     Shutting down"]
    assert launch.reason_from_log(lines) == "torch.OutOfMemoryError: CPU out of memory"


@pytest.mark.parametrize("lines, why", [
    # What the runner relied on before: a bare exception line, a port taken, any ERROR line.
    (["starting", "ValueError: no such luck"], "ValueError: no such luck"),
    (["ERROR 12-03 [a.py:1] something broke", "OSError: [Errno 98] error while attempting to bind on address "
      "('127.0.0.1', 8000): address already in use"],
     "OSError: [Errno 98] error while attempting to bind on address ('127.0.0.1', 8000): address already in use"),
    (["[Errno 98] Address already in use: bind"], "Address already in use: bind"),
    (["INFO 12-03 [a.py:1] fine", "ERROR 12-03 [a.py:2] worker died"], "ERROR 12-03 [a.py:2] worker died"),
    (["pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
      "  Value error, max_model_len is too large"],
     "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig"),
    (["INFO 12-03 [a.py:1] fine"], None),
    ([], None),
])
def test_earlier_cases_keep_their_reason(lines, why):
    assert launch.reason_from_log(lines) == why
