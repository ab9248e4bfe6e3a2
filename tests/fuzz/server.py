"""The coordinator's side of the fuzz tests: a cluster to fuzz, one frame through a node's request
path, and what makes an answer acceptable."""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from groupclient.coordinator import EmbeddedCluster
from groupclient.coordinator.node import CloseAfter, DropConnection
from groupclient.protocol.apis import API_SPECS, ApiKey
from groupclient.error_codes import ErrorCode
from groupclient.protocol.framing import FrameError
from tests.fuzz.schema import TOPICS

_HEADER = struct.Struct(">hhi")  # api_key, api_version, correlation_id

# Requests a broker holds by design: JoinGroup and SyncGroup until the rebalance moves on,
# Fetch until records arrive or max_wait_ms.  One of these not answered within HOLD_S is a
# long poll, not a hang: it is cancelled, as when the connection goes away.
HOLDING = frozenset({ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.FETCH})
HOLD_S = 0.1
# any other request is answered at once; past this it hangs
ANSWER_S = 10.0

# Limits small enough that requests asking for many partitions meet them, and the state random
# requests leave behind (topics, groups, members) stays small.
FUZZ_SETTINGS: dict[str, Any] = dict(max_partitions=400, max_partitions_per_request=60, offsets_topic_partitions=5,
                                     max_request_bytes=4 * 1024 * 1024)


def fuzz_cluster() -> Iterator[EmbeddedCluster]:
    """A one-node cluster with the topics the strategies name, each with a few records."""
    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=0, **FUZZ_SETTINGS) as cluster:
        for topic in TOPICS:
            cluster.create_topic(topic, 2)
            cluster.produce(topic, [(b"k", b"v"), (None, b"w")], partition=0)
        yield cluster


@dataclass(frozen=True)
class Outcome:
    """What a node did with one frame: ``answer`` (the framed answer in ``frame``), ``silent``
    (no answer is due: Produce with acks=0), ``closed`` (the connection must close: ``reason``)
    or ``held`` (a long poll still waiting after HOLD_S, cancelled)."""

    kind: str
    frame: bytes | None = None
    reason: BaseException | None = None


def ask(cluster: EmbeddedCluster, payload: bytes) -> Outcome:
    """One request frame (without its size prefix) through node 0's request path, in-process on
    the cluster's event loop: the path a socket's frames take, minus the socket."""
    node = cluster._require_core().nodes[0]
    key = peek_key(payload)
    bound = HOLD_S if key in HOLDING else ANSWER_S

    async def answer() -> Outcome:
        try:
            frame = await asyncio.wait_for(node.answer_frame(payload, "127.0.0.1"), bound)
        except asyncio.TimeoutError:
            return Outcome("held")
        except (FrameError, DropConnection, CloseAfter) as exc:
            return Outcome("closed", reason=exc)
        return Outcome("answer" if frame is not None else "silent", frame)

    outcome = cluster._run(answer())
    if outcome.kind == "held":
        assert key in HOLDING, f"{key!r} not answered within {ANSWER_S} s: the server hangs"
    return outcome


def peek_key(payload: bytes) -> ApiKey | None:
    if len(payload) < _HEADER.size:
        return None
    try:
        return ApiKey(_HEADER.unpack_from(payload, 0)[0])
    except ValueError:
        return None


def peek_header(payload: bytes) -> tuple[int, int, int]:
    api_key, version, correlation_id = _HEADER.unpack_from(payload, 0)
    return api_key, version, correlation_id


def decode_answer(request_payload: bytes, frame: bytes) -> Any:
    """The answer to ``request_payload``, decoded (by kafka-python, not the code under test) with
    the response class of the request's API and version (v0 for a refused ApiVersions, KIP-511);
    checks the frame's size and correlation id."""
    api_key, version, correlation_id = peek_header(request_payload)
    spec = API_SPECS[ApiKey(api_key)]
    (size,) = struct.unpack_from(">i", frame, 0)
    assert size == len(frame) - 4, f"answer frame says {size} bytes, has {len(frame) - 4}"
    if spec.key is ApiKey.API_VERSIONS and not spec.min_version <= version <= spec.max_version:
        version = 0
    response = spec.response.decode(frame[4:], version=version, header=True)
    assert response.header.correlation_id == correlation_id
    # nothing more in the frame than the answer read from it
    assert bytes(response.encode(header=True, framed=True)) == frame, "the answer frame has more bytes than its answer"
    return response


def error_codes(value: Any) -> Iterator[int]:
    """Every ``error_code`` anywhere in a decoded message (``to_dict`` form)."""
    if isinstance(value, dict):
        for name, item in value.items():
            if name == "error_code" and isinstance(item, int):
                yield item
            else:
                yield from error_codes(item)
    elif isinstance(value, list):
        for item in value:
            yield from error_codes(item)


def check_answer(request_payload: bytes, frame: bytes) -> Any:
    response = decode_answer(request_payload, frame)
    codes = set(error_codes(response.to_dict()))
    # UNKNOWN_SERVER_ERROR is what a handler that raised answers (node.py's _handle)
    assert ErrorCode.UNKNOWN_SERVER_ERROR not in codes, f"a handler failed: {response}"
    return response


def server_errors(records: list[logging.LogRecord]) -> list[str]:
    """Log lines that show a defect: a handler that raised, a connection closed after an internal
    error (anything logged at ERROR by the coordinator)."""
    return [f"{r.name}: {r.getMessage()}" + (f" ({r.exc_info[1]!r})" if r.exc_info else "")
            for r in records if r.levelno >= logging.ERROR and r.name.startswith("groupclient.coordinator")]


def fail_on_server_errors(caplog: pytest.LogCaptureFixture, since: int) -> None:
    errors = server_errors(caplog.records[since:])
    assert not errors, "the coordinator logged errors:\n" + "\n".join(errors)
