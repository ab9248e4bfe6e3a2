"""Whether the consumer knows the partitions of what it subscribed to, and waiting (bounded) until
it does: a classic member's first join and the consumption without a group both need them."""

from __future__ import annotations

from ..clock import Clock, Timer
from ..network.client import NetworkClient
from .subscription import SubscriptionState


def topic_metadata_known(client: NetworkClient, subscription: SubscriptionState) -> bool:
    """The metadata names every subscribed topic (as existing or as unavailable); a pattern
    needs only some metadata."""
    metadata = client.metadata.snapshot
    known = metadata.topics() | set(metadata.unavailable)
    return bool(metadata.version) and (subscription.pattern is not None or subscription.topics <= known)


def wait_for_topic_metadata(client: NetworkClient, subscription: SubscriptionState, clock: Clock,
                            timer: Timer) -> bool:
    """Ask for metadata until :func:`topic_metadata_known`, within ``timer``: False if it ran out."""
    while True:
        if topic_metadata_known(client, subscription):
            return True
        future = client.maybe_update_metadata()
        client.poll_until(future, Timer(clock, min(timer.remaining_ms(), 100)))
        if timer.expired():
            return False
