"""A groupclient ShareConsumer share-group member reporting JSON lines (share_common.py)."""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from common import install_stop_handlers, report, stop  # noqa: E402
from share_common import share_arguments  # noqa: E402

from groupclient import ShareConsumer  # noqa: E402


def main() -> int:
    args = share_arguments("gc-share-peer")
    if os.environ.get("GC_SHARE_PEER_LOG"):  # a file per peer, for debugging a test
        import logging
        logging.basicConfig(filename=f"{os.environ['GC_SHARE_PEER_LOG']}-{args.client_id}.log", level=logging.DEBUG,
                            format="%(asctime)s %(threadName)s %(name)s %(message)s")
    install_stop_handlers()
    consumer = ShareConsumer(args.topic, bootstrap_servers=args.bootstrap, group_id=args.group,
                             client_id=args.client_id, max_poll_records=args.max_records,
                             share_acknowledgement_mode="explicit", share_acquire_mode="record_limit")
    report("ready")
    code = 0
    try:
        while not stop.is_set():
            polled = consumer.poll(timeout_ms=200)
            records = [r for batch in polled.values() for r in batch]
            if not records:
                continue
            report("delivered", items=[[r.partition, r.offset, r.value.decode(), r.delivery_count] for r in records])
            for record in records:
                time.sleep(args.work_ms / 1000)
                consumer.acknowledge(record)
            results = consumer.commit_sync(timeout_ms=10_000)
            report("accepted", items=[[r.partition, r.offset] for r in records
                                      if results.get(_tp(r)) is None and _tp(r) in results])
            refused = [[r.partition, r.offset, type(results[_tp(r)]).__name__] for r in records
                       if results.get(_tp(r)) is not None]
            if refused:
                report("refused", items=refused)
    except Exception as exc:  # reported, then the exit code says so
        report("error", type=type(exc).__name__, message=str(exc))
        code = 2
    finally:
        report("closing")
        consumer.close()
        report("closed")
    return code


def _tp(record: object) -> object:
    from groupclient import TopicPartition
    return TopicPartition(record.topic, record.partition)  # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(main())
