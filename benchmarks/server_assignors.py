"""The coordinator's KIP-848 assignors (``uniform``, ``range``) at Kafka's benchmark sizes.

Run it (about a minute here)::

    nice -n 5 python benchmarks/server_assignors.py

Each size is assigned from scratch ("full") and again after one member joined ("incremental":
every other member holds its previous target), homogeneous subscriptions over 10 topics; the
best of ``--repeats`` runs is reported.  Kafka's own JMH benchmark (ServerSideAssignorBenchmark)
reports about 21 ms for the uniform assignor at 10,000 members x 100,000 partitions in Java; the
target (issue 24) is within 10x of that.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from groupclient.coordinator.consumer_group.assignors import (  # noqa: E402
    ASSIGNORS, Assignment, MemberSpec,
)

Assign = Callable[[Sequence[MemberSpec], Mapping[uuid.UUID, int]], dict[str, Assignment]]


def best_ms(assign: Assign, members: list[MemberSpec], partitions: dict[uuid.UUID, int], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        assign(members, partitions)
        best = min(best, time.perf_counter() - started)
    return best * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="10000x100000,2000x1000000", help="members x partitions, comma-separated")
    args = parser.parse_args()
    topics = [uuid.UUID(int=i + 1) for i in range(10)]
    print("| assignor | members | partitions | full (ms) | incremental (ms) |\n| --- | --- | --- | --- | --- |")
    for size in args.sizes.split(","):
        count, total = (int(v) for v in size.split("x"))
        partitions = {t: total // len(topics) for t in topics}
        members = [MemberSpec(f"member-{i:07d}", frozenset(topics)) for i in range(count)]
        for name, assign in ASSIGNORS.items():
            full = best_ms(assign, members, partitions, args.repeats)
            previous = assign(members, partitions)
            grown = [MemberSpec(m.member_id, m.topics, previous[m.member_id]) for m in members]
            grown.append(MemberSpec("member-new", frozenset(topics)))
            incremental = best_ms(assign, grown, partitions, args.repeats)
            print(f"| {name} | {count} | {total} | {full:.0f} | {incremental:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
