"""aiokafka's AIOKafkaConsumer settings, turned into GroupConsumer's (the same names, mostly).

What differs, and why, is in docs/asyncio.md ("Migrating from aiokafka"):

- aiokafka's defaults where they differ from kafka-python's: ``session_timeout_ms`` 10000,
  ``request_timeout_ms`` 40000, ``partition_assignment_strategy`` round robin;
- ``max_poll_records=None`` (aiokafka: no limit) is a batch of 500 for each fetch the consumer
  thread makes; ``getmany(max_records=None)`` still returns every record it holds;
- ``api_version='auto'`` is None (ask the broker);
- aiokafka's assignor classes are taken by their name (``roundrobin``, ``range``, ``sticky``);
- ``rebalance_timeout_ms`` is max_poll_interval_ms, as in Java; ``consumer_timeout_ms`` (aiokafka's
  internal fetch wait) and ``loop`` have nothing to set: a value other than aiokafka's default is
  logged at WARNING and ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from ..consumer.config import CLASSIC_ONLY, build_config

log = logging.getLogger("groupclient.aio")

AIOKAFKA_DEFAULTS: dict[str, Any] = {
    "session_timeout_ms": 10_000,
    "request_timeout_ms": 40_000,
    "partition_assignment_strategy": ("roundrobin",),
}

# aiokafka names with no GroupConsumer setting, and the value that means "as aiokafka's default"
_AIOKAFKA_ONLY = {"loop": None, "consumer_timeout_ms": 200, "rebalance_timeout_ms": None}


T_co = TypeVar("T_co", covariant=True)


class AioDeserializerObject(Protocol[T_co]):
    """A kafka-python ``Deserializer`` object as AsyncGroupConsumer calls it: records are made as
    aiokafka makes them, so ``data`` is None for a missing key or value, and the headers are a
    tuple of ``(key, value)`` pairs."""

    def deserialize(self, topic: str, headers: tuple[tuple[str, bytes | None], ...], data: bytes | None,
                    /) -> T_co:
        """The key or value made of ``data``."""
        ...


class AioTopicDeserializerObject(Protocol[T_co]):
    """The older form, ``deserialize(topic, data)``, as AsyncGroupConsumer calls it."""

    def deserialize(self, topic: str, data: bytes | None, /) -> T_co:
        """The key or value made of ``data``."""
        ...


# AsyncGroupConsumer's key_deserializer and value_deserializer: as aiokafka's, a callable called
# with the bytes, and with None for a missing key or value (a tombstone) too; or a Deserializer
# object.  What it returns is K (V) of AsyncGroupConsumer[K, V].
Deserializer = Callable[[bytes | None], T_co] | AioDeserializerObject[T_co] | AioTopicDeserializerObject[T_co]


def _assignor(strategy: object) -> object:
    """aiokafka's own assignor classes (aiokafka.coordinator.assignors.*) by their name."""
    module = getattr(strategy, "__module__", "") or ""
    name = getattr(strategy, "name", None)
    if module.startswith("aiokafka.") and isinstance(name, str):
        return name
    return strategy


def translate(configs: Mapping[str, Any]) -> dict[str, Any]:
    """GroupConsumer's settings for aiokafka-style ``configs`` (ConfigurationError when wrong)."""
    consumer_protocol = str(configs.get("group_protocol", "classic")).lower() == "consumer"
    # under the consumer protocol the broker sets these: GroupConsumer refuses them
    settings = {k: v for k, v in AIOKAFKA_DEFAULTS.items() if not (consumer_protocol and k in CLASSIC_ONLY)}
    for key, value in configs.items():
        if key in _AIOKAFKA_ONLY:
            if value != _AIOKAFKA_ONLY[key]:
                log.warning("%s=%r is ignored by groupclient.aio (%s)", key, value, {
                    "loop": "the consumer runs on the loop that calls start()",
                    "consumer_timeout_ms": "it is aiokafka's internal fetch wait; fetch_max_wait_ms bounds ours",
                    "rebalance_timeout_ms": "the rebalance timeout is max_poll_interval_ms, as in Java",
                }[key])
            continue
        settings[key] = value
    if settings.get("max_poll_records", 0) is None:
        del settings["max_poll_records"]
    if settings.get("api_version") == "auto":
        settings["api_version"] = None
    strategies = settings.get("partition_assignment_strategy")
    if isinstance(strategies, (list, tuple)):
        settings["partition_assignment_strategy"] = tuple(_assignor(s) for s in strategies)
    protocol = str(settings.get("security_protocol", "PLAINTEXT"))
    if protocol.startswith("SASL") and settings.get("sasl_mechanism") is None:
        settings["sasl_mechanism"] = "PLAIN"  # aiokafka's default mechanism
    build_config(settings)  # every check GroupConsumer makes, now, before anything starts
    return settings
