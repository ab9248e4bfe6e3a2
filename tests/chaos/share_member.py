"""One chaos share-group member: a ShareConsumer (explicit acknowledgement) in its own process,
reporting as JSON lines on stdout (``t``: CLOCK_MONOTONIC seconds, as member.py's).

Events: ``ready``; ``delivered`` (``p`` partition, ``o`` offset, ``n`` delivery count) for each
record a poll hands out; ``acked`` (``k`` the type given) as the application acknowledges it;
``accepted`` for each record whose ACCEPT the broker took (the acknowledgement commit callback);
``error`` (and the process ends) for any error of the consumer; ``closed``.  Each record is
accepted, released (``--release``) or rejected (``--reject``) by a draw from the incarnation's
seed; ``--work-ms`` is spent on each batch.  SIGTERM closes it gracefully.
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import threading
import time
from typing import Any

import groupclient
from groupclient import AcknowledgeType

from tests.chaos.member import report

stop = threading.Event()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--seed", required=True)
    parser.add_argument("--release", type=float, default=0.2)
    parser.add_argument("--reject", type=float, default=0.05)
    parser.add_argument("--work-ms", type=int, default=5)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    draws = random.Random(args.seed)

    def on_commit(offsets: dict[Any, set[int]], error: Exception | None) -> None:
        for tp, taken in offsets.items():
            for offset in sorted(taken):
                if error is None:
                    report("answered", p=tp.partition, o=offset)
                else:
                    report("refused", p=tp.partition, o=offset, why=type(error).__name__)

    consumer = groupclient.ShareConsumer(
        args.topic, bootstrap_servers=args.bootstrap, group_id=args.group, client_id=args.client_id,
        share_acknowledgement_mode="explicit", acknowledgement_commit_callback=on_commit, max_poll_records=50)
    report("ready")
    try:
        while not stop.is_set():
            batch = consumer.poll(timeout_ms=200)
            for records in batch.values():
                for r in records:
                    report("delivered", p=r.partition, o=r.offset, n=r.delivery_count)
            if batch:
                time.sleep(args.work_ms / 1000)  # the work on the batch
            for records in batch.values():
                for r in records:
                    draw = draws.random()
                    kind = (AcknowledgeType.RELEASE if draw < args.release
                            else AcknowledgeType.REJECT if draw < args.release + args.reject else AcknowledgeType.ACCEPT)
                    report("acked", p=r.partition, o=r.offset, n=r.delivery_count, k=kind.name)
                    consumer.acknowledge(r, kind)
    except Exception as exc:  # noqa: BLE001 - reported, the run judges it
        report("error", error=repr(exc))
        consumer.close(timeout_ms=5000)
        return 1
    consumer.commit_sync(timeout_ms=10_000)
    consumer.close(timeout_ms=10_000)
    report("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
