"""A light load generator: many group members over raw Kafka wire, joining then heartbeating.

Each member does what a consumer's coordinator client does, without fetching: under the classic
protocol JoinGroup with the member-id round trip, SyncGroup, Heartbeat every interval, rejoin on
REBALANCE_IN_PROGRESS; under the consumer protocol (KIP-848) a ConsumerGroupHeartbeat join, then a
heartbeat every interval the coordinator says, stating the partitions it was given (so it
acknowledges at once), and a join again when fenced.
"""

from __future__ import annotations

import asyncio
import random
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.protocol.consumer.group import (
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, SyncGroupRequest,
    SyncGroupResponse,
)

from groupclient.protocol.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, new_member_id,
)

MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS = 79, 27
UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH = 25, 110


@dataclass
class LoadStats:
    stable: int = 0
    heartbeats: int = 0
    rejoins: int = 0
    errors: dict[int, int] = field(default_factory=dict)


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.correlation = reader, writer, 0

    async def call(self, req: Any, response_cls: Any) -> Any:
        self.correlation += 1
        req.with_header(correlation_id=self.correlation, client_id="load")
        self.writer.write(bytes(req.encode(header=True, framed=True)))
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        return response_cls.decode(await self.reader.readexactly(size), version=req.version, header=True)


async def member(host: str, port: int, group: str, stats: LoadStats, stop: asyncio.Event,
                 session_ms: int, interval_ms: int) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    conn = Connection(reader, writer)
    member_id = ""
    subscription = bytes(ConsumerProtocolSubscription(version=0, topics=["load"], user_data=None).encode())
    empty = bytes(ConsumerProtocolAssignment(version=0, assigned_partitions=[], user_data=None).encode())
    protocols = [JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription)]
    try:
        while not stop.is_set():
            join = await conn.call(JoinGroupRequest(
                version=5, group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=session_ms,
                member_id=member_id, group_instance_id=None, protocol_type="consumer", protocols=protocols),
                JoinGroupResponse)
            if join.error_code == MEMBER_ID_REQUIRED:
                member_id = join.member_id
                continue
            if join.error_code:
                stats.errors[join.error_code] = stats.errors.get(join.error_code, 0) + 1
                await asyncio.sleep(0.1)
                continue
            member_id = join.member_id
            assignments = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m.member_id, assignment=empty)
                           for m in join.members]
            sync = await conn.call(SyncGroupRequest(
                version=3, group_id=group, generation_id=join.generation_id, member_id=member_id,
                group_instance_id=None, assignments=assignments), SyncGroupResponse)
            if sync.error_code:
                stats.errors[sync.error_code] = stats.errors.get(sync.error_code, 0) + 1
                stats.rejoins += 1
                continue
            stats.stable += 1
            while not stop.is_set():
                try:
                    await asyncio.wait_for(stop.wait(), interval_ms / 1000)
                except asyncio.TimeoutError:
                    pass
                if stop.is_set():
                    break
                hb = await conn.call(HeartbeatRequest(version=3, group_id=group, generation_id=join.generation_id,
                                                      member_id=member_id, group_instance_id=None),
                                     HeartbeatResponse)
                stats.heartbeats += 1
                if hb.error_code:
                    stats.rejoins += 1
                    break
            stats.stable -= 1
    finally:
        writer.close()


async def consumer_member(host: str, port: int, group: str, stats: LoadStats, stop: asyncio.Event,
                          rng: random.Random) -> None:
    """A KIP-848 member: joins, then heartbeats at the interval it is told, owning what it got."""
    reader, writer = await asyncio.open_connection(host, port)
    conn = Connection(reader, writer)
    member_id, epoch, owned, interval_s, counted = new_member_id(rng), 0, [], 1.0, False
    R = ConsumerGroupHeartbeatRequest
    try:
        while not stop.is_set():
            joining = epoch == 0
            answer = await conn.call(R(
                version=1, group_id=group, member_id=member_id, member_epoch=epoch, instance_id=None, rack_id=None,
                rebalance_timeout_ms=30_000 if joining else -1, subscribed_topic_names=["load"] if joining else None,
                subscribed_topic_regex=None, server_assignor=None,
                topic_partitions=[] if joining else [R.TopicPartitions(topic_id=t.topic_id, partitions=t.partitions)
                                                     for t in owned]), ConsumerGroupHeartbeatResponse)
            if answer.error_code:
                stats.errors[answer.error_code] = stats.errors.get(answer.error_code, 0) + 1
                if answer.error_code in (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH):
                    epoch, owned = 0, []
                    stats.rejoins += 1
            else:
                epoch = answer.member_epoch
                interval_s = answer.heartbeat_interval_ms / 1000
                if answer.assignment is not None:
                    owned = list(answer.assignment.topic_partitions)
                if not joining:
                    stats.heartbeats += 1
                if not counted:
                    stats.stable += 1
                    counted = True
            try:
                await asyncio.wait_for(stop.wait(), interval_s)
            except asyncio.TimeoutError:
                pass
    finally:
        writer.close()


async def run_load(bootstrap: str, groups: int, members_per_group: int, settle_s: float, measure_s: float,
                   on_measure_start: Any, session_ms: int = 10000, interval_ms: int = 1000,
                   protocol: str = "classic") -> LoadStats:
    """``protocol``: "classic" (JoinGroup/SyncGroup/Heartbeat every ``interval_ms``) or "consumer"
    (ConsumerGroupHeartbeat at the coordinator's interval; subscribed to topic "load")."""
    host, port = bootstrap.rsplit(":", 1)
    stats = LoadStats()
    stop = asyncio.Event()
    rng = random.Random(848)
    tasks = [asyncio.create_task(
        member(host, int(port), f"load-{g}", stats, stop, session_ms, interval_ms) if protocol == "classic"
        else consumer_member(host, int(port), f"load-{g}", stats, stop, rng))
        for g in range(groups) for _ in range(members_per_group)]
    total = groups * members_per_group
    deadline = time.monotonic() + settle_s
    while stats.stable < total and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    await asyncio.sleep(2 * interval_ms / 1000)  # let the last rebalances settle
    stats.heartbeats = 0
    token = on_measure_start()
    await asyncio.sleep(measure_s)
    stats_at_end = LoadStats(stats.stable, stats.heartbeats, stats.rejoins, dict(stats.errors))
    on_measure_start(token)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    return stats_at_end
