"""Every setting of ``ShareConsumer``, declared once.

Most are ``GroupConsumer``'s, with the same meaning, default and check: those are named in
:data:`SHARED`, and their declaration stays in :class:`~groupclient.consumer.settings.ConsumerSettings`
(:class:`ShareConsumerSettings` repeats only their types, for the type checker;
tests/unit/test_share_settings.py holds the two to the same types).  The share group's own are
declared here.  The ``GroupConsumer`` settings a share group has no use for are refused by name
with the reason (Java's ``ShareConsumerConfig`` refuses the same ones): a share group's broker
decides where consumption starts (the group config ``share.auto.offset.reset``), what is read
(``share.isolation.level``), who gets which partition, and the heartbeat and session times.
"""

from __future__ import annotations

import ssl
import sys
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Generic, Literal, get_type_hints

from ..consumer.config import build_config
from ..consumer.settings import Deserializer, Setting
from ..errors import ConfigurationError
from ..structs import K, TopicPartition, V

if sys.version_info >= (3, 11):
    from typing import TypedDict
else:  # pragma: no cover - the floor run covers Python 3.10
    from typing_extensions import TypedDict

SHARE = "Share group"
# what the acknowledgement commit callback is called with: the offsets of one partition whose
# acknowledgements the broker answered, and None, or the error it answered with
AcknowledgementCommitCallback = Callable[[dict[TopicPartition, set[int]], Exception | None], object]


class ShareConsumerSettings(TypedDict, Generic[K, V], total=False):
    """The keyword settings of ``ShareConsumer``.  Those shared with ``GroupConsumer`` mean the
    same there (docs/consumer.md); the share group's own are documented here and in
    docs/share-groups.md."""

    bootstrap_servers: str | list[str]
    client_id: str
    client_rack: str | None
    request_timeout_ms: int
    default_api_timeout_ms: int
    retry_backoff_ms: int
    reconnect_backoff_ms: int
    reconnect_backoff_max_ms: int
    max_in_flight_requests_per_connection: int
    connections_max_idle_ms: int
    metadata_max_age_ms: int
    bootstrap_timeout_ms: int
    allow_auto_create_topics: bool
    group_id: str | None
    max_poll_interval_ms: int
    fetch_min_bytes: int
    fetch_max_wait_ms: int
    fetch_max_bytes: int
    max_partition_fetch_bytes: int
    max_poll_records: int
    check_crcs: bool
    key_deserializer: Deserializer[K] | None
    value_deserializer: Deserializer[V] | None
    consumer_timeout_ms: float
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
    ssl_context: ssl.SSLContext | None
    ssl_check_hostname: bool
    ssl_cafile: str | None
    ssl_certfile: str | None
    ssl_keyfile: str | None
    ssl_password: str | None
    ssl_crlfile: str | None
    ssl_ciphers: str | None
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None
    sasl_plain_username: str | None
    sasl_plain_password: str | None
    share_acknowledgement_mode: Annotated[Literal["implicit", "explicit"], Setting(
        "implicit", "implicit: the next poll() or commit accepts every record of the last poll (close() "
        "releases them: they are delivered again); explicit: acknowledge() each record, ACCEPT, RELEASE, "
        "REJECT or RENEW, before the next poll(), which raises IllegalStateError otherwise. Java's "
        "share.acknowledgement.mode.", SHARE)]
    share_acquire_mode: Annotated[Literal["batch_optimized", "record_limit"], Setting(
        "batch_optimized", "batch_optimized: the broker hands out whole record batches, so a poll may "
        "return a little more than max_poll_records; record_limit: at most max_poll_records per fetch "
        "(KIP-1206, Kafka 4.2+). Java's share.acquire.mode.", SHARE)]
    acknowledgement_commit_callback: Annotated[AcknowledgementCommitCallback | None, Setting(
        None, "Called on the application thread, inside poll(), commit_sync(), commit_async() and close(), "
        "once per partition whose acknowledgements the broker answered: (offsets by partition, None or the "
        "error). What it raises is logged. Java's AcknowledgementCommitCallback.", SHARE)]


