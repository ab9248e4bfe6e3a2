"""Driving a consumer a test owns: poll it, a bounded number of times, until a condition holds."""

from __future__ import annotations

from collections.abc import Callable

from groupclient import GroupConsumer


def poll_until(consumer: GroupConsumer, condition: Callable[[], bool], polls: int, poll_ms: int = 500) -> bool:
    """Poll (each poll runs the simulation meanwhile) until ``condition()`` holds; whether it does."""
    for _ in range(polls):
        if condition():
            return True
        consumer.poll(poll_ms)
    return condition()
