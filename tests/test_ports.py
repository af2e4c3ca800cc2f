"""Ports for the servers Draftbench starts: free, and below the range from which the kernel takes
the source ports of outgoing connections (a client's connection could take one of those between
the choice and the server's bind)."""

from __future__ import annotations

import socket

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
    monkeypatch.setattr(launch, "port_in_use", lambda port: True)
    port = launch.free_port()
    assert port >= launch._ephemeral_low()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((launch.HOST, port))
