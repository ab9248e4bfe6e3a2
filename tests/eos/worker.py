"""One exactly-once worker: consume, transform, produce, in a process of its own (so that it can
be SIGKILLed mid-transaction).  Its events are JSON lines on stdout.

The pattern of docs/exactly-once.md: a GroupConsumer reading with ``isolation_level=
"read_committed"`` and no auto-commit, and kafka-python's transactional producer.  Each batch of
``poll()`` is one transaction: the outputs, then the inputs' offsets with
``send_offsets_to_transaction(offsets, consumer.group_metadata())``, then the commit.  The group
metadata fences a member the group has moved on from (KIP-447): the generation (classic) or
the member epoch (the consumer protocol).  A transaction that fails is aborted and the consumer
goes back to the committed offsets; a producer that cannot abort (fenced, or a fatal error) is
replaced by a new one with the same transactional id, which aborts what the old one left open.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
from typing import Any

from kafka import KafkaProducer

from groupclient import GroupConsumer, OffsetAndMetadata

stop = threading.Event()


def report(event: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"e": event, "t": time.monotonic(), **fields}) + "\n")
    sys.stdout.flush()


def new_producer(args: argparse.Namespace, attempts: int = 4) -> KafkaProducer:
    """A transactional producer, ready: init_transactions() waits max_block_ms (30 s) and fails
    while the transaction coordinator is away or still ending the last producer's transaction;
    a few tries (2 minutes at most) ride that out."""
    for attempt in range(attempts):
        try:
            return _new_producer(args)
        except Exception as exc:
            if attempt == attempts - 1:
                raise
            report("init-failed", err=f"{type(exc).__name__}: {exc}")
    raise AssertionError("unreachable")


def _new_producer(args: argparse.Namespace) -> KafkaProducer:
    producer = KafkaProducer(bootstrap_servers=args.bootstrap, client_id=f"{args.client_id}-producer",
                             transactional_id=args.transactional_id, transaction_timeout_ms=10000,
                             request_timeout_ms=10000, max_block_ms=30000, retry_backoff_ms=100)
    try:
        producer.init_transactions()
    except Exception:
        try:
            producer.close(timeout=0)
        except Exception:  # kafka-python's close(timeout=0) raises when it cannot flush
            pass
        raise
    return producer


# kafka-python 3.0.12's send_offsets_to_transaction(), commit_transaction() and abort_transaction()
# wait without a bound; a node killed under a transaction can leave them waiting for ever.  The
# same calls, bounded: the transaction manager's result has the timeout the producer does not pass.
TRANSACTION_CALL_TIMEOUT_MS = 10000  # below max_poll_interval_ms (20 s here), so the member stays in the group


def bounded(producer: KafkaProducer, start: Any) -> None:
    """Run a transactional step (``start(transaction_manager)`` returns its result) within
    TRANSACTION_CALL_TIMEOUT_MS: TimeoutError after it, the step's error if it failed."""
    result = start(producer._transaction_manager)
    producer._sender.wakeup()
    if not result.wait(timeout_ms=TRANSACTION_CALL_TIMEOUT_MS):
        raise TimeoutError(f"a transactional call got no answer in {TRANSACTION_CALL_TIMEOUT_MS} ms")


def rewind(consumer: GroupConsumer) -> None:
    """After an aborted transaction: read again from the committed offsets."""
    for tp in consumer.assignment():
        committed = consumer.committed(tp)
        if committed is None:
            consumer.seek_to_beginning(tp)
        else:
            consumer.seek(tp, committed)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--transactional-id", required=True)
    parser.add_argument("--protocol", choices=("classic", "consumer"), default="classic")
    parser.add_argument("--work-ms", type=int, default=0, help="time each batch's transformation takes")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    group: dict[str, Any] = ({"group_protocol": "consumer"} if args.protocol == "consumer"
                             else {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000})
    consumer = GroupConsumer(args.input, bootstrap_servers=args.bootstrap, group_id=args.group,
                             client_id=args.client_id, isolation_level="read_committed", enable_auto_commit=False,
                             auto_offset_reset="earliest", max_poll_records=20, max_poll_interval_ms=20000,
                             request_timeout_ms=10000, default_api_timeout_ms=30000, **group)
    producer = new_producer(args)
    report("ready")
    try:
        while not stop.is_set():
            batch = consumer.poll(timeout_ms=200)
            if not batch:
                continue
            ranges = [[tp.partition, rs[0].offset, rs[-1].offset, len(rs)] for tp, rs in batch.items()]
            try:
                producer.begin_transaction()
                report("begin", r=ranges)
                for records in batch.values():
                    for r in records:
                        producer.send(args.output, key=r.key, value=r.value)
                if args.work_ms:
                    time.sleep(args.work_ms / 1000)  # the transformation's work, mid-transaction
                # the positions, not the last offset + 1: past a transaction's trailing marker
                offsets = {tp: OffsetAndMetadata(consumer.position(tp), "", -1) for tp in batch}
                metadata = consumer.group_metadata()
                bounded(producer, lambda tm: tm.send_offsets_to_transaction(offsets, metadata))
                bounded(producer, lambda tm: tm.begin_commit())
                report("committed", r=ranges)
            except Exception as exc:  # abort, or replace a producer that cannot abort
                report("failed", r=ranges, err=f"{type(exc).__name__}: {exc}")
                try:
                    if isinstance(exc, TimeoutError):
                        raise  # stuck: a new producer with the same id aborts what this one left
                    bounded(producer, lambda tm: tm.begin_abort())
                    report("aborted")
                except Exception as fatal:
                    report("replaced", err=f"{type(fatal).__name__}: {fatal}")
                    try:
                        producer.close(timeout=0)
                    except Exception:  # kafka-python's close(timeout=0) raises when it cannot flush
                        pass
                    producer = new_producer(args)
                rewind(consumer)
    except Exception as exc:
        logging.exception("the worker's loop failed")
        report("error", type=type(exc).__name__, message=str(exc))
        return 2
    consumer.close()
    producer.close(timeout=5)
    report("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
