"""Choosing a free port for a server, and probing whether one is taken."""

from __future__ import annotations

import secrets
import socket

from workbench.launch.spec import HOST


def _ephemeral_low(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> int:
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port() -> int:
    """A free port for a server, from below the ephemeral range. A port the kernel hands out for
    bind(0) comes from the range it also takes the source ports of outgoing connections from, so
    between this call and the server's own bind any client's connection on the host (a load
    generator's, another sweep's) could take it, and the launch would fail as "already in use"."""
    top = _ephemeral_low()
    pick = secrets.SystemRandom()
    for _ in range(100):
        port = pick.randint(max(1024, top - 12000), top - 1)
        if not port_in_use(port):
            return port
    with _probe(0) as s:  # the kernel's pick, through the same probe (a forked copy of it is no server either)
        return s.getsockname()[1]


def _probe(port: int) -> socket.socket:
    """A socket bound to the port, as port_in_use tries it; OSError when the port is taken. It is
    SO_REUSEADDR: a process forked by another thread while a probe is bound (a parallel sweep's
    other slot starting its server) holds a copy of it until its exec, and without the flag the
    next probe of that port, the server's own check included, would find it taken by that copy,
    which is no server at all."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((HOST, port))
    except OSError:
        s.close()
        raise
    return s


def port_in_use(port: int) -> bool:
    """Whether something listens on the port, or holds it without SO_REUSEADDR."""
    try:
        _probe(port).close()
    except OSError:
        return True
    return False
