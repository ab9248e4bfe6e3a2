"""One chaos group member: a GroupConsumer in its own process, reporting what it does as JSON
lines on stdout (``t``: CLOCK_MONOTONIC seconds, the same clock in every process).

It processes each batch, then commits exactly the offsets it processed.  A commit refused
(a rebalance, a fault) stays pending and is retried after the next poll, but only for the
partitions the member still owns: committing for a partition that has moved on could move its
offset backwards.  ``--protocol consumer`` makes it a KIP-848 member (the broker assigns; the
remote assignor is ``--strategy`` when that names one of the broker's).  SIGUSR1 makes it stall
(no poll) for --stall-ms, past max_poll_interval_ms; SIGTERM closes it gracefully.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time
from typing import Any

from groupclient import ConsumerRebalanceListener, GroupConsumer, OffsetAndMetadata, TopicPartition

stop = threading.Event()
stall = threading.Event()


def report(event: str, **fields: Any) -> None:
    fields.setdefault("t", time.monotonic())
    sys.stdout.write(json.dumps({"e": event, **fields}) + "\n")
    sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--strategy", default="range")
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--session-ms", type=int, required=True)
    parser.add_argument("--max-poll-interval-ms", type=int, required=True)
    parser.add_argument("--stall-ms", type=int, required=True)
    parser.add_argument("--protocol", choices=("classic", "consumer"), default="classic",
                        help="the group protocol: classic, or KIP-848's consumer protocol")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGUSR1, lambda *_: stall.set())
    pending: dict[int, int] = {}  # partition -> next offset to commit

    def commit() -> None:
        offsets = dict(pending)
        if not offsets:
            return
        started = time.monotonic()
        try:
            consumer.commit({TopicPartition(args.topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})
        except Exception as exc:
            report("commit", o=offsets, ok=False, t0=started, err=f"{type(exc).__name__}: {exc}")
            return
        report("commit", o=offsets, ok=True, t0=started)
        for p, o in offsets.items():
            if pending.get(p) == o:
                del pending[p]

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):  # type: ignore[no-untyped-def]
            report("revoked", p=sorted(tp.partition for tp in revoked))
            commit()  # hand over exactly what was processed
            for tp in revoked:
                pending.pop(tp.partition, None)

        def on_partitions_lost(self, lost):  # type: ignore[no-untyped-def]
            report("lost", p=sorted(tp.partition for tp in lost))
            for tp in lost:  # others may own them now: never commit for them again
                pending.pop(tp.partition, None)

        def on_partitions_assigned(self, assigned):  # type: ignore[no-untyped-def]
            report("assigned", p=sorted(tp.partition for tp in assigned))

    if args.protocol == "consumer":
        # the broker assigns, and sets the session and the heartbeat interval (the harness gives
        # the cluster the same session as the classic members')
        group_settings: dict[str, Any] = {"group_protocol": "consumer"}
        if args.strategy in ("uniform", "range"):
            group_settings["group_remote_assignor"] = args.strategy
    else:
        group_settings = {"session_timeout_ms": args.session_ms,
                          "heartbeat_interval_ms": max(args.session_ms // 6, 100),
                          "partition_assignment_strategy": args.strategy.split(",")}
    consumer = GroupConsumer(
        bootstrap_servers=args.bootstrap, group_id=args.group, client_id=args.client_id,
        auto_offset_reset="earliest", enable_auto_commit=False, max_poll_records=100,
        max_poll_interval_ms=args.max_poll_interval_ms, metadata_max_age_ms=2000,
        request_timeout_ms=args.session_ms + 2000, retry_backoff_ms=100, reconnect_backoff_ms=50,
        reconnect_backoff_max_ms=1000, **group_settings)
    consumer.subscribe([args.topic], listener=Listener())
    report("ready", pid=os.getpid())
    try:
        while not stop.is_set():
            started = time.monotonic()
            batch = consumer.poll(timeout_ms=200)
            ranges = []
            for tp, records in batch.items():
                offsets = [r.offset for r in records]
                ranges.append([tp.partition, offsets[0], offsets[-1], len(offsets)])
                pending[tp.partition] = offsets[-1] + 1
            if ranges:
                report("poll", t0=started, r=ranges)
            commit()
            if stall.is_set():
                stall.clear()
                report("stall", ms=args.stall_ms)
                time.sleep(args.stall_ms / 1000)  # the stall under test: no poll for this long
                report("stalled")
    except Exception as exc:
        logging.exception("the member's loop failed")  # the traceback, in its stderr file
        report("error", type=type(exc).__name__, message=str(exc))
        return 2
    report("closing")
    consumer.close()
    report("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
