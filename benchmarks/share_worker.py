"""One share consumer in its own process, for benchmarks/share_groups.py: joins ``--group``, reads
``--topic`` in implicit mode, spends ``--work-ms`` per record (a sleep: the work of an
I/O-bound job), and writes one JSON line per poll that returned records, ``{"t": monotonic s,
"n": records}``, until SIGTERM.  ``--client``: groupclient or confluent (confluent-kafka's
ShareConsumer)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

stop = threading.Event()


def report(n: int) -> None:
    sys.stdout.write(json.dumps({"t": time.monotonic(), "n": n}) + "\n")
    sys.stdout.flush()


def work(records: int, work_ms: float) -> None:
    if work_ms:
        for _ in range(records):
            time.sleep(work_ms / 1000)


def groupclient(args: argparse.Namespace) -> None:
    from groupclient import ShareConsumer

    consumer = ShareConsumer(args.topic, bootstrap_servers=args.bootstrap, group_id=args.group,
                             max_poll_records=args.max_records, share_acquire_mode=args.acquire_mode)
    sys.stdout.write('{"ready": true}\n')
    sys.stdout.flush()
    try:
        while not stop.is_set():
            n = sum(len(records) for records in consumer.poll(timeout_ms=100).values())
            if n:
                report(n)
                work(n, args.work_ms)
    finally:
        consumer.close(timeout_ms=5000)


def confluent(args: argparse.Namespace) -> None:
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": args.bootstrap, "group.id": args.group, "log_level": 3,
                              "max.poll.records": args.max_records, "broker.address.family": "v4"})
    consumer.subscribe([args.topic])
    sys.stdout.write('{"ready": true}\n')
    sys.stdout.flush()
    try:
        while not stop.is_set():
            n = sum(1 for m in consumer.poll(0.1) or [] if m.error() is None)
            if n:
                report(n)
                work(n, args.work_ms)
    finally:
        consumer.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", choices=["groupclient", "confluent"], required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--max-records", type=int, default=500)
    parser.add_argument("--acquire-mode", default="batch_optimized")
    parser.add_argument("--work-ms", type=float, default=0.0)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    {"groupclient": groupclient, "confluent": confluent}[args.client](args)


if __name__ == "__main__":
    main()
