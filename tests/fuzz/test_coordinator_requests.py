"""Fuzzing the coordinator's request decoding and handlers, in-process.

For every API key the coordinator knows and every version its schema has (served or not),
requests are drawn from the schema with random field values, encoded with a random header and
run through node 0's request path on the cluster's event loop (``answer_frame``, the path a
socket's frames take).  Each must be answered with a frame the response class reads at that
version and correlation id, or, for a long poll, still be waiting; no handler may fail
(UNKNOWN_SERVER_ERROR, or an error logged).  The same frame spoilt (cut short, bits flipped,
bytes added) must be answered likewise or close its connection, and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from groupclient.coordinator import EmbeddedCluster
from groupclient.protocol.apis import API_SPECS, ApiKey
from groupclient.protocol.decoding import MalformedMessage, check_nulls
from groupclient.error_codes import ErrorCode
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.schema import client_ids, correlation_ids, encode_request, messages, spoilers, with_unknown_tag
from tests.fuzz.server import HOLDING, Outcome, ask, check_answer, error_codes, fail_on_server_errors, fuzz_cluster

CASES = [pytest.param(spec.key, version, id=f"{spec.key.name}-v{version}")
         for spec in API_SPECS.values() for version in range(spec.request.max_version + 1)]

# Examples per API version: ~150 versions share the folder's time budget.
EXAMPLES = 10
NULL_EXAMPLES = 4


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[EmbeddedCluster]:
    yield from fuzz_cluster()


def expect_answer(key: ApiKey, version: int, request: Any, payload: bytes, outcome: Outcome) -> None:
    """A well-formed request: answered (or held, for a long poll), never closed."""
    spec = API_SPECS[key]
    served = spec.min_version <= version <= spec.max_version
    event(f"well-formed: {outcome.kind}")
    if outcome.kind == "silent":
        assert key is ApiKey.PRODUCE and request.acks == 0
        return
    if outcome.kind == "held":
        assert served and key in HOLDING
        return
    assert outcome.kind == "answer", f"{key.name} v{version} closed the connection: {outcome.reason!r}"
    assert outcome.frame is not None
    response = check_answer(payload, outcome.frame)
    if not served:
        # a version the schema knows but the server does not serve: refused in the API's own answer
        assert set(error_codes(response.to_dict())) <= {ErrorCode.UNSUPPORTED_VERSION}, response


def expect_answer_or_close(payload: bytes, outcome: Outcome) -> None:
    """A spoilt frame: read as some request and answered, or the connection closes."""
    event(f"mutated: {outcome.kind}")
    if outcome.kind == "answer":
        assert outcome.frame is not None
        check_answer(payload, outcome.frame)


@pytest.mark.parametrize("key, version", CASES)
def test_every_request_is_answered_or_closes_only_its_connection(
        fuzzed: EmbeddedCluster, caplog: pytest.LogCaptureFixture, key: ApiKey, version: int) -> None:
    spec = API_SPECS[key]

    @fuzz_settings(EXAMPLES)
    @given(request=messages(spec.request, version), correlation_id=correlation_ids(), client_id=client_ids(),
           data=st.data())
    def run(request: Any, correlation_id: int, client_id: str | None, data: st.DataObject) -> None:
        since = len(caplog.records)
        frame = encode_request(request, correlation_id, client_id)
        if data.draw(st.booleans(), label="unknown tag"):
            tagged = with_unknown_tag(request, frame[4:], data.draw(st.integers(100, 2**20)),
                                      data.draw(st.binary(max_size=8)))
            frame = len(tagged).to_bytes(4, "big") + tagged
        expect_answer(key, version, request, frame[4:], ask(fuzzed, frame[4:]))
        spoilt = data.draw(spoilers(), label="spoil")(frame)
        expect_answer_or_close(spoilt[4:], ask(fuzzed, spoilt[4:]))
        fail_on_server_errors(caplog, since)

    run()


@pytest.mark.parametrize("key, version", CASES)
def test_a_null_where_the_schema_has_none_closes_only_its_connection(
        fuzzed: EmbeddedCluster, caplog: pytest.LogCaptureFixture, key: ApiKey, version: int) -> None:
    """kafka-python reads a null in a non-nullable string, bytes or array as None; the server
    refuses such a request as Kafka does, by closing the connection, before any handler sees it."""
    spec = API_SPECS[key]

    @fuzz_settings(NULL_EXAMPLES)
    @given(request=messages(spec.request, version, nulls=True), correlation_id=correlation_ids())
    def run(request: Any, correlation_id: int) -> None:
        since = len(caplog.records)
        payload = encode_request(request, correlation_id, "fuzz")[4:]
        outcome = ask(fuzzed, payload)
        try:
            check_nulls(request, request._struct, version, spec.request.__name__)
            refused = False
        except MalformedMessage:
            # (an ApiVersions version not served is answered without reading the body, KIP-511)
            refused = not (key is ApiKey.API_VERSIONS and version > spec.max_version)
        if refused:
            assert outcome.kind == "closed" and "non-nullable" in str(outcome.reason), outcome
        else:
            expect_answer(key, version, request, payload, outcome)
        fail_on_server_errors(caplog, since)

    run()
