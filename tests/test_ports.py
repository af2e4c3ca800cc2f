"""Ports for the servers Draftbench starts: free, and below the range from which the kernel takes
the source ports of outgoing connections (a client's connection could take one of those between
the choice and the server's bind)."""

from __future__ import annotations

import os
import socket
import time

from workbench import launch


def test_a_servers_port_is_free_and_below_the_ephemeral_range():
    low = launch._ephemeral_low()
    ports = [launch.free_port() for _ in range(50)]
    assert all(1024 <= p < low for p in ports), ports
    for p in ports[:5]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((launch.HOST, p))


def test_the_range_is_read_from_the_kernel_and_defaults_to_linuxs(tmp_path):
    custom = tmp_path / "ip_local_port_range"
    custom.write_text("40000\t60999\n")
    assert launch._ephemeral_low(str(custom)) == 40000
    assert launch._ephemeral_low(str(tmp_path / "missing")) == 32768
    custom.write_text("garbage")
    assert launch._ephemeral_low(str(custom)) == 32768


def test_with_every_low_port_taken_the_kernel_picks_one(monkeypatch):
    monkeypatch.setattr("workbench.launch.ports.port_in_use", lambda port: True)
    port = launch.free_port()
    assert port >= launch._ephemeral_low()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((launch.HOST, port))


def test_a_probe_copied_into_a_forked_child_leaves_the_port_free():
    """Another thread's fork copies a probe that is bound at that moment into the child until its
    exec (a parallel sweep starting its other slot's server). That copy is no server: the next
    probe, and the server's own check before it starts, must still find the port free."""
    port = launch.free_port()
    probe = launch._probe(port)
    child = os.fork()
    if child == 0:  # the copy, held as long as a slow fork-to-exec would
        time.sleep(3)
        os._exit(0)
    probe.close()
    try:
        assert not launch.port_in_use(port)
    finally:
        os.waitpid(child, 0)


def test_a_listening_server_is_still_found():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn's and http.server's
        server.bind((launch.HOST, 0))
        server.listen()
        assert launch.port_in_use(server.getsockname()[1])
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as anywhere:
        anywhere.bind(("0.0.0.0", 0))
        anywhere.listen()
        assert launch.port_in_use(anywhere.getsockname()[1])
