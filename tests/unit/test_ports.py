"""Servers the suite starts (Apache Kafka's listeners and controller) get ports outside the
kernel's ephemeral range: a port taken from that range can be handed to an outgoing connection
before the server binds it (Kafka's controller binds seconds after start, and then failed with
"Address already in use" while the broker half-ran)."""

from __future__ import annotations

import socket

from benchmarks.brokers import ephemeral_port_range, free_port


def test_free_ports_lie_below_the_ephemeral_range_and_are_free() -> None:
    low = ephemeral_port_range()[0]
    for _ in range(50):
        port = free_port()
        assert 10000 <= port < low
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
