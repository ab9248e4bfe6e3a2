"""A kafka-python KafkaConsumer group member that reports what it does as JSON lines.

Events: ready, assigned {partitions}, records {items: [[partition, offset, value]]},
committed, error {type, message}, closed.  SIGTERM closes it gracefully (LeaveGroup).
"""

from __future__ import annotations

import logging
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from common import install_stop_handlers, peer_arguments, report, stop  # noqa: E402
from kafka import KafkaConsumer  # noqa: E402
from kafka.consumer.subscription_state import ConsumerRebalanceListener  # noqa: E402
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor  # noqa: E402
from kafka.coordinator.assignors.range import RangePartitionAssignor  # noqa: E402
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor  # noqa: E402
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor  # noqa: E402

ASSIGNORS = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}


def main() -> int:
    args = peer_arguments("kp-peer")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    install_stop_handlers()

    consumer: KafkaConsumer

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):  # type: ignore[no-untyped-def]
            report("revoked", partitions=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned):  # type: ignore[no-untyped-def]
            report("assigned", partitions=sorted(tp.partition for tp in consumer.assignment()))

    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap, group_id=args.group, client_id=args.client_id,
        group_instance_id=args.instance_id, auto_offset_reset="earliest", enable_auto_commit=False,
        session_timeout_ms=args.session_ms, heartbeat_interval_ms=max(args.session_ms // 6, 100),
        partition_assignment_strategy=[ASSIGNORS[s] for s in args.strategy.split(",")],
        metadata_max_age_ms=2000,
    )
    consumer.subscribe([args.topic], listener=Listener())
    report("ready", pid=os.getpid())
    try:
        while not stop.is_set():
            # not 200 ms: kafka-python 3.0.12 cancels its join's completion when poll()'s timeout
            # ends during it, which leaves the member joined in name only (no assignment applied,
            # no rejoin, no heartbeat) for good; a longer poll crosses that instant 5 times less
            # often (reproduced in 7 of 22 two-member joins under load at 200 ms, 0 of 16 at 1 s)
            batch = consumer.poll(timeout_ms=1000)
            items = [[tp.partition, r.offset, (r.value or b"").decode()] for tp, recs in batch.items() for r in recs]
            if items:
                report("records", items=items)
                consumer.commit()
                report("committed")
    except Exception as exc:
        report("error", type=type(exc).__name__, message=str(exc))
        return 2
    report("closing")  # it stops consuming here; what it owned is no longer read
    consumer.close()
    report("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
