"""A groupclient GroupConsumer group member reporting JSON lines like kp_consumer.

Extra: --stall-after N --stall-ms M sleeps M ms (without polling) after the N-th batch, to
exceed max_poll_interval_ms; --max-poll-interval-ms sets it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

from common import install_stop_handlers, report, stop  # noqa: E402

from groupclient import ConsumerRebalanceListener, GroupConsumer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    for name, default in (("--bootstrap", None), ("--group", None), ("--topic", None), ("--strategy", "range"),
                          ("--instance-id", None), ("--client-id", "gc-peer")):
        parser.add_argument(name, default=default, required=default is None and name != "--instance-id")
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--protocol", default="classic", choices=["classic", "consumer"])
    parser.add_argument("--max-poll-interval-ms", type=int, default=300000)
    parser.add_argument("--stall-after", type=int, default=-1)
    parser.add_argument("--stall-ms", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    install_stop_handlers()
    consumer: GroupConsumer

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):  # type: ignore[no-untyped-def]
            report("revoked", partitions=sorted(tp.partition for tp in revoked), t=time.monotonic())

        def on_partitions_lost(self, lost):  # type: ignore[no-untyped-def]
            report("lost", partitions=sorted(tp.partition for tp in lost), t=time.monotonic())

        def on_partitions_assigned(self, assigned):  # type: ignore[no-untyped-def]
            # the generation (a consumer group's member epoch) the assignment is of: tests wait for
            # every member to have heard of the coordinator's latest
            report("assigned", partitions=sorted(tp.partition for tp in consumer.assignment()),
                   generation=consumer.group_metadata().generation_id, t=time.monotonic())

    # under the consumer protocol the broker sets the session and the assignor
    group_settings = {} if args.protocol == "consumer" else {
        "session_timeout_ms": args.session_ms, "heartbeat_interval_ms": max(args.session_ms // 6, 100),
        "partition_assignment_strategy": args.strategy.split(",")}
    consumer = GroupConsumer(
        bootstrap_servers=args.bootstrap, group_id=args.group, client_id=args.client_id,
        group_instance_id=args.instance_id, auto_offset_reset="earliest", enable_auto_commit=False,
        max_poll_interval_ms=args.max_poll_interval_ms, metadata_max_age_ms=2000,
        group_protocol=args.protocol, **group_settings)
    consumer.subscribe([args.topic], listener=Listener())
    report("ready", pid=os.getpid())
    batches = 0
    uncommitted = False
    try:
        while not stop.is_set():
            batch = consumer.poll(timeout_ms=200)
            items = [[tp.partition, r.offset, (r.value or b"").decode()] for tp, recs in batch.items() for r in recs]
            if items:
                report("records", items=items)
                uncommitted = True
            if uncommitted:
                try:
                    consumer.commit()
                    report("committed")
                    uncommitted = False
                except Exception as exc:  # refused during a rebalance: poll() completes it, then commit again
                    report("warning", message=f"commit failed: {type(exc).__name__}: {exc}")
            if items:
                batches += 1
                if batches == args.stall_after:
                    report("stalling", ms=args.stall_ms, t=time.monotonic())
                    time.sleep(args.stall_ms / 1000)
                    report("stalled", assignment=sorted(tp.partition for tp in consumer.assignment()),
                           t=time.monotonic())
    except Exception as exc:
        report("error", type=type(exc).__name__, message=str(exc))
        return 2
    report("closing")  # it stops consuming here; what it owned is no longer read
    consumer.close()
    report("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
