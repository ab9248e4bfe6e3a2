"""``groupclient demo``: a consumer group on the embedded coordinator, checked end to end.

Starts an :class:`EmbeddedCluster`, produces records, runs a group of :class:`GroupConsumer`
members in threads and checks that every record was consumed exactly once, that
no partition had two owners, and that the committed offsets equal the end offsets.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

from .coordinator import EmbeddedCluster

TOPIC = "demo"
GROUP = "demo-group"


def run_demo(members: int, partitions: int, records: int, timeout_s: float = 60.0) -> int:
    from .consumer.group_consumer import GroupConsumer

    with EmbeddedCluster(nodes=1, group_initial_rebalance_delay_ms=500) as cluster:
        cluster.create_topic(TOPIC, partitions)
        cluster.produce(TOPIC, [(f"k{i}".encode(), f"record-{i}".encode()) for i in range(records)])
        end = cluster.end_offsets(TOPIC)
        print(f"coordinator at {cluster.bootstrap_servers}; produced {records} records "
              f"to {partitions} partitions of {TOPIC!r}")
        seen: Counter[tuple[int, int]] = Counter()
        assignments: dict[int, list[int]] = {}
        done = threading.Event()
        lock = threading.Lock()
        errors: list[BaseException] = []

        def member(index: int) -> None:
            try:
                consumer = GroupConsumer(
                    TOPIC, bootstrap_servers=cluster.bootstrap_servers, group_id=GROUP,
                    client_id=f"demo-{index}", auto_offset_reset="earliest", enable_auto_commit=False,
                    session_timeout_ms=6000, heartbeat_interval_ms=1000,
                )
                deadline = time.monotonic() + timeout_s
                while not done.is_set() and time.monotonic() < deadline:
                    batch = consumer.poll(timeout_ms=200)
                    with lock:
                        for tp, recs in batch.items():
                            for r in recs:
                                seen[(tp.partition, r.offset)] += 1
                        assignments[index] = sorted(tp.partition for tp in consumer.assignment())
                        if sum(seen.values()) >= records:
                            done.set()
                    if batch:
                        consumer.commit()
                consumer.commit()
                consumer.close()
            except BaseException as exc:  # reported below, never swallowed
                errors.append(exc)
                done.set()

        threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(members)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout_s + 15)
        committed = cluster.committed_offsets(GROUP)

    for index, parts in sorted(assignments.items()):
        print(f"member {index}: partitions {parts}")
    owners = Counter(p for parts in assignments.values() for p in parts)
    duplicates = [k for k, n in seen.items() if n > 1]
    problems = []
    if errors:
        problems.append(f"a member failed: {errors[0]!r}")
    if len(seen) != records:
        problems.append(f"consumed {len(seen)} distinct records of {records}")
    if any(n > 1 for n in owners.values()):
        problems.append(f"partitions owned twice at the end: {sorted(p for p, n in owners.items() if n > 1)}")
    expected = {(TOPIC, p): o for p, o in end.items()}
    if committed != expected:
        problems.append(f"committed {committed} != end offsets {expected}")
    print(f"consumed {len(seen)} records ({len(duplicates)} redelivered during rebalances); "
          f"committed offsets {'match' if committed == expected else 'DO NOT match'} the end offsets")
    for problem in problems:
        print(f"FAILED: {problem}")
    if not problems:
        print("OK")
    return 1 if problems else 0
