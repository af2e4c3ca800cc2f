"""Remote hosts: runs on a GPU server reached over SSH, streamed back into the local database.

The system OpenSSH client does the connecting, so ~/.ssh/config, the agent, ProxyJump and known
hosts all behave as in a terminal. On the host, `python -m workbench.remote.agent` does the work
(see that module); the remote database stays the source of truth and the local one mirrors its
rows by primary key (workbench.store.mirror), so a reconnect resumes from the highest id it holds
without duplicates.
"""

from workbench.remote.control import Launched, dry_run, latest, launch, pull, remote_db, source_of, stop
from workbench.remote.host import DEFAULT_DATA_DIR, RemoteError, RemoteHost, check, load, remotes_dir, save
from workbench.remote.stream import Stream

__all__ = [
    "DEFAULT_DATA_DIR", "Launched", "RemoteError", "RemoteHost", "Stream", "check", "dry_run", "latest", "launch",
    "load", "pull", "remote_db", "remotes_dir", "save", "source_of", "stop",
]