# the GroupConsumer settings a share consumer takes as they are (declared in ConsumerSettings)
SHARED = tuple(name for name in ShareConsumerSettings.__annotations__ if not name.startswith(("share_", "ack")))
OWN = {name: hint for name, hint in ShareConsumerSettings.__annotations__.items() if name not in SHARED}

# the GroupConsumer settings a share group has no use for, and why (Java's ShareConsumerConfig
# refuses the same: "... cannot be set when using a share group.")
REFUSED = {
    "auto_offset_reset": "where a share group starts is the group's config share.auto.offset.reset (set it with "
                         "IncrementalAlterConfigs on the GROUP resource, e.g. the admin client's alter_configs)",
    "enable_auto_commit": "records are acknowledged, not committed: see share_acknowledgement_mode",
    "auto_commit_interval_ms": "records are acknowledged, not committed: see share_acknowledgement_mode",
    "default_offset_commit_callback": "see acknowledgement_commit_callback",
    "group_instance_id": "share groups have no static members",
    "isolation_level": "what a share group reads is the group's config share.isolation.level",
    "partition_assignment_strategy": "the broker assigns a share group's partitions",
    "group_remote_assignor": "the broker assigns a share group's partitions",
    "group_protocol": "a ShareConsumer always joins a share group",
    "session_timeout_ms": "the broker's group config share.session.timeout.ms sets it",
    "heartbeat_interval_ms": "the broker's group config share.heartbeat.interval.ms sets it",
    "interceptors": "share consumers take no interceptors (Java's refuse interceptor.classes too)",
    "rebalance_event_callback": "share groups have no rebalances to report",
    "exclude_internal_topics": "a share group subscribes to topic names only",
    "api_version": "share groups need a broker of Kafka 4.2 or later, whose versions are asked",
    "tracer_provider": "share consumers have no OpenTelemetry spans yet",
    "meter_provider": "share consumers have no OpenTelemetry metrics yet",
    "metrics_enabled": "see metrics()",
}


def own_defaults() -> dict[str, Any]:
    return {name: _setting(name).default for name in OWN}


def _setting(name: str) -> Setting:
    """The declaration of one of the share group's own settings."""
    setting = get_type_hints(ShareConsumerSettings, include_extras=True)[name].__metadata__[0]
    assert isinstance(setting, Setting), name
    return setting


def build_share_config(configs: Mapping[str, Any]) -> dict[str, Any]:
    """Every setting, checked: the shared ones as GroupConsumer checks them, the own ones here."""
    refused = [name for name in configs if name in REFUSED]
    if refused:
        raise ConfigurationError(
            f"{', '.join(refused)} cannot be set when using a share group: "
            + "; ".join(f"{name}: {REFUSED[name]}" for name in refused))
    # every other GroupConsumer setting is SHARED or accepted and ignored there (kafka-python's
    # internals); unknown names are refused there, with the nearest real one
    config = build_config({k: v for k, v in configs.items() if k not in OWN})
    config = {k: v for k, v in config.items() if k in SHARED}
    own = {**own_defaults(), **{k: v for k, v in configs.items() if k in OWN}}
    mode = own["share_acknowledgement_mode"]
    if mode not in ("implicit", "explicit"):
        raise ConfigurationError(f"share_acknowledgement_mode must be 'implicit' or 'explicit', not {mode!r}")
    acquire = own["share_acquire_mode"]
    if not isinstance(acquire, str) or acquire.lower() not in ("batch_optimized", "record_limit"):
        raise ConfigurationError(f"share_acquire_mode must be 'batch_optimized' or 'record_limit', not {acquire!r}")
    own["share_acquire_mode"] = acquire.lower()
    callback = own["acknowledgement_commit_callback"]
    if callback is not None and not callable(callback):
        raise ConfigurationError("acknowledgement_commit_callback must be callable or None")
    if not config.get("group_id"):
        raise ConfigurationError("a ShareConsumer needs a group_id: the share group it consumes in")
    return {**config, **own}


__all__ = ["AcknowledgementCommitCallback", "SHARED", "ShareConsumerSettings", "build_share_config"]
