"""The fetcher on a scripted network: pipelined fetches, and stepping over transaction markers."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafka.protocol.consumer.fetch import FetchResponse
from kafka.record.util import calc_crc32c
from kafka.structs import TopicPartition

from groupclient.clock import FakeClock
from groupclient.consumer.fetcher import Fetcher, FetchConfig
from groupclient.consumer.subscription import SubscriptionState
from groupclient.protocol.apis import ApiKey
from tests.unit.scripted_network import ScriptedClient
from tests.unit.test_record_decoding import batch

TP = TopicPartition("t", 0)
TopicResponse = FetchResponse.FetchableTopicResponse
PartitionData = TopicResponse.PartitionData


def control_marker(offset: int) -> bytes:
    marker = bytearray(batch(offset, [(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00", [])]))
    marker[21:23] = (int.from_bytes(marker[21:23], "big") | 0x30).to_bytes(2, "big")  # transactional, control
    marker[17:21] = calc_crc32c(bytes(marker[21:])).to_bytes(4, "big")
    return bytes(marker)


def answer(request: Any, log: dict[int, bytes], high_watermark: int) -> Any:
    partition = request.topics[0].partitions[0]
    data = log.get(partition.fetch_offset, b"")
    return FetchResponse(version=request.version, throttle_time_ms=0, error_code=0, session_id=0, responses=[
        TopicResponse(topic="t", partitions=[PartitionData(
            partition_index=0, error_code=0, high_watermark=high_watermark, last_stable_offset=high_watermark,
            log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1, records=data)])])


def scripted_fetcher(log: dict[int, bytes], high_watermark: int) -> tuple[ScriptedClient, SubscriptionState, Fetcher]:
    client = ScriptedClient(FakeClock())
    client.metadata.snapshot = replace(client.metadata.snapshot, leaders={"t": {0: 0}})
    subscription = SubscriptionState("earliest")
    subscription.assign_from_user({TP})
    subscription.seek(TP, 0)
    fetcher = Fetcher(client, subscription, FetchConfig(1, 500, 52428800, 1048576, 0, True, None, None))  # type: ignore[arg-type]
    client.on(ApiKey.FETCH, lambda request: answer(request, log, high_watermark))
    return client, subscription, fetcher


def fetch_offsets(client: ScriptedClient) -> list[int]:
    return [r.topics[0].partitions[0].fetch_offset for r in client.requests(ApiKey.FETCH)]


def test_the_next_fetch_goes_out_when_an_answer_arrives_not_when_it_is_consumed() -> None:
    rows = [(None, b"v", [])] * 3
    log = {0: batch(0, rows), 3: batch(3, rows), 6: batch(6, rows)}
    client, subscription, fetcher = scripted_fetcher(log, high_watermark=9)
    fetcher.send_fetches()
    client.deliver()  # three answers: each one's arrival sends the fetch for what follows it
    assert fetch_offsets(client)[:3] == [0, 3, 6]
    records = fetcher.fetched_records(100)[TP]
    assert [r.offset for r in records] == list(range(9))
    assert subscription.position(TP) == 9


def test_pipelining_stops_at_the_buffer_budget() -> None:
    rows = [(None, b"x" * 1000, [])] * 5
    log = {0: batch(0, rows), 5: batch(5, rows), 10: batch(10, rows)}
    client, subscription, fetcher = scripted_fetcher(log, high_watermark=15)
    fetcher.config = FetchConfig(1, 500, 4000, 1048576, 0, True, None, None)  # one answer fills it
    fetcher.send_fetches()
    client.deliver()
    assert fetch_offsets(client) == [0]
    assert [r.offset for r in fetcher.fetched_records(100)[TP]] == list(range(5))
    fetcher.send_fetches()
    client.deliver()
    assert fetch_offsets(client) == [0, 5]


def test_a_seek_makes_buffered_answers_stale_and_nothing_is_fetched_behind_them() -> None:
    rows = [(None, b"v", [])] * 3
    log = {0: batch(0, rows), 3: batch(3, rows), 1: batch(1, rows[:2])}
    client, subscription, fetcher = scripted_fetcher(log, high_watermark=6)
    client.on(ApiKey.FETCH, lambda request: answer(request, log, 6) if fetch_offsets(client)[-1] == 0 else None)
    fetcher.send_fetches()
    client.deliver()
    subscription.seek(TP, 1)  # back into the middle of the buffered answer
    assert fetcher.fetched_records(1)[TP][0].offset == 1


def test_the_position_steps_over_a_trailing_transaction_marker() -> None:
    log = {0: batch(0, [(None, b"a", []), (None, b"b", [])]) + control_marker(2)}
    client, subscription, fetcher = scripted_fetcher(log, high_watermark=3)
    fetcher.send_fetches()
    client.deliver()
    assert [r.value for r in fetcher.fetched_records(100)[TP]] == [b"a", b"b"]
    assert subscription.position(TP) == 3  # at the end of the log, not stuck before the marker
    assert subscription.consumed_offsets()[TP].offset == 3


def test_a_corrupt_batch_is_raised_once_per_fetch_after_the_records_before_it_and_loses_nothing() -> None:
    """CORRUPT_MESSAGE found locally goes through the error table (RAISE: raised to the caller, the
    consumer goes on; not a retriable error). The records fetched before it are handed out first:
    before, the error was raised from the same call and those records, their positions already
    advanced, were lost. The position stays at the corrupt batch until the application seeks past."""
    import pytest

    from groupclient.errors import RequestFailedError, RetriableError

    rows = [(None, b"v", [])] * 3
    corrupt = bytearray(batch(3, rows))
    corrupt[-1] ^= 0xFF  # a record byte changed: the CRC no longer matches
    log = {0: batch(0, rows), 3: bytes(corrupt), 6: batch(6, rows)}
    client, subscription, fetcher = scripted_fetcher(log, high_watermark=9)
    fetcher.send_fetches()
    client.deliver()  # the answers for 0, 3 and 6 are all buffered (pipelined)
    assert [r.offset for r in fetcher.fetched_records(100)[TP]] == [0, 1, 2]
    assert subscription.position(TP) == 3
    with pytest.raises(RequestFailedError, match="offset 3 of t-0") as raised:
        fetcher.fetched_records(100)
    assert raised.value.name == "CORRUPT_MESSAGE" and not isinstance(raised.value, RetriableError)
    assert fetcher.fetched_records(100) == {}  # raised once: the answer was dropped
    fetcher.send_fetches()
    client.deliver()
    with pytest.raises(RequestFailedError):  # fetched again from the position: the same batch
        fetcher.fetched_records(100)
    assert subscription.position(TP) == 3
    subscription.seek(TP, 6)  # the application skips it
    fetcher.send_fetches()
    client.deliver()
    assert [r.offset for r in fetcher.fetched_records(100)[TP]] == [6, 7, 8]


def test_a_deserializer_failure_names_the_record_after_the_records_before_it_and_can_be_skipped() -> None:
    """Java's RecordDeserializationException: the partition, the offset and the deserializer's
    exception; the records before it come first (also those of the same batch), the position stays
    at the record, and seek(offset + 1) goes on past it. Before: a bare ValueError from every poll,
    no offset, the whole batch's earlier records lost."""
    import pytest

    from groupclient.errors import RecordDeserializationError

    def value(data: bytes) -> str:
        if data == b"bad":
            raise ValueError("not a number")
        return data.decode()

    log = {0: batch(0, [(None, b"0", []), (None, b"1", []), (None, b"bad", []), (None, b"3", [])])}
    client, subscription, fetcher = scripted_fetcher(log, high_watermark=4)
    fetcher.config = replace(fetcher.config, value_deserializer=value)
    fetcher.send_fetches()
    client.deliver()
    assert [r.value for r in fetcher.fetched_records(100)[TP]] == ["0", "1"]
    with pytest.raises(RecordDeserializationError, match=r"value deserializer failed on the record at offset 2 of t-0") as raised:
        fetcher.fetched_records(100)
    error = raised.value
    assert (error.partition, error.offset, error.key_or_value) == (TP, 2, "value")
    assert isinstance(error.__cause__, ValueError) and isinstance(error, ValueError)
    assert subscription.position(TP) == 2
    log[2] = log[0]  # fetched again from the position: the same record fails again
    fetcher.send_fetches()
    client.deliver()
    with pytest.raises(RecordDeserializationError):
        fetcher.fetched_records(100)
    subscription.seek(TP, error.offset + 1)
    log[3] = log[0]
    fetcher.send_fetches()
    client.deliver()
    assert [r.value for r in fetcher.fetched_records(100)[TP]] == ["3"]
