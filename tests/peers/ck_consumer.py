"""A confluent-kafka (librdkafka) Consumer group member reporting JSON lines like kp_consumer."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from common import install_stop_handlers, peer_arguments, report, stop  # noqa: E402
from confluent_kafka import Consumer, KafkaError, KafkaException  # noqa: E402


def main() -> int:
    args = peer_arguments("ck-peer")
    install_stop_handlers()
    conf = {
        "bootstrap.servers": args.bootstrap, "group.id": args.group, "client.id": args.client_id,
        "auto.offset.reset": "earliest", "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 2000,
        "broker.address.family": "v4", "group.protocol": args.protocol,
    }
    if args.protocol == "classic":
        conf.update({"session.timeout.ms": args.session_ms, "heartbeat.interval.ms": max(args.session_ms // 6, 100),
                     "partition.assignment.strategy": args.strategy})
    if args.instance_id:
        conf["group.instance.id"] = args.instance_id
    consumer = Consumer(conf)
    # the consumer group protocol is incremental too: callbacks carry only what changes
    cooperative = args.strategy == "cooperative-sticky" or args.protocol == "consumer"
    owned: set[int] = set()

    def on_assign(c, partitions):  # type: ignore[no-untyped-def]
        if cooperative:
            # COOPERATIVE: ``partitions`` are only the added ones; librdkafka wants them taken
            # with incremental_assign (reported first: it may fetch as soon as they are assigned)
            owned.update(p.partition for p in partitions)
            report("assigned", partitions=sorted(owned))
            c.incremental_assign(partitions)
        else:
            owned.clear()
            owned.update(p.partition for p in partitions)
            report("assigned", partitions=sorted(owned))

    def on_revoke(c, partitions):  # type: ignore[no-untyped-def]
        if cooperative:
            c.incremental_unassign(partitions)  # reported after: it no longer fetches them
        owned.difference_update(p.partition for p in partitions)
        report("revoked", partitions=sorted(p.partition for p in partitions))
        if not cooperative:
            report("assigned", partitions=sorted(owned))

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    report("ready", pid=os.getpid())
    uncommitted = False
    try:
        while not stop.is_set():
            msgs = consumer.consume(num_messages=500, timeout=0.2)
            items = []
            for m in msgs:
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    if m.error().fatal():
                        raise KafkaException(m.error())
                    report("warning", message=str(m.error()))
                    continue
                items.append([m.partition(), m.offset(), (m.value() or b"").decode()])
            if items:
                report("records", items=items)
                uncommitted = True
            if uncommitted:
                try:
                    consumer.commit(asynchronous=False)
                    report("committed")
                    uncommitted = False
                except KafkaException as exc:  # refused during a rebalance: poll() completes it, then again
                    if exc.args[0].fatal():
                        raise
                    if exc.args[0].code() == KafkaError._NO_OFFSET:
                        uncommitted = False  # the partitions went away meanwhile: nothing left to commit
                    else:
                        report("warning", message=f"commit failed: {exc}")
    except KafkaException as exc:
        report("error", type="KafkaException", message=str(exc))
        return 2
    report("closing")  # it stops consuming here; what it owned is no longer read
    consumer.close()
    report("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
