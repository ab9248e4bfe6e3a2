"""Every setting of ``GroupConsumer``, declared once: name, type, default, meaning.

:class:`ConsumerSettings` is the declaration.  Each key's annotation is ``Annotated[type,
Setting(...)]``: the type is what a type checker holds a caller to (``GroupConsumer``'s
``**configs`` is ``Unpack[ConsumerSettings]``, so editors complete the names and mypy refuses a
misspelt one or a value of the wrong type), and the :class:`Setting` carries the default, the
documentation and the check ``build_config`` runs.  ``GroupConsumer.DEFAULT_CONFIG``, the checks
in config.py, ``GroupConsumer``'s docstring (``help(GroupConsumer)``) and the settings table in
docs/consumer.md are all made from it (``python -m groupclient.consumer.settings`` prints that
table; tests/unit/test_settings.py checks the docs hold the current one).

The names and defaults are kafka-python's ``KafkaConsumer``'s.  kafka-python settings that only
tune its own internals are declared ``ignored`` (accepted so configurations carry over, no effect);
those of features groupclient does not have are ``unsupported`` (only their "off" value is
accepted).
"""

from __future__ import annotations

import ast
import functools
import math
import ssl
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, Protocol, TypeVar, get_type_hints

from ..version import __version__
from ..assignors.base import PartitionAssignor
from ..structs import K, OffsetAndMetadata, TopicPartition, V
from .rebalance_events import RebalanceEvent

if sys.version_info >= (3, 11):
    from typing import TypedDict, Unpack
else:  # pragma: no cover - the floor run covers Python 3.10
    # (a generic TypedDict, too, needs typing_extensions' before Python 3.11)
    from typing_extensions import TypedDict, Unpack

Check = Literal["", "positive", "non_negative"]
Status = Literal["used", "ignored", "unsupported"]
KAFKA_PYTHONS = object()  # the default is kafka-python's own (a class of its internals)


@dataclass(frozen=True)
class Setting:
    """What a setting means: its default, a description, the check its value must pass
    (``positive`` or ``non_negative`` integer; the rest is checked in config.py), and whether
    groupclient uses it."""

    default: Any
    doc: str
    section: str
    check: Check = ""
    status: Status = "used"
    origin: Literal["kafka-python", "groupclient"] = "kafka-python"


CONNECTION, GROUP, FETCH, OFFSETS, SECURITY, OWN = (
    "Connection", "Group", "Fetching", "Offsets and commits", "Security (TLS and SASL)", "Metrics and hooks")
IGNORED, UNSUPPORTED = "Accepted and ignored (kafka-python internals)", "Not supported"

T_co = TypeVar("T_co", covariant=True)


class DeserializerObject(Protocol[T_co]):
    """kafka-python's ``Deserializer`` (``kafka.serializer.Deserializer``): an object whose
    ``deserialize(topic, headers, data)`` returns the key or value.  GroupConsumer calls it with
    the record's headers (a list of ``(key, value)`` pairs; a value may be None) and its bytes,
    never with None; ``close()``, if it has one, when the consumer closes."""

    def deserialize(self, topic: str, headers: list[tuple[str, bytes | None]], data: bytes, /) -> T_co:
        """The key or value made of ``data``."""
        ...


class TopicDeserializerObject(Protocol[T_co]):
    """kafka-python's older ``Deserializer`` form: ``deserialize(topic, data)``."""

    def deserialize(self, topic: str, data: bytes, /) -> T_co:
        """The key or value made of ``data``."""
        ...


# what key_deserializer and value_deserializer take: a callable f(bytes) or a Deserializer
# object; T_co, what it returns, is the type of the records' keys (values): K (V) of GroupConsumer[K, V]
Deserializer = Callable[[bytes], T_co] | DeserializerObject[T_co] | TopicDeserializerObject[T_co]
CommitCallback = Callable[[dict[TopicPartition, OffsetAndMetadata], Exception | None], object]


