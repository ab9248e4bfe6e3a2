"""Coordinator settings, named after the Kafka broker settings they mirror."""

from __future__ import annotations

from dataclasses import dataclass

from .consumer_group.assignors import SERVER_ASSIGNORS
from .security import PLAINTEXT, ListenerSecurity


@dataclass(frozen=True)
class CoordinatorConfig:
    """The coordinator's settings, checked when made (ValueError names the one that is wrong)."""

    group_initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    group_min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    group_max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    group_max_size: int = 2**31 - 1  # group.max.size
    # how long a brand-new member may wait in a rebalance before it is dropped (Kafka's constant)
    new_member_join_timeout_ms: int = 300_000
    offsets_topic_partitions: int = 50  # offsets.topic.num.partitions
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
    auto_create_topics: bool = True  # auto.create.topics.enable
    default_partitions: int = 1  # num.partitions
    max_request_bytes: int = 100 * 1024 * 1024  # socket.request.max.bytes
    max_message_bytes: int = 1_048_588  # message.max.bytes
    # bytes of requests being read and handled at once, over every connection of the process: a
    # connection whose next request does not fit waits before reading it (Kafka's default is no
    # limit; one request more than what is left is still let in, so the peak stays below this
    # plus max_request_bytes)
    queued_max_request_bytes: int = 100 * 1024 * 1024  # queued.max.request.bytes
    fsync: bool = False  # fsync each append (a process crash loses nothing either way)
    # offsets of an Empty group expire this long after it became Empty (KIP-211); offsets of a
    # group without a protocol type (simple commits) this long after their commit
    offsets_retention_minutes: int = 10_080  # offsets.retention.minutes (7 days)
    # how often expired offsets are removed and Empty groups without offsets deleted
    offsets_retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms
    connections_max_idle_ms: int = 600_000  # connections.max.idle.ms
    # a connection over either limit is closed at once (Kafka holds back max.connections instead)
    max_connections: int = 1000  # max.connections (per node)
    max_connections_per_ip: int = 1000  # max.connections.per.ip (per node)
    # partitions one CreateTopics (or one Metadata request's auto-creation) may create: Kafka's
    # controller refuses more than 10,000 per request (MAX_PARTITIONS_PER_BATCH)
    max_partitions_per_request: int = 10_000
    # partitions in the whole cluster: every one lives in this process's memory (Kafka has no
    # such limit; its partitions are spread over brokers and disks)
    max_partitions: int = 100_000
    # descriptors the partition journals of a data dir hold at once (the least recently
    # appended-to is closed), so the number of partitions never exhausts the process's fds
    max_open_log_files: int = 128
    # what every listener requires of clients: TLS, SASL, both or neither (security.py)
    security: ListenerSecurity = PLAINTEXT
    # a failed authentication is answered this much later, then the connection closed
    connection_failed_authentication_delay_ms: int = 100  # connection.failed.authentication.delay.ms
    # the group protocols served: without "consumer", ApiVersions lists neither ConsumerGroupHeartbeat
    # nor ConsumerGroupDescribe and KIP-848 clients are told the cluster lacks the protocol
    group_coordinator_rebalance_protocols: tuple[str, ...] = ("classic", "consumer")  # group.coordinator.rebalance.protocols
    # the consumer group protocol (KIP-848): what the coordinator tells members, and its bounds
    group_consumer_heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    group_consumer_min_heartbeat_interval_ms: int = 5000  # group.consumer.min.heartbeat.interval.ms
    group_consumer_max_heartbeat_interval_ms: int = 15000  # group.consumer.max.heartbeat.interval.ms
    group_consumer_session_timeout_ms: int = 45000  # group.consumer.session.timeout.ms
    group_consumer_min_session_timeout_ms: int = 45000  # group.consumer.min.session.timeout.ms
    group_consumer_max_session_timeout_ms: int = 60000  # group.consumer.max.session.timeout.ms
    # the server-side assignors served; the first is the default (every one of the table, its first first)
    group_consumer_assignors: tuple[str, ...] = tuple(SERVER_ASSIGNORS)  # group.consumer.assignors
    group_consumer_max_size: int = 2**31 - 1  # group.consumer.max.size
    # KIP-1263 (Kafka 4.3): a new target assignment is computed at most once per interval, by the
    # first heartbeat after it; 0 computes it at every change, as Kafka 4.1 did
    group_consumer_assignment_interval_ms: int = 1000  # group.consumer.assignment.interval.ms
    group_consumer_min_assignment_interval_ms: int = 0  # group.consumer.min.assignment.interval.ms
    group_consumer_max_assignment_interval_ms: int = 15000  # group.consumer.max.assignment.interval.ms

    def __post_init__(self) -> None:
        if self.offsets_topic_partitions < 1:
            raise ValueError("offsets_topic_partitions must be at least 1")
        if self.group_initial_rebalance_delay_ms < 0:
            raise ValueError("group_initial_rebalance_delay_ms must not be negative")
        if not 0 < self.group_min_session_timeout_ms <= self.group_max_session_timeout_ms:
            raise ValueError("need 0 < group_min_session_timeout_ms <= group_max_session_timeout_ms")
        if self.group_max_size < 1:
            raise ValueError("group_max_size must be at least 1")
        self._check_consumer_protocol()
        if not isinstance(self.security, ListenerSecurity):
            raise ValueError("security must be a ListenerSecurity")
        if self.connection_failed_authentication_delay_ms < 0:
            raise ValueError("connection_failed_authentication_delay_ms must not be negative")
        for name in ("offsets_retention_minutes", "offsets_retention_check_interval_ms",
                     "connections_max_idle_ms", "max_connections", "queued_max_request_bytes", "max_connections_per_ip",
                     "max_partitions_per_request", "max_partitions", "max_open_log_files"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")

    def _check_consumer_protocol(self) -> None:
        """Kafka's GroupCoordinatorConfig checks: each value within its bounds, the bounds ordered."""
        protocols = set(self.group_coordinator_rebalance_protocols)
        if not protocols <= {"classic", "consumer"} or "classic" not in protocols:
            raise ValueError("group_coordinator_rebalance_protocols must hold 'classic', and may hold 'consumer'; got "
                             f"{list(self.group_coordinator_rebalance_protocols)}")
        for what in ("heartbeat_interval", "session_timeout"):
            low, value, high = (getattr(self, f"group_consumer_{bound}{what}_ms") for bound in ("min_", "", "max_"))
            if not 0 < low <= value <= high:
                raise ValueError(f"need 0 < group_consumer_min_{what}_ms ({low}) <= group_consumer_{what}_ms ({value}) "
                                 f"<= group_consumer_max_{what}_ms ({high})")
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            raise ValueError("group_consumer_heartbeat_interval_ms must be below group_consumer_session_timeout_ms")
        known = set(SERVER_ASSIGNORS)  # read at each check: the table is the one list of them
        if not self.group_consumer_assignors or not set(self.group_consumer_assignors) <= known:
            raise ValueError(f"group_consumer_assignors must name some of {sorted(known)}; got "
                             f"{list(self.group_consumer_assignors)}")
        if self.group_consumer_max_size < 1:
            raise ValueError("group_consumer_max_size must be at least 1")
        low, value, high = (getattr(self, f"group_consumer_{bound}assignment_interval_ms")
                            for bound in ("min_", "", "max_"))
        if not 0 <= low <= value <= high:
            raise ValueError(f"need 0 <= group_consumer_min_assignment_interval_ms ({low}) <= "
                             f"group_consumer_assignment_interval_ms ({value}) <= "
                             f"group_consumer_max_assignment_interval_ms ({high})")

    @property
    def serves_consumer_protocol(self) -> bool:
        """Whether KIP-848's consumer group protocol is served."""
        return "consumer" in self.group_coordinator_rebalance_protocols
