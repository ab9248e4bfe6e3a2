"""One chaos group member: a GroupConsumer in its own process, reporting what it does as JSON
lines on stdout (``t``: CLOCK_MONOTONIC seconds, the same clock in every process).

It processes each batch, then commits exactly the offsets it processed.  A commit refused
(a rebalance, a fault) stays pending and is retried after the next poll, but only for the
partitions the member still owns: committing for a partition that has moved on could move its
offset backwards.  ``--protocol consumer`` makes it a KIP-848 member (the broker assigns; the
remote assignor is ``--strategy`` when that names one of the broker's).  SIGUSR1 makes it stall
(no poll) for --stall-ms, past max_poll_interval_ms; SIGTERM closes it gracefully.

``--client kafka-python`` runs kafka-python's KafkaConsumer (classic protocol) in the same loop, so
that a run on Apache Kafka mixes both clients in one group.  After ``close()`` the member reports
what the consumer left behind (its ``closed`` event): the threads still alive that were not there
before the consumer was made, and the sockets it still holds (``/proc/self/fd`` links to
``socket:``, against the same baseline); a groupclient member must leave none (checks.py).
kafka-python 3.0.12's poll() raises a retriable error (KafkaConnectionError) when a connection is
refused or reset, where Java's consumer retries: a kafka-python member reports it (``retried``)
and polls again; any error of a groupclient member ends it (``error``), as before.
``--commit-timeout-ms`` bounds each commit, so that a member whose coordinator is unreachable
polls again soon and hears of its lost partitions from its next poll().
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
from pathlib import Path
from typing import Any

import groupclient

stop = threading.Event()
stall = threading.Event()


def report(event: str, **fields: Any) -> None:
    fields.setdefault("t", time.monotonic())
    sys.stdout.write(json.dumps({"e": event, **fields}) + "\n")
    sys.stdout.flush()


def socket_fds() -> set[str]:
    """This process's open sockets, as ``fd:socket:[inode]``."""
    found = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile (the listing's own descriptor)
            continue
        if target.startswith("socket:"):
            found.add(f"{fd.name}:{target}")
    return found


def make_consumer(args: argparse.Namespace) -> Any:
    """A groupclient GroupConsumer, or kafka-python's KafkaConsumer, with the run's settings."""
    common: dict[str, Any] = dict(
        bootstrap_servers=args.bootstrap, group_id=args.group, client_id=args.client_id,
        auto_offset_reset="earliest", enable_auto_commit=False, max_poll_records=100,
        max_poll_interval_ms=args.max_poll_interval_ms, metadata_max_age_ms=2000,
        request_timeout_ms=args.session_ms + 2000, retry_backoff_ms=100, reconnect_backoff_ms=50,
        reconnect_backoff_max_ms=1000)
    classic = {"session_timeout_ms": args.session_ms, "heartbeat_interval_ms": max(args.session_ms // 6, 100)}
    if args.client == "kafka-python":
        import kafka
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

        known = (RangePartitionAssignor, RoundRobinPartitionAssignor, CooperativeStickyAssignor)
        assignors = {a.name: a for a in known}
        return kafka.KafkaConsumer(**common, **classic, partition_assignment_strategy=[
            assignors[name] for name in args.strategy.split(",")])
    if args.protocol == "consumer":
        # the broker assigns, and sets the session and the heartbeat interval (the harness gives
        # the cluster the same session as the classic members')
        group_settings: dict[str, Any] = {"group_protocol": "consumer"}
        if args.strategy in ("uniform", "range"):
            group_settings["group_remote_assignor"] = args.strategy
    else:
        group_settings = {**classic, "partition_assignment_strategy": args.strategy.split(",")}
    return groupclient.GroupConsumer(**common, **group_settings)


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
    parser.add_argument("--client", choices=("groupclient", "kafka-python"), default="groupclient")
    parser.add_argument("--commit-timeout-ms", type=int, default=None,
                        help="bound each commit (default: the client's own bound)")
    args = parser.parse_args()
    if args.client == "kafka-python":
        import kafka as lib
        if args.protocol != "classic":
            parser.error("kafka-python members speak the classic protocol")
    else:
        lib = groupclient
    TopicPartition, OffsetAndMetadata = lib.TopicPartition, lib.OffsetAndMetadata
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
            consumer.commit({TopicPartition(args.topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()},
                            timeout_ms=args.commit_timeout_ms)
        except Exception as exc:
            report("commit", o=offsets, ok=False, t0=started, err=f"{type(exc).__name__}: {exc}")
            return
        report("commit", o=offsets, ok=True, t0=started)
        for p, o in offsets.items():
            if pending.get(p) == o:
                del pending[p]

    class Listener(lib.ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked):  # type: ignore[no-untyped-def]
            report("revoked", p=sorted(tp.partition for tp in revoked))
            # hand over exactly what was processed; kafka-python 3.0.12 calls a listener on its IO
            # thread, where commit() always raises ("Cannot block on net.run() from the IO
            # thread"): its members hand over what their last commit after a poll says
            if args.client != "kafka-python":
                commit()
            for tp in revoked:
                pending.pop(tp.partition, None)

        def on_partitions_lost(self, lost):  # type: ignore[no-untyped-def]
            report("lost", p=sorted(tp.partition for tp in lost))
            for tp in lost:  # others may own them now: never commit for them again
                pending.pop(tp.partition, None)

        def on_partitions_assigned(self, assigned):  # type: ignore[no-untyped-def]
            report("assigned", p=sorted(tp.partition for tp in assigned))

    # what was there before the consumer: not its to leave behind
    threads_before = set(threading.enumerate())
    sockets_before = socket_fds()
    consumer = make_consumer(args)
    consumer.subscribe([args.topic], listener=Listener())
    report("ready", pid=os.getpid())
    try:
        while not stop.is_set():
            started = time.monotonic()
            try:
                # kafka-python: 1 s, as tests/peers/kp_consumer.py says why (a join's completion
                # cancelled at poll()'s timeout leaves a kafka-python member joined in name only);
                # checks.py's LONGEST_POLL_S
                batch = consumer.poll(timeout_ms=1000 if args.client == "kafka-python" else 200)
            except Exception as exc:
                if args.client != "kafka-python" or not getattr(exc, "retriable", False):
                    raise
                report("retried", type=type(exc).__name__, message=str(exc))
                stop.wait(0.1)  # a refused connection fails at once: no busy loop
                continue
            ranges = []
            for tp, records in batch.items():
                offsets = [r.offset for r in records]
                ranges.append([tp.partition, offsets[0], offsets[-1], len(offsets)])
                pending[tp.partition] = offsets[-1] + 1
            # every poll, one that returned nothing too: checks.py asks what a member was told by when
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
    left = [t.name for t in threading.enumerate()
            if t not in threads_before and t is not threading.main_thread()]
    report("closed", threads=left, sockets=sorted(socket_fds() - sockets_before))
    return 0


if __name__ == "__main__":
    sys.exit(main())
