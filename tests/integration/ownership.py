"""Who owned which partition when, from the peers' own timestamped reports, and whether two
members ever owned one partition at the same instant.

Each peer reports ``assigned`` with everything it owns (before it fetches them), ``revoked`` and
``lost`` with what it gave up (after it stopped fetching them), ``closing`` when it stops
consuming; a killed peer owns nothing from the moment its output ended.  Times are
CLOCK_MONOTONIC in every process (see tests/peers/common.py), so intervals of different peers
compare.  A start reported early and an end reported late only widen an interval: an overlap
found is real or conservative, never missed.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.integration.peers import Peer


@dataclass(frozen=True)
class Owned:
    partition: int
    member: str
    start: float
    end: float


def ownership(peer: Peer, until: float) -> list[Owned]:
    """The peer's ownership intervals; those still open end at ``until`` (or when it died)."""
    opened: dict[int, float] = {}
    result: list[Owned] = []

    def close(partitions: set[int], t: float) -> None:
        for p in sorted(partitions & set(opened)):
            result.append(Owned(p, peer.name, opened.pop(p), t))

    for event in peer.snapshot():
        kind, t = event["event"], float(event.get("t", 0.0))
        if kind == "assigned":
            now = set(event["partitions"])
            close(set(opened) - now, t)
            for p in now - set(opened):
                opened[p] = t
        elif kind in ("revoked", "lost"):
            close(set(event["partitions"]), t)
        elif kind in ("closing", "error"):
            close(set(opened), t)
    end = peer.ended_at if peer.ended_at is not None else until
    close(set(opened), min(end, until))
    return result


def double_ownership(peers: list[Peer], until: float) -> list[str]:
    """Every instant two peers owned the same partition, described."""
    spans = sorted((o for peer in peers for o in ownership(peer, until)), key=lambda o: (o.partition, o.start))
    found = []
    for i, a in enumerate(spans):
        for b in spans[i + 1:]:
            if b.partition != a.partition or b.start >= a.end:
                break
            if b.member != a.member:
                found.append(f"partition {a.partition}: {a.member} [{a.start:.3f}, {a.end:.3f}] and "
                             f"{b.member} [{b.start:.3f}, {b.end:.3f}]")
    return found
