"""Consumer-group admin operations: list, describe (members, committed offsets, lag).

Each request is sent at the highest version both sides support (the connection negotiates
ApiVersions), and built for that version: ListGroups has group states from v4 and types from
v5; OffsetFetch asks for all of a group's partitions from v2 and batches groups from v8.

A group is classic (DescribeGroups describes it) or consumer-protocol (KIP-848:
ConsumerGroupDescribe, see :mod:`.consumer_groups`); each API answers "not found" for a group of
the other kind, so describing asks the kind last seen for the group first, then the other.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

from kafka.protocol.admin.groups import (
    DescribeGroupsRequest, DescribeGroupsResponse, ListGroupsRequest, ListGroupsResponse,
)
from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from ..structs import TopicPartition

from ..clock import Timer
from ..protocol.consumer_protocol import PROTOCOL_TYPE, decode_assignment
from ..error_codes import ErrorCode
from ..protocol.apis import ApiKey
from .client import AdminConnection, AdminError, GroupNotFoundError, check
from .consumer_groups import describe_consumer_group
from .model import CLASSIC, CONSUMER, SHARE, Coordinator, GroupDescription, ListedGroup, Member, PartitionLag
from .share_groups import describe_share_group, share_group_offsets
from .time_lag import time_lags

LATEST, EARLIEST = -1, -2  # ListOffsets: the log end offset, the log start offset
READ_UNCOMMITTED = 0
LIST_OFFSETS_ATTEMPTS = 3  # then a partition whose leader keeps refusing shows no end offset


class GroupAdmin:
    """List and describe the groups of one cluster over an :class:`AdminConnection`."""

    def __init__(self, conn: AdminConnection) -> None:
        self.conn = conn
        # the kind each group was last described as: asked first next time (``groups watch``
        # describes a consumer group every interval, with one request rather than two)
        self._kinds: dict[str, str] = {}

    # -- list ----------------------------------------------------------------------------
    def list_groups(self, timer: Timer) -> tuple[list[ListedGroup], list[str]]:
        """ListGroups from every broker, merged; and one line per broker that failed."""
        listed: list[ListedGroup] = []
        errors: list[str] = []
        for node_id in sorted(self.conn.brokers(timer)):
            try:
                listed += self.conn.retrying(f"ListGroups from node {node_id}", timer,
                                             partial(self._list_on, node_id, timer))
            except AdminError as exc:
                errors.append(f"node {node_id}: {exc}")
        listed.sort(key=lambda g: (g.group_id, g.coordinator))
        return listed, errors

    def _list_on(self, node_id: int, timer: Timer) -> list[ListedGroup]:
        def build(version: int) -> Any:
            return ListGroupsRequest(version=version, states_filter=[], types_filter=[])

        response = self.conn.request(node_id, ListGroupsRequest, ListGroupsResponse, build, timer)
        check(response.error_code, f"ListGroups from node {node_id}")
        v = response.version
        return [ListedGroup(g.group_id, g.protocol_type or "", g.group_state if v >= 4 else None,
                            g.group_type if v >= 5 else None, node_id) for g in response.groups]

    # -- describe ------------------------------------------------------------------------
    def describe_group(self, group_id: str, timer: Timer, offsets: bool = True,
                       time_lag: bool = False) -> GroupDescription:
        """The group's state and members, and with ``offsets`` its committed offsets and lag; a
        classic group or a consumer-protocol one (``group_type``).  Raises GroupNotFoundError for
        a group the coordinator does not know.

        ``time_lag`` (which implies ``offsets``): each partition's lag in time too, from the
        timestamp of the last record consumed (:mod:`.time_lag`: a Fetch per partition leader)."""
        offsets = offsets or time_lag
        def attempt() -> tuple[GroupDescription, dict[TopicPartition, int], dict[TopicPartition, int | None]]:
            coordinator = self._find_coordinator(group_id, timer)
            description = self._describe_either(coordinator, group_id, timer)
            if not offsets:
                return description, {}, {}
            if description.group_type == SHARE:  # where each share-partition starts, and its lag
                found = share_group_offsets(self.conn, coordinator.node_id, group_id, timer)
                return description, {tp: start for tp, (start, _) in found.items()}, {
                    tp: lag for tp, (_, lag) in found.items()}
            return description, self._committed(coordinator.node_id, description, timer), {}

        description, committed, reported = self.conn.retrying(f"describing group {group_id}", timer, attempt)
        if not offsets:
            return description
        assigned = description.assigned()
        partitions = sorted(set(committed) | set(assigned))
        ends = self._end_offsets(partitions, timer)
        lags = tuple(PartitionLag(tp.topic, tp.partition, committed.get(tp), ends.get(tp), assigned.get(tp),
                                  reported_lag=reported.get(tp)) for tp in partitions)
        if time_lag:
            seconds = time_lags(self.conn, lags, timer, partial(self._end_offsets, timer=timer, timestamp=EARLIEST))
            lags = tuple(replace(p, time_lag_s=seconds.get(TopicPartition(p.topic, p.partition))) for p in lags)
        return replace(description, offsets=lags, with_time_lag=time_lag)

    def _find_coordinator(self, group_id: str, timer: Timer) -> Coordinator:
        node = self.conn.client.least_loaded_node()
        if node is None:
            self.conn.refresh_metadata(timer)
            node = self.conn.client.least_loaded_node()
            if node is None:
                raise AdminError("the cluster has no brokers")

        def build(version: int) -> Any:
            if version >= 4:
                return FindCoordinatorRequest(version=version, key_type=0, coordinator_keys=[group_id])
            return FindCoordinatorRequest(version=version, key=group_id, key_type=0)

        response = self.conn.request(node, FindCoordinatorRequest, FindCoordinatorResponse, build, timer)
        if response.version >= 4:
            found = response.coordinators[0]
            check(found.error_code, "FindCoordinator", found.error_message)
            coordinator = Coordinator(found.node_id, found.host, found.port)
        else:
            check(response.error_code, "FindCoordinator", getattr(response, "error_message", None))
            coordinator = Coordinator(response.node_id, response.host, response.port)
        self.conn.add_node(coordinator.node_id, coordinator.host, coordinator.port)
        return coordinator

    def _describe_either(self, coordinator: Coordinator, group_id: str, timer: Timer) -> GroupDescription:
        """DescribeGroups, ConsumerGroupDescribe or ShareGroupDescribe, the group's last known kind
        first; the others when the first says "not found" (a group can change kind: Kafka converts
        a group between the protocols as its members do)."""
        last = self._kinds.get(group_id)
        kinds = (*([last] if last else []), *(k for k in (CLASSIC, CONSUMER, SHARE) if k != last))
        for kind in kinds:
            try:
                if kind == CLASSIC:
                    description = self._describe_on(coordinator, group_id, timer)
                elif kind == CONSUMER and self.conn.supports(coordinator.node_id, ApiKey.CONSUMER_GROUP_DESCRIBE,
                                                             timer):
                    description = describe_consumer_group(self.conn, coordinator, group_id, timer)
                elif kind == SHARE and self.conn.supports(coordinator.node_id, ApiKey.SHARE_GROUP_DESCRIBE, timer):
                    description = describe_share_group(self.conn, coordinator, group_id, timer)
                else:
                    continue  # a broker without that kind of group (before Kafka 4, or 4.2 for share)
            except GroupNotFoundError:
                continue
            self._kinds[group_id] = kind
            return description
        self._kinds.pop(group_id, None)
        raise GroupNotFoundError(group_id)

    def _describe_on(self, coordinator: Coordinator, group_id: str, timer: Timer) -> GroupDescription:
        def build(version: int) -> Any:
            return DescribeGroupsRequest(version=version, groups=[group_id], include_authorized_operations=False)

        response = self.conn.request(coordinator.node_id, DescribeGroupsRequest, DescribeGroupsResponse,
                                     build, timer)
        group = response.groups[0]
        # Kafka answers a group it does not know as Dead with no members (v6+: GROUP_ID_NOT_FOUND);
        # Kafka 4 answers a consumer-protocol group the same way ("... is not a classic group.")
        if group.error_code == ErrorCode.GROUP_ID_NOT_FOUND or (
                not group.error_code and group.group_state == "Dead" and not group.members):
            raise GroupNotFoundError(group_id)
        check(group.error_code, f"DescribeGroups {group_id}", getattr(group, "error_message", None))
        stable = group.group_state == "Stable"
        members = tuple(_member(m, group.protocol_type, stable) for m in group.members)
        return GroupDescription(group_id, group.group_state, group.protocol_type or "",
                                group.protocol_data or "", coordinator, members)

    def _committed(self, node_id: int, description: GroupDescription,
                   timer: Timer) -> dict[TopicPartition, int]:
        group_id = description.group_id
        version = self.conn.version_for(node_id, OffsetFetchRequest.API_KEY)
        wanted: dict[str, list[int]] | None = None
        if version is not None and version < 2:
            # before v2 the partitions must be named: those of the members' assignments
            wanted = {}
            for tp in sorted(description.assigned()):
                wanted.setdefault(tp.topic, []).append(tp.partition)
            if not wanted:
                return {}

        def build(version: int) -> Any:
            # v9 at most: an answer of all the group's offsets then names their topics (v10 names
            # them by id, which would need a Metadata round trip for nothing)
            version = min(version, 9)
            if version >= 8:
                return OffsetFetchRequest(version=version, require_stable=False, groups=[
                    OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group_id, topics=None)])
            topics = None if wanted is None else [
                OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in wanted.items()]
            return OffsetFetchRequest(version=version, group_id=group_id, topics=topics, require_stable=False)

        response = self.conn.request(node_id, OffsetFetchRequest, OffsetFetchResponse, build, timer)
        if response.version >= 8:
            answer = response.groups[0]
            check(answer.error_code, f"OffsetFetch {group_id}")
            topics = answer.topics
        else:
            check(getattr(response, "error_code", 0) or 0, f"OffsetFetch {group_id}")
            topics = response.topics
        committed: dict[TopicPartition, int] = {}
        for t in topics:
            for p in t.partitions:
                if p.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    continue  # a deleted topic: no commit to show (and retrying would not help)
                check(p.error_code, f"OffsetFetch {group_id} {t.name}-{p.partition_index}")
                if p.committed_offset >= 0:
                    committed[TopicPartition(t.name, p.partition_index)] = p.committed_offset
        return committed

    # -- end offsets ---------------------------------------------------------------------
    def _end_offsets(self, partitions: list[TopicPartition], timer: Timer,
                     timestamp: int = LATEST) -> dict[TopicPartition, int]:
        """ListOffsets LATEST (or ``timestamp``: EARLIEST, the log start offsets) from each
        partition's leader; partitions without an answer after a few attempts (a deleted topic, a
        leader that keeps refusing) are left out."""
        found: dict[TopicPartition, int] = {}
        pending = list(partitions)
        for _ in range(LIST_OFFSETS_ATTEMPTS):
            if not pending or timer.expired():
                break
            self.conn.refresh_metadata(timer, {tp.topic for tp in pending})
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in pending:
                leader = self.conn.leader_for(tp.topic, tp.partition)
                if leader is not None and leader >= 0:
                    by_leader.setdefault(leader, []).append(tp)
            for leader, tps in sorted(by_leader.items()):
                try:
                    found.update(self.conn.retrying(f"ListOffsets from node {leader}", timer,
                                                    partial(self._list_offsets, leader, tps, timer, timestamp)))
                except AdminError:
                    continue
            pending = [tp for tp in pending if tp not in found]
        return found

    def _list_offsets(self, node_id: int, partitions: list[TopicPartition], timer: Timer,
                      timestamp: int) -> dict[TopicPartition, int]:
        Topic = ListOffsetsRequest.ListOffsetsTopic
        by_topic: dict[str, list[Any]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(Topic.ListOffsetsPartition(
                partition_index=tp.partition, current_leader_epoch=-1, timestamp=timestamp, max_num_offsets=1))

        def build(version: int) -> Any:
            return ListOffsetsRequest(version=version, replica_id=-1, isolation_level=READ_UNCOMMITTED,
                                      topics=[Topic(name=t, partitions=p) for t, p in by_topic.items()])

        response = self.conn.request(node_id, ListOffsetsRequest, ListOffsetsResponse, build, timer)
        ends: dict[TopicPartition, int] = {}
        for t in response.topics:
            for p in t.partitions:
                if p.error_code:
                    continue  # asked again, after a metadata refresh, by _end_offsets
                offset = p.offset if response.version >= 1 else (p.old_style_offsets or [-1])[0]
                if offset >= 0:
                    ends[TopicPartition(t.name, p.partition_index)] = offset
        return ends


def _member(m: Any, protocol_type: str, stable: bool) -> Member:
    """A described member; its assignment is known when decodable, or empty in a Stable group
    (a member the leader gave nothing); outside Stable, empty bytes mean "not shown"."""
    raw = bytes(m.member_assignment or b"")
    assignment: tuple[TopicPartition, ...] | None = None
    if protocol_type == PROTOCOL_TYPE and (raw or stable):
        try:
            assignment = tuple(sorted(decode_assignment(raw).partitions))
        except Exception:  # not the consumer protocol after all: shown as a byte count
            assignment = None
    return Member(m.member_id, getattr(m, "group_instance_id", None), m.client_id, m.client_host,
                  assignment, len(raw))


__all__ = ["GroupAdmin"]