class ConsumerSettings(TypedDict, Generic[K, V], total=False):
    """The keyword settings of ``GroupConsumer`` (kafka-python's ``KafkaConsumer`` names and
    defaults), for typing a configuration: ``config: ConsumerSettings = {...}``.  K and V are
    the types ``key_deserializer`` and ``value_deserializer`` return (``bytes``, the default,
    without them): ``ConsumerSettings[str, dict[str, int]]`` types a configuration with both."""

    bootstrap_servers: Annotated[str | list[str], Setting(
        "localhost", "'host[:port]' (port 9092 when left out), or a list of them: the brokers to start "
        "from. One answering is enough: the rest of the cluster comes from its metadata.", CONNECTION)]
    client_id: Annotated[str, Setting(
        f"groupclient-{__version__}", "This client's name in every request: brokers' logs and quotas, "
        "and the CLIENT-ID column of `groupclient groups describe`.", CONNECTION)]
    client_rack: Annotated[str | None, Setting(
        None, "The rack this consumer runs in (KIP-881): rack-aware assignors give it partitions "
        "with a replica in the same rack first.", CONNECTION)]
    request_timeout_ms: Annotated[int, Setting(
        30000, "How long to wait for the answer to a request; then the connection is dropped and "
        "the request failed (retried where that is safe).", CONNECTION, "positive")]
    default_api_timeout_ms: Annotated[int, Setting(
        60000, "How long a blocking call given no timeout_ms waits, retrying, before it raises "
        "CallTimeoutError (which names each partition's last error): commit(), committed(), "
        "position(), the offset look-ups, topics(), partitions_for_topic(); close() waits the "
        "smaller of this and 30 s. Java's default.api.timeout.ms. timeout_ms=float('inf') waits "
        "until the call finishes.", CONNECTION, "positive", origin="groupclient")]
    retry_backoff_ms: Annotated[int, Setting(
        100, "Wait before sending a failed request again; looking the group coordinator up, it "
        "doubles (with 20% jitter) up to 1 s while lookups fail or find a coordinator that cannot "
        "be reached.", CONNECTION, "non_negative")]
    reconnect_backoff_ms: Annotated[int, Setting(
        50, "First wait before connecting again to a broker; it doubles (with 20% jitter) with "
        "each failed attempt.", CONNECTION, "non_negative")]
    reconnect_backoff_max_ms: Annotated[int, Setting(
        30000, "The longest wait between attempts to connect to a broker.", CONNECTION, "non_negative")]
    max_in_flight_requests_per_connection: Annotated[int, Setting(
        5, "Requests sent on one connection before their answers came.", CONNECTION, "positive")]
    connections_max_idle_ms: Annotated[int, Setting(
        540000, "Close a connection unused for this long (larger than request_timeout_ms).",
        CONNECTION, "positive")]
    metadata_max_age_ms: Annotated[int, Setting(
        300000, "Refresh the cluster's metadata at least this often, to see new partitions and "
        "topics and moved leaders.", CONNECTION, "positive")]
    bootstrap_timeout_ms: Annotated[int, Setting(
        30000, "How long the constructor waits for a bootstrap server to answer; then it raises "
        "NoBrokersAvailableError naming each server's last error (a WARNING says it after 5 s).",
        CONNECTION, "positive")]
    api_version: Annotated[tuple[int, ...] | str | None, Setting(
        None, "kafka-python's: when set, the constructor does not connect (the first poll() does). "
        "API versions are negotiated per connection either way.", CONNECTION)]
    allow_auto_create_topics: Annotated[bool, Setting(
        True, "Let this consumer's metadata requests create a subscribed topic that does not exist, "
        "where the broker allows it (auto.create.topics.enable).", CONNECTION)]
    exclude_internal_topics: Annotated[bool, Setting(
        True, "A pattern subscription never matches internal topics such as __consumer_offsets.",
        CONNECTION)]

    group_id: Annotated[str | None, Setting(
        None, "The consumer group to join. None: no group; subscribe() then consumes every "
        "partition of its topics and nothing is committed.", GROUP)]
    group_protocol: Annotated[Literal["classic", "consumer"], Setting(
        "classic", "The group protocol: 'classic' (JoinGroup/SyncGroup; a member elected leader "
        "assigns) or 'consumer' (KIP-848, Kafka 4.0+: the broker assigns, there is no group-wide "
        "barrier, a partition moves as soon as its owner gives it up). Under 'consumer', "
        "session_timeout_ms, heartbeat_interval_ms and partition_assignment_strategy are the "
        "broker's (group.consumer.*) and setting them is an error. See docs/consumer.md.", GROUP,
        origin="groupclient")]
    group_remote_assignor: Annotated[str | None, Setting(
        None, "Under group_protocol='consumer': the broker-side assignor to ask for ('uniform', "
        "'range', or another of the broker's group.consumer.assignors). None: the broker's default. "
        "Setting it under 'classic' is an error.", GROUP, origin="groupclient")]
    group_instance_id: Annotated[str | None, Setting(
        None, "Static membership (KIP-345): an id that survives restarts, so a consumer back within "
        "session_timeout_ms gets its partitions without a rebalance. One consumer per id: a second "
        "one fences the first (FatalGroupError, FENCED_INSTANCE_ID).", GROUP)]
    session_timeout_ms: Annotated[int, Setting(
        45000, "The coordinator removes a member it had no heartbeat from for this long, and gives "
        "its partitions to others. Must lie within the broker's group.min.session.timeout.ms .. "
        "group.max.session.timeout.ms (Kafka's defaults: 6000 .. 1800000).", GROUP, "positive")]
    heartbeat_interval_ms: Annotated[int, Setting(
        3000, "Time between heartbeats, sent by a background thread. Below session_timeout_ms; a "
        "third of it or less is usual (a WARNING says so above).", GROUP, "positive")]
    max_poll_interval_ms: Annotated[int, Setting(
        300000, "The longest time between two poll() calls: a member that does not poll for this long "
        "leaves the group (its partitions go to others; the next poll() joins again). It is also the "
        "rebalance timeout the coordinator waits for members to rejoin.", GROUP, "positive")]
    partition_assignment_strategy: Annotated[Sequence[str | PartitionAssignor | type], Setting(
        ("range", "roundrobin"), "The assignors this member supports, preferred first: names "
        "('range', 'roundrobin', 'sticky', 'cooperative-sticky', or one published under the "
        "groupclient.assignors entry point), PartitionAssignor classes or instances, or kafka-python "
        "assignor classes (mapped by name).", GROUP)]

    fetch_min_bytes: Annotated[int, Setting(
        1, "The broker answers a fetch when it has this many bytes, or after fetch_max_wait_ms.",
        FETCH, "non_negative")]
    fetch_max_wait_ms: Annotated[int, Setting(
        500, "The longest the broker holds a fetch waiting for fetch_min_bytes.", FETCH, "non_negative")]
    fetch_max_bytes: Annotated[int, Setting(
        52428800, "Most bytes in one fetch answer (a first batch larger than this still comes, so "
        "the consumer cannot get stuck).", FETCH, "positive")]
    max_partition_fetch_bytes: Annotated[int, Setting(
        1048576, "Most bytes per partition in one fetch answer (the same exception).", FETCH, "positive")]
    max_poll_records: Annotated[int, Setting(
        500, "Most records one poll() returns.", FETCH, "positive")]
    isolation_level: Annotated[str | int, Setting(
        "read_uncommitted", "'read_committed': skip records of aborted transactions and stop at open "
        "ones; 'read_uncommitted': read everything. Also kafka-python's IsolationLevel or 0/1.", FETCH)]
    check_crcs: Annotated[bool, Setting(
        True, "Check each record batch's CRC-32C; a mismatch raises CORRUPT_MESSAGE naming the "
        "partition and offset.", FETCH)]
    key_deserializer: Annotated[Deserializer[K] | None, Setting(
        None, "Turns a record's key bytes into its key: a callable f(bytes), or a kafka-python "
        "Deserializer; what it returns is the records' key type (K of GroupConsumer[K, V]). Not called "
        "for a missing key. A failure raises RecordDeserializationError (seek past the record to "
        "skip it).", FETCH)]
    value_deserializer: Annotated[Deserializer[V] | None, Setting(
        None, "The same for the value.", FETCH)]
    consumer_timeout_ms: Annotated[float, Setting(
        math.inf, "Iteration (for record in consumer) stops after this long without a record. "
        "poll() is not affected.", FETCH)]

    auto_offset_reset: Annotated[Literal["earliest", "latest", "none", "smallest", "largest"], Setting(
        "latest", "Where to start in a partition with no committed offset, or one out of range: "
        "'earliest', 'latest', or 'none' (raise NoOffsetForPartitionError).", OFFSETS)]
    enable_auto_commit: Annotated[bool, Setting(
        True, "Commit the positions of the records poll() returned: every auto_commit_interval_ms "
        "from poll(), before giving partitions up in a rebalance, and in close().", OFFSETS)]
    auto_commit_interval_ms: Annotated[int, Setting(
        5000, "Time between automatic commits.", OFFSETS, "positive")]
    default_offset_commit_callback: Annotated[CommitCallback | None, Setting(
        None, "Called as f(offsets, exception or None) after a commit_async() given no callback, "
        "on the thread that owns the consumer.", OFFSETS)]

    security_protocol: Annotated[Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"], Setting(
        "PLAINTEXT", "How to talk to brokers: plain, TLS, SASL, or SASL over TLS.", SECURITY)]
    ssl_context: Annotated[ssl.SSLContext | None, Setting(
        None, "A ready TLS context; the other ssl_ settings must then be left out.", SECURITY)]
    ssl_check_hostname: Annotated[bool, Setting(
        True, "The broker's certificate must name the host (or IP) it was reached at.", SECURITY)]
    ssl_cafile: Annotated[str | None, Setting(
        None, "CA certificates (PEM) to verify brokers with; else the system's.", SECURITY)]
    ssl_certfile: Annotated[str | None, Setting(
        None, "This client's certificate chain (PEM), for brokers that want one.", SECURITY)]
    ssl_keyfile: Annotated[str | None, Setting(
        None, "Its private key, unless in ssl_certfile.", SECURITY)]
    ssl_password: Annotated[str | None, Setting(
        None, "The password of ssl_keyfile.", SECURITY)]
    ssl_crlfile: Annotated[str | None, Setting(
        None, "Certificate revocation lists (PEM) to check brokers' certificates against.", SECURITY)]
    ssl_ciphers: Annotated[str | None, Setting(
        None, "OpenSSL cipher list (TLS 1.2 at least either way).", SECURITY)]
    sasl_mechanism: Annotated[Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None, Setting(
        None, "The SASL mechanism, with SASL_PLAINTEXT or SASL_SSL.", SECURITY)]
    sasl_plain_username: Annotated[str | None, Setting(
        None, "The SASL user name.", SECURITY)]
    sasl_plain_password: Annotated[str | None, Setting(
        None, "Its password (never in a repr or a log line).", SECURITY)]

    metrics_enabled: Annotated[bool, Setting(
        True, "Keep the counters metrics() returns.", OWN)]
    interceptors: Annotated[Sequence[Any], Setting(
        (), "Objects with any of on_consume(records) -> records, on_commit(offsets), close() "
        "(Java's ConsumerInterceptor), called in order on the owner's thread.", OWN, origin="groupclient")]
    rebalance_event_callback: Annotated[Callable[[RebalanceEvent], object] | None, Setting(
        None, "Called with a RebalanceEvent after every rebalance of this member (what was revoked, "
        "assigned and lost, why, how long it took), on the owner's thread.", OWN, origin="groupclient")]

    tracer_provider: Annotated[Any, Setting(
        None, "The OpenTelemetry TracerProvider for this consumer's spans (None: the global one); "
        "needs groupclient[otel], see docs/observability.md.", OWN, origin="groupclient")]
    meter_provider: Annotated[Any, Setting(
        None, "The OpenTelemetry MeterProvider for this consumer's metrics (None: the global one); "
        "needs groupclient[otel], see docs/observability.md.", OWN, origin="groupclient")]

    client_dns_lookup: Annotated[str, Setting(KAFKA_PYTHONS, "", IGNORED, status="ignored")]
    enable_incremental_fetch_sessions: Annotated[bool, Setting(KAFKA_PYTHONS, "", IGNORED, status="ignored")]
    kafka_client: Annotated[object, Setting(KAFKA_PYTHONS, "", IGNORED, status="ignored")]
    metric_group_prefix: Annotated[str, Setting(KAFKA_PYTHONS, "", IGNORED, status="ignored")]
    metric_reporters: Annotated[list[object], Setting(KAFKA_PYTHONS, "", IGNORED, status="ignored")]
    metrics_num_samples: Annotated[int, Setting(KAFKA_PYTHONS, "", IGNORED, status="ignored")]
    metrics_sample_window_ms: Annotated[int, Setting(KAFKA_PYTHONS, "", IGNORED, status="ignored")]
    receive_buffer_bytes: Annotated[int | None, Setting(KAFKA_PYTHONS, "", IGNORED, status="ignored")]
    receive_message_max_bytes: Annotated[int, Setting(KAFKA_PYTHONS, "", IGNORED, status="ignored")]
    selector: Annotated[object, Setting(KAFKA_PYTHONS, "", IGNORED, status="ignored")]
    send_buffer_bytes: Annotated[int | None, Setting(KAFKA_PYTHONS, "", IGNORED, status="ignored")]
    socket_options: Annotated[list[tuple[int, int, int]], Setting(KAFKA_PYTHONS, "", IGNORED, status="ignored")]

    sasl_kerberos_name: Annotated[None, Setting(None, "Kerberos (GSSAPI).", UNSUPPORTED, status="unsupported")]
    sasl_kerberos_service_name: Annotated[Literal["kafka"], Setting(
        "kafka", "Kerberos (GSSAPI).", UNSUPPORTED, status="unsupported")]
    sasl_kerberos_domain_name: Annotated[None, Setting(None, "Kerberos (GSSAPI).", UNSUPPORTED, status="unsupported")]
    sasl_oauth_token_provider: Annotated[None, Setting(None, "OAUTHBEARER.", UNSUPPORTED, status="unsupported")]
    proxy_url: Annotated[None, Setting(None, "Proxies.", UNSUPPORTED, status="unsupported")]
    socks5_proxy: Annotated[None, Setting(None, "Proxies.", UNSUPPORTED, status="unsupported")]


