"""A confluent-kafka (librdkafka) ShareConsumer share-group member reporting JSON lines
(share_common.py)."""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

from common import install_stop_handlers, report, stop  # noqa: E402
from share_common import share_arguments  # noqa: E402
from confluent_kafka import AcknowledgeType, ShareConsumer  # noqa: E402


def main() -> int:
    args = share_arguments("ck-share-peer")
    install_stop_handlers()
    consumer = ShareConsumer({"bootstrap.servers": args.bootstrap, "group.id": args.group,
                              "client.id": args.client_id, "share.acknowledgement.mode": "explicit",
                              "max.poll.records": args.max_records, "log_level": 3,
                              "broker.address.family": "v4"})
    consumer.subscribe([args.topic])
    report("ready")
    code = 0
    try:
        while not stop.is_set():
            messages = [m for m in consumer.poll(0.2) or [] if m.error() is None]
            if not messages:
                continue
            report("delivered", items=[[m.partition(), m.offset(), m.value().decode(), m.delivery_count()]
                                       for m in messages])
            for message in messages:
                time.sleep(args.work_ms / 1000)
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            results = consumer.commit_sync(10)
            by_partition = {tp.partition: error for tp, error in results.items()}
            report("accepted", items=[[m.partition(), m.offset()] for m in messages
                                      if m.partition() in by_partition and by_partition[m.partition()] is None])
            refused = [[m.partition(), m.offset(), str(by_partition[m.partition()])] for m in messages
                       if by_partition.get(m.partition()) is not None]
            if refused:
                report("refused", items=refused)
    except Exception as exc:
        report("error", type=type(exc).__name__, message=str(exc))
        code = 2
    finally:
        report("closing")
        consumer.close()
        report("closed")
    return code


if __name__ == "__main__":
    sys.exit(main())
