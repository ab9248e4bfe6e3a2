"""An asyncio group member reporting JSON lines like kp_consumer: groupclient.aio's
AsyncGroupConsumer, or (``--library aiokafka``) aiokafka's AIOKafkaConsumer, with coroutine
rebalance listeners.  SIGTERM/SIGINT stop it gracefully (LeaveGroup)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

from common import install_stop_handlers, report, stop  # noqa: E402


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    for name, default in (("--bootstrap", None), ("--group", None), ("--topic", None), ("--strategy", "range"),
                          ("--instance-id", None), ("--client-id", "aio-peer"), ("--library", "groupclient")):
        parser.add_argument(name, default=default, required=default is None and name != "--instance-id")
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--protocol", default="classic", choices=["classic", "consumer"])
    return parser.parse_args()


def consumer_for(args: argparse.Namespace) -> tuple[Any, Any]:
    settings: dict[str, Any] = dict(
        bootstrap_servers=args.bootstrap, group_id=args.group, client_id=args.client_id,
        auto_offset_reset="earliest", enable_auto_commit=False, metadata_max_age_ms=2000)
    if args.library == "aiokafka":
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
        from aiokafka.coordinator.assignors.range import RangePartitionAssignor
        from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
        return AIOKafkaConsumer(
            **settings, group_instance_id=args.instance_id, session_timeout_ms=args.session_ms,
            heartbeat_interval_ms=max(args.session_ms // 6, 100),
            partition_assignment_strategy=[assignors[s] for s in args.strategy.split(",")]), ConsumerRebalanceListener
    from groupclient.aio import AsyncGroupConsumer, ConsumerRebalanceListener as Listener
    group: dict[str, Any] = {} if args.protocol == "consumer" else dict(
        session_timeout_ms=args.session_ms, heartbeat_interval_ms=max(args.session_ms // 6, 100),
        partition_assignment_strategy=args.strategy.split(","))
    return AsyncGroupConsumer(**settings, group_instance_id=args.instance_id, group_protocol=args.protocol,
                              **group), Listener


async def consume(args: argparse.Namespace) -> int:
    consumer, base = consumer_for(args)

    class Listener(base):  # type: ignore[misc,valid-type]
        async def on_partitions_revoked(self, revoked: Any) -> None:
            report("revoked", partitions=sorted(tp.partition for tp in revoked), t=time.monotonic())

        async def on_partitions_lost(self, lost: Any) -> None:
            report("lost", partitions=sorted(tp.partition for tp in lost), t=time.monotonic())

        async def on_partitions_assigned(self, assigned: Any) -> None:
            report("assigned", partitions=sorted(tp.partition for tp in consumer.assignment()), t=time.monotonic())

    await consumer.start()
    consumer.subscribe([args.topic], listener=Listener())
    report("ready", pid=os.getpid())
    uncommitted = False
    try:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=200)
            items = [[tp.partition, r.offset, (r.value or b"").decode()] for tp, recs in batch.items() for r in recs]
            if items:
                report("records", items=items)
                uncommitted = True
            if uncommitted:
                try:
                    await consumer.commit()
                    report("committed")
                    uncommitted = False
                except Exception as exc:  # refused during a rebalance: getmany() completes it, then again
                    report("warning", message=f"commit failed: {type(exc).__name__}: {exc}")
    except Exception as exc:
        report("error", type=type(exc).__name__, message=str(exc))
        await consumer.stop()
        return 2
    report("closing")  # it stops consuming here; what it owned is no longer read
    await consumer.stop()
    report("closed")
    return 0


def main() -> int:
    args = arguments()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    install_stop_handlers()
    return asyncio.run(consume(args))


if __name__ == "__main__":
    sys.exit(main())