@dataclass(frozen=True)
class DeclaredSetting:
    """One key of :class:`ConsumerSettings`: its name, its type as written, and its Setting."""

    name: str
    type_text: str
    setting: Setting


@functools.cache
def declared() -> tuple[DeclaredSetting, ...]:
    """Every setting, in the order of the declaration."""
    hints = get_type_hints(ConsumerSettings, include_extras=True)
    result = []
    for name, raw in ConsumerSettings.__annotations__.items():
        text = getattr(raw, "__forward_arg__", raw)  # a string, or a ForwardRef of one (Python 3.10)
        annotated = ast.parse(str(text), mode="eval").body
        assert isinstance(annotated, ast.Subscript) and isinstance(annotated.slice, ast.Tuple)
        setting = hints[name].__metadata__[0]
        assert isinstance(setting, Setting), name
        result.append(DeclaredSetting(name, ast.unparse(annotated.slice.elts[0]), setting))
    return tuple(result)


def used_defaults() -> dict[str, Any]:
    """The settings groupclient uses, with their defaults."""
    return {d.name: d.setting.default for d in declared() if d.setting.status == "used"}


def names(status: Status) -> dict[str, Any]:
    """The settings of one status, with their defaults."""
    return {d.name: d.setting.default for d in declared() if d.setting.status == status}


