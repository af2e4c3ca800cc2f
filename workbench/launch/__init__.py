"""Starting and stopping a local vLLM server: a pure `prepare` step, then the process itself."""

from workbench.host import vllm_cli
from workbench.launch.attached import AttachedServer
from workbench.launch.endpoint import is_loopback, server_version
from workbench.launch.local import LocalServer
from workbench.launch.log_reason import reason_from_log
from workbench.launch.ports import _ephemeral_low, _probe, free_port, port_in_use
from workbench.launch.prepare import CPU_ENV, prepare, shown_command
from workbench.launch.spec import HOST, LaunchError, LaunchSpec
from workbench.launch.which_vllm import Servings, probed
from workbench.launch.which_vllm import of as serving_of

__all__ = [
    "CPU_ENV", "HOST", "AttachedServer", "LaunchError", "LaunchSpec", "LocalServer",
    "_ephemeral_low", "_probe", "free_port", "is_loopback", "port_in_use", "prepare",
    "Servings", "probed", "reason_from_log", "serving_of", "server_version", "shown_command", "vllm_cli",
]
