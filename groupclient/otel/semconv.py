"""Every name groupclient's telemetry uses, in one place.

Where OpenTelemetry's semantic conventions define a name (messaging, semconv 1.27 and later:
``opentelemetry.semconv._incubating``), it is that name; tests/unit/test_otel_names.py checks each
against the ``opentelemetry-semantic-conventions`` package.  What the conventions do not define
(lag, rebalances, heartbeats, the coordinator's side) is named under ``groupclient.`` as they ask
of instrumentation-specific names.  docs/observability.md lists them all.
"""

from __future__ import annotations

INSTRUMENTATION_SCOPE = "groupclient"

# -- attributes the conventions define -----------------------------------------------------------
MESSAGING_SYSTEM = "messaging.system"
KAFKA = "kafka"
MESSAGING_OPERATION_NAME = "messaging.operation.name"
MESSAGING_OPERATION_TYPE = "messaging.operation.type"
MESSAGING_CONSUMER_GROUP_NAME = "messaging.consumer.group.name"
MESSAGING_CLIENT_ID = "messaging.client.id"
MESSAGING_DESTINATION_NAME = "messaging.destination.name"
MESSAGING_DESTINATION_PARTITION_ID = "messaging.destination.partition.id"
MESSAGING_KAFKA_OFFSET = "messaging.kafka.offset"
MESSAGING_KAFKA_MESSAGE_KEY = "messaging.kafka.message.key"
MESSAGING_KAFKA_MESSAGE_TOMBSTONE = "messaging.kafka.message.tombstone"
MESSAGING_MESSAGE_BODY_SIZE = "messaging.message.body.size"
MESSAGING_BATCH_MESSAGE_COUNT = "messaging.batch.message_count"
ERROR_TYPE = "error.type"

# operation names (Kafka's, as the conventions' examples give them) and types
POLL, PROCESS, COMMIT = "poll", "process", "commit"
RECEIVE, SETTLE = "receive", "settle"  # PROCESS is also the type of a process span

# -- metrics the conventions define ---------------------------------------------------------------
MESSAGING_CLIENT_CONSUMED_MESSAGES = "messaging.client.consumed.messages"
MESSAGING_CLIENT_OPERATION_DURATION = "messaging.client.operation.duration"
MESSAGING_PROCESS_DURATION = "messaging.process.duration"
# the conventions' advice for messaging durations (seconds)
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)

# -- groupclient's own (no convention covers them) ------------------------------------------------
REBALANCE_REASON = "groupclient.rebalance.reason"
REBALANCE_PROTOCOL = "groupclient.rebalance.protocol"  # eager, cooperative, consumer (KIP-848)
REBALANCE_ASSIGNOR = "groupclient.rebalance.assignor"
REBALANCE_GENERATION = "groupclient.rebalance.generation"
REBALANCE_REVOKED = "groupclient.rebalance.revoked_count"
REBALANCE_LOST = "groupclient.rebalance.lost_count"
REBALANCE_ASSIGNED = "groupclient.rebalance.assigned_count"
REBALANCE_OWNED = "groupclient.rebalance.owned_count"
MEMBER_ID = "groupclient.member.id"
KAFKA_API = "groupclient.kafka.api"  # a request's API name: "Fetch", "Heartbeat", ...

CONSUMED_BYTES = "groupclient.consumer.consumed.bytes"
FETCH_DURATION = "groupclient.consumer.fetch.duration"
HEARTBEAT_DURATION = "groupclient.consumer.heartbeat.duration"
REBALANCE_DURATION = "groupclient.consumer.rebalance.duration"
ASSIGNED_PARTITIONS = "groupclient.consumer.assigned_partitions"
RECORDS_LAG = "groupclient.consumer.lag"
TIME_LAG = "groupclient.consumer.time_lag"

COORDINATOR_REQUESTS = "groupclient.coordinator.requests"
COORDINATOR_REQUEST_DURATION = "groupclient.coordinator.request.duration"
COORDINATOR_GROUPS = "groupclient.coordinator.groups"
COORDINATOR_MEMBERS = "groupclient.coordinator.members"
COORDINATOR_REBALANCES = "groupclient.coordinator.rebalances"
GROUP_STATE = "groupclient.group.state"
GROUP_PROTOCOL = "groupclient.group.protocol"  # classic, consumer

# the Spark integration (groupclient.spark): a member's or reader's task, on every span and
# measurement of its consumer (low cardinality: no task attempt id, which is new for each run), and
# the report of a member task on its ``spark member {group}`` span
SPARK_PARTITION_ID = "groupclient.spark.partition_id"  # the task's partition index in its stage
SPARK_ATTEMPT = "groupclient.spark.attempt"  # the task's attempt number (0 first)
SPARK_STAGE_ID = "groupclient.spark.stage_id"
SPARK_RECORDS = "groupclient.spark.records"
SPARK_BATCHES = "groupclient.spark.batches"
SPARK_COMMITS = "groupclient.spark.commits"
SPARK_FAILED_COMMITS = "groupclient.spark.failed_commits"
SPARK_REBALANCES = "groupclient.spark.rebalances"
SPARK_WAITED_MS = "groupclient.spark.waited_ms"
SPARK_OUTCOME = "groupclient.spark.outcome"  # the member's stop reason, or "error"

# span names: "{operation} {destination}" (the conventions' form) and groupclient's own
REBALANCE_SPAN = "rebalance"
