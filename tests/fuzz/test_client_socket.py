"""The whole NetworkClient, over a real 127.0.0.1 socket, against a broker whose answers are fuzzed.

A scripted broker answers ApiVersions properly and each other request with a schema-drawn
answer: as it is, spoilt inside its frame, with a wrong correlation id or an impossible size,
followed by one nobody asked for, or cut short and closed.  Each request completes at once (well
before request_timeout_ms): with the answer as sent, or failed with ProtocolError (bytes that
cannot be read) or DisconnectedError (the broker closed first); after a failure the client
connects again, and the next request is answered on the new connection.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from groupclient.clock import SystemClock, Timer
from groupclient.errors import DisconnectedError, ProtocolError, RequestTimedOutError
from groupclient.network.client import NetworkClient, NetworkConfig
from groupclient.network.connection import CLIENT_MAX_VERSIONS
from groupclient.protocol.apis import ApiKey
from tests.fuzz.client_apis import classes
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.client import Fault, ScriptedBroker, faults
from tests.fuzz.schema import encode_response, messages

pytestmark = pytest.mark.integration

NODE = -1  # the bootstrap server
REQUEST_TIMEOUT_MS = 10_000
APIS = sorted(ApiKey(k) for k in CLIENT_MAX_VERSIONS
              if k not in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE))


@pytest.fixture(scope="module")
def broker() -> Iterator[ScriptedBroker]:
    broker = ScriptedBroker()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def client(broker: ScriptedBroker) -> Iterator[NetworkClient]:
    config = NetworkConfig([("127.0.0.1", broker.port)], "fuzz", request_timeout_ms=REQUEST_TIMEOUT_MS,
                           reconnect_backoff_ms=1, reconnect_backoff_max_ms=10)
    client = NetworkClient(config, SystemClock(), random.Random(0))
    try:
        yield client
    finally:
        client.close()


def wait_ready(client: NetworkClient) -> None:
    timer = Timer(client.clock, 5000)
    while not client.ready(NODE):
        assert not timer.expired(), "the client did not connect again"
        client.poll(min(timer.remaining_ms(), 50))


def wait_closed(client: NetworkClient) -> None:
    timer = Timer(client.clock, 5000)
    while client.is_ready(NODE):
        assert not timer.expired(), "an answer nobody asked for did not close the connection"
        client.poll(min(timer.remaining_ms(), 50))


def script(response: Any, fault: Fault) -> Any:
    def answer(api_key: int, version: int, correlation_id: int) -> tuple[bytes, bool]:
        return fault.apply(encode_response(response, correlation_id), correlation_id), fault.closes
    return answer


def test_fuzzed_answers_fail_only_their_request_and_the_client_connects_again(
        broker: ScriptedBroker, client: NetworkClient) -> None:
    closures = 0
    outcomes: Counter[str] = Counter()

    @fuzz_settings(100)
    @given(key=st.sampled_from(APIS), data=st.data())
    def run(key: ApiKey, data: st.DataObject) -> None:
        nonlocal closures
        wait_ready(client)
        version = CLIENT_MAX_VERSIONS[key]
        assert client.version_for(NODE, key) == version
        request_cls, response_cls = classes(key)
        response = data.draw(messages(response_cls, version), label="response")
        fault = data.draw(faults(closing=True), label="fault")
        broker.scripts.put(script(response, fault))
        started = time.monotonic()
        future = client.send(NODE, request_cls, response_cls, lambda v: request_cls(version=v))
        client.poll_until(future, Timer(client.clock, REQUEST_TIMEOUT_MS), wakeup=False)
        assert future.is_done()
        assert time.monotonic() - started < REQUEST_TIMEOUT_MS / 2000, "not refused at once"
        error = future.exception
        event(f"{fault.kind}: {type(error).__name__ if error else 'answered'}")
        outcomes["failed" if error else "answered"] += 1
        assert not isinstance(error, RequestTimedOutError)
        if fault.kind == "intact":
            assert future.succeeded() and future.value == response
        elif fault.kind in ("wrong id", "bad size"):
            assert isinstance(error, ProtocolError)
        elif fault.kind == "cut and closed":
            assert isinstance(error, DisconnectedError) and not isinstance(error, ProtocolError)
        elif fault.kind == "unasked":
            assert future.succeeded() and future.value == response
            wait_closed(client)  # by the second answer, which may come in a later read
        else:
            assert future.succeeded() or isinstance(error, ProtocolError)
        if future.failed() or fault.kind == "unasked":
            closures += 1

    run()
    assert outcomes["answered"] >= 20 and outcomes["failed"] >= 20, outcomes  # both paths were taken
    wait_ready(client)  # connected again after the last failure, if it was one
    assert not broker.errors
    assert broker.accepted == 1 + closures  # one new connection after each failure, no more