def _default_text(d: DeclaredSetting) -> str:
    default = d.setting.default
    if default is KAFKA_PYTHONS:
        return "kafka-python's"
    if isinstance(default, tuple):
        return repr(list(default))
    return "unbounded" if default == math.inf else repr(default)


def docstring_section() -> str:
    """The settings part of ``GroupConsumer``'s docstring, as kafka-python's class documents them."""
    lines = ["Keyword arguments: kafka-python's names and defaults. A misspelt or unknown name raises",
             "ConfigurationError with the nearest real one; ConsumerSettings types a configuration."]
    section = ""
    for d in declared():
        s = d.setting
        if s.section != section:
            section = s.section
            lines += ["", f"{section}:"]
            if s.status == "ignored":
                lines += _wrap(", ".join(sorted(x.name for x in declared() if x.setting.status == "ignored")) + ".")
            if s.status == "unsupported":
                lines += _wrap(", ".join(x.name for x in declared() if x.setting.status == "unsupported")
                               + ": Kerberos, OAUTHBEARER and proxies; setting one raises ConfigurationError.")
        if s.status != "used":
            continue
        own = " (groupclient's own)" if s.origin == "groupclient" else ""
        lines.append(f"    {d.name} ({d.type_text}, default {_default_text(d)}){own}:")
        lines += _wrap(s.doc, indent="        ")
    return "\n".join(lines)


def _wrap(text: str, width: int = 100, indent: str = "    ") -> list[str]:
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent)


def markdown_table() -> str:
    """docs/consumer.md's settings table."""

    def row(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    rows = [row(["setting", "type", "default", "meaning"]), "| --- | --- | --- | --- |"]
    for d in declared():
        s = d.setting
        if s.status == "used":
            own = " (groupclient's own)" if s.origin == "groupclient" else ""
            rows.append(row([f"`{d.name}`", f"`{d.type_text}`", f"`{_default_text(d)}`", s.doc + own]))
    ignored = ", ".join(f"`{d.name}`" for d in declared() if d.setting.status == "ignored")
    unsupported = ", ".join(f"`{d.name}`" for d in declared() if d.setting.status == "unsupported")
    return "\n".join([*rows, "", f"Accepted and ignored (kafka-python internals): {ignored}.", "",
                      f"Not supported (setting one to anything but its default raises ConfigurationError): "
                      f"{unsupported}."])


__all__ = ["ConsumerSettings", "Deserializer", "DeserializerObject", "Setting", "TopicDeserializerObject", "Unpack",
           "declared", "docstring_section", "markdown_table"]

if __name__ == "__main__":
    print(markdown_table())
