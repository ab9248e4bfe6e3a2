"""Metadata (3): live nodes, topics (asked by name, or by id from v12) and partition leaders;
auto-creates topics if allowed."""

from __future__ import annotations

import logging
from typing import Any

from kafka.protocol.metadata.metadata import MetadataResponse

from ...error_codes import ErrorCode
from ..storage.topic_log import validate_topic_name
from .context import Handler, RequestContext

Broker = MetadataResponse.MetadataResponseBroker
TopicMeta = MetadataResponse.MetadataResponseTopic
PartitionMeta = TopicMeta.MetadataResponsePartition
log = logging.getLogger("groupclient.coordinator.node")


def _topic(ctx: RequestContext, name: str, error: ErrorCode = ErrorCode.NONE) -> Any:
    topic = ctx.core.topics.topics.get(name)
    if topic is None or error:
        return TopicMeta(error_code=int(error), name=name, is_internal=False, partitions=[],
                         authorized_operations=None)
    partitions = []
    for index in range(len(topic.partitions)):
        leader = ctx.core.partition_leader(index)
        replicas = [leader] if leader is not None else []
        partitions.append(PartitionMeta(
            error_code=0 if leader is not None else int(ErrorCode.LEADER_NOT_AVAILABLE),
            partition_index=index, leader_id=leader if leader is not None else -1,
            leader_epoch=-1, replica_nodes=replicas, isr_nodes=replicas, offline_replicas=[]))
    return TopicMeta(error_code=0, name=name, topic_id=topic.topic_id, is_internal=False,
                     partitions=partitions, authorized_operations=None)


async def handle(ctx: RequestContext, req: Any) -> Any:
    version = ctx.api_version
    core = ctx.core
    unknown_ids: list[Any] = []
    if req.topics is None or (version == 0 and not req.topics):
        names = sorted(core.topics.topics)
    elif version >= 12 and any(t.topic_id is not None and t.topic_id.int for t in req.topics):
        # v12 asks by topic id (as a KIP-848 member does, to name the topics of its assignment);
        # Kafka then answers the known ids by name and the rest UNKNOWN_TOPIC_ID, creating nothing
        known = [(t.topic_id, core.topics.name_of(t.topic_id)) for t in req.topics
                 if t.topic_id is not None and t.topic_id.int]
        names = sorted({name for _, name in known if name is not None})
        unknown_ids = [TopicMeta(error_code=int(ErrorCode.UNKNOWN_TOPIC_ID), name=None, topic_id=topic_id,
                                 is_internal=False, partitions=[], authorized_operations=None)
                       for topic_id, name in known if name is None]
    else:
        names = [t.name for t in req.topics]
    auto_create = (core.config.auto_create_topics and (version < 4 or req.allow_auto_topic_creation)
                   and not unknown_ids and not (version >= 12 and req.topics and req.topics[0].name is None))
    if auto_create:
        wanted = {n for n in names if n is not None and n not in core.topics.topics and not validate_topic_name(n)}
        partitions = len(wanted) * core.config.default_partitions
        if (partitions > core.config.max_partitions_per_request
                or core.topics.partition_count + partitions > core.config.max_partitions):
            # Kafka's controller refuses such a creation and the broker answers as if it were
            # still under way: UNKNOWN_TOPIC_OR_PARTITION for each topic
            log.warning("node %d: not auto-creating %d topics (%d partitions; max_partitions_per_request=%d, "
                        "max_partitions=%d, %d exist)", ctx.node.node_id, len(wanted), partitions,
                        core.config.max_partitions_per_request, core.config.max_partitions,
                        core.topics.partition_count)
            auto_create = False
    topics = []
    for name in names:
        if name in core.topics.topics:
            topics.append(_topic(ctx, name))
        elif name is None or validate_topic_name(name):
            topics.append(_topic(ctx, name or "", ErrorCode.INVALID_TOPIC_EXCEPTION))
        elif auto_create:
            core.topics.create(name, core.config.default_partitions)
            # as Kafka 4.1 (KRaft creates it on the side): the request that creates it does not
            # see it yet, and the client asks again
            topics.append(_topic(ctx, name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        else:
            topics.append(_topic(ctx, name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    topics += unknown_ids
    brokers = [Broker(node_id=n.node_id, host=n.host, port=n.port, rack=None) for n in core.live_nodes()]
    return MetadataResponse(
        version=version, throttle_time_ms=0, brokers=brokers, cluster_id=core.cluster_id,
        controller_id=core.controller_id(), topics=topics,
        authorized_operations=None, error_code=0,
    )


def error_response(req: Any, error: ErrorCode) -> Any:
    topics = [TopicMeta(error_code=int(error), name=t.name, is_internal=False, partitions=[],
                        authorized_operations=None) for t in (req.topics or [])]
    return MetadataResponse(version=req.version, throttle_time_ms=0, brokers=[], cluster_id=None,
                            controller_id=-1, topics=topics, authorized_operations=None,
                            error_code=int(error))


HANDLER = Handler(handle, error_response)
