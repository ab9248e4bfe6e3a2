"""Fixtures of the unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groupclient.clock import FakeClock
from groupclient.network.client import NetworkClient
from tests.memory_broker import FakeStream
from tests.memory_wire import NODE, FakeIO, connect, new_client


@pytest.fixture
def wire() -> Iterator[tuple[NetworkClient, FakeIO, FakeClock, FakeStream]]:
    """A client connected to the bootstrap server over the in-memory wire (tests/memory_wire.py)."""
    client, io, clock = new_client()
    stream = connect(client, io, NODE)
    yield client, io, clock, stream
    client.close()
