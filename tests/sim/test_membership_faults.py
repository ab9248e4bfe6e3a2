"""The membership defects, each reproduced in the simulator (real member logic and coordinator
core on one fake clock); invariants are checked after every step of every test."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest
from kafka.structs import TopicPartition

from groupclient import GroupConsumer
from groupclient.coordinator.faults import FaultKind, FaultRule
from groupclient.coordinator.node import BrokerNode
from groupclient.errors import CommitFailedError, WakeupError
from groupclient.protocol.apis import ApiKey
from groupclient.error_codes import ErrorCode
from groupclient.testing import Behaviour, GroupSimulation
from tests.sim.polling import poll_until
from tests.sim.switches import DropAfterASwitch

Sim = Callable[..., GroupSimulation]


def stable(sim: GroupSimulation, max_ms: int = 60_000) -> None:
    assert sim.run_until(sim.converged, max_ms), f"no convergence by t={sim.now}: {sim.log[-10:]}"


def driver_consumer(sim: GroupSimulation, name: str, **configs: object) -> GroupConsumer:
    """A consumer the test drives itself: its blocking calls run the simulation meanwhile."""
    return sim.consumer(name, **configs)


def consuming(make_sim: Sim, partitions: int, records: int, name: str,
              **configs: object) -> tuple[GroupSimulation, GroupConsumer, list[int]]:
    """A simulation with one topic of ``records`` records and a driven consumer that has polled
    its first batch (whose offsets come back too)."""
    sim = make_sim(topics={"t": partitions})
    sim.produce("t", records)
    consumer = driver_consumer(sim, name, **configs)
    consumer.subscribe(["t"])
    return sim, consumer, first_records(consumer)


def first_records(consumer: GroupConsumer, polls: int = 60) -> list[int]:
    """Poll (a bounded number of times) until a batch comes; its offsets."""
    for _ in range(polls):
        batch = consumer.poll(1000)
        if batch:
            return [r.offset for records in batch.values() for r in records]
    raise AssertionError(f"no records in {polls} polls")


def test_iteration_commits_only_what_it_yielded(make_sim: Sim) -> None:
    """Defect 0: breaking out of ``for record in consumer`` after 3 records commits 3, not the batch."""
    sim = make_sim(topics={"t": 1})
    sim.produce("t", 100)
    consumer = driver_consumer(sim, "iter", enable_auto_commit=True)
    consumer.subscribe(["t"])
    seen = []
    for record in consumer:
        seen.append(record.offset)
        if len(seen) == 3:
            break
    consumer.close()
    assert seen == [0, 1, 2]
    assert sim.committed() == {TopicPartition("t", 0): 3}


def test_poll_then_close_commits_what_poll_returned(make_sim: Sim) -> None:
    sim, consumer, got = consuming(make_sim, 1, 30, "p", enable_auto_commit=True, max_poll_records=10)
    consumer.close()
    assert sim.committed() == {TopicPartition("t", 0): len(got)}


def test_member_rediscovers_after_a_dropped_heartbeat_connection(make_sim: Sim) -> None:
    """Defect 1: after a dropped coordinator connection a STABLE member looks the coordinator up
    again and keeps its place; it never sits on partitions the broker gave away."""
    sim = make_sim()
    sim.add_member("a")
    sim.add_member("b")
    stable(sim)
    sim.inject_fault(FaultRule(int(ApiKey.HEARTBEAT), FaultKind.DROP))
    sim.run_for(30_000)
    stable(sim)


def test_coordinator_failover_is_survived(make_sim: Sim) -> None:
    sim = make_sim(nodes=3, offsets_topic_partitions=3)
    sim.add_member("a")
    sim.add_member("b")
    stable(sim)
    node = sim.core.coordinator_node_for(sim.group_id)
    assert node is not None
    sim.stop_node(node.node_id)
    sim.run_for(20_000)
    stable(sim)
    sim.start_node(node.node_id)
    sim.run_for(20_000)
    stable(sim)


def test_rebalance_in_progress_heartbeat_keeps_a_busy_member(make_sim: Sim) -> None:
    """Defect 2: a member busy for longer than its session timeout during a rebalance stays in the
    group (REBALANCE_IN_PROGRESS is an answered heartbeat) and rejoins when it polls again."""
    sim = make_sim()
    a = sim.add_member("a")
    stable(sim)
    member_id = a.consumer.group_metadata().member_id
    sim.pause("a", 25_000)  # session timeout 10 s, max poll interval (the rebalance timeout) 30 s
    sim.add_member("b")
    stable(sim, 60_000)
    assert a.consumer.group_metadata().member_id == member_id
    assert not [e for e in a.events if e.kind == "lost"]


def test_unknown_heartbeat_error_only_fails_that_heartbeat(make_sim: Sim) -> None:
    """Defect 4: an error code the heartbeat does not expect fails the heartbeat, not the member."""
    sim = make_sim()
    a = sim.add_member("a")
    stable(sim)
    sim.inject_fault(FaultRule(int(ApiKey.HEARTBEAT), FaultKind.ERROR, count=2,
                               error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    sim.run_for(20_000)
    stable(sim)
    assert a.alive and not a.errors


def test_unknown_join_error_is_raised_once_and_the_member_goes_on(make_sim: Sim) -> None:
    sim = make_sim()
    sim.inject_fault(FaultRule(int(ApiKey.JOIN_GROUP), FaultKind.ERROR, error_code=ErrorCode.UNSTABLE_OFFSET_COMMIT))
    a = sim.add_member("a")
    stable(sim)
    assert a.alive and len(a.errors) == 1


def test_topic_authorization_failure_in_metadata_is_applied(make_sim: Sim) -> None:
    sim = make_sim()
    sim.inject_fault(FaultRule(int(ApiKey.METADATA), FaultKind.ERROR, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    sim.add_member("a")
    stable(sim)


def test_a_long_poll_on_an_idle_topic_does_not_leave_the_group(make_sim: Sim) -> None:
    """Defect 5: poll(timeout) longer than max_poll_interval_ms keeps the member in the group."""
    sim = make_sim()
    a = sim.add_member("a", behaviour=Behaviour(poll_timeout_ms=40_000), max_poll_interval_ms=15_000)
    stable(sim)
    generation = a.consumer.group_metadata().generation_id
    sim.run_for(60_000)
    assert a.consumer.group_metadata().generation_id == generation
    # the first join's revoke is of nothing (kafka-python calls it before every eager join)
    assert [e.kind for e in a.events] == ["revoked", "assigned"] and not a.events[0].partitions


def test_subscribe_during_a_join_is_not_lost(make_sim: Sim) -> None:
    """Defect 6: a subscription changed while the JoinGroup is held is joined with next."""
    sim = make_sim(topics={"t1": 2, "t2": 2}, group_initial_rebalance_delay_ms=3000)
    consumer = driver_consumer(sim, "s")
    consumer.subscribe(["t1"])
    consumer.poll(500)  # the JoinGroup is held by the initial rebalance delay
    assert consumer.group_metadata().phase == "preparing-rebalance"
    consumer.subscribe(["t1", "t2"])
    poll_until(consumer, lambda: len(consumer.assignment()) == 4, 40)
    assert consumer.assignment() == sim.partitions(["t1", "t2"])
    consumer.close()


def test_commit_after_leaving_on_poll_timeout_fails(make_sim: Sim) -> None:
    """Defect 7: commit() after the member left on poll timeout raises CommitFailedError."""
    sim, consumer, _ = consuming(make_sim, 1, 10, "slow", enable_auto_commit=False, max_poll_interval_ms=12_000)
    sim.run_for(20_000)  # the application does not poll: the heartbeat thread leaves the group
    try:
        consumer.commit()
    except CommitFailedError:
        pass
    else:
        raise AssertionError("commit() after leaving the group did not fail")
    finally:
        consumer.close()


def test_a_short_poll_is_not_held_by_the_commit_before_a_rebalance(make_sim: Sim) -> None:
    """Defect 8: poll(100) does not wait for a slow auto-commit before rejoining."""
    sim, consumer, _ = consuming(make_sim, 2, 20, "c", enable_auto_commit=True)
    sim.inject_fault(FaultRule(int(ApiKey.OFFSET_COMMIT), FaultKind.DELAY, delay_ms=20_000))
    consumer.enforce_rebalance("test")
    start = sim.now
    consumer.poll(100)
    assert sim.now - start <= 1_000
    consumer.close()


def test_leaving_while_not_stable_reports_lost_partitions(make_sim: Sim) -> None:
    sim = make_sim(topics={"t": 2})
    events: list[tuple[str, set[TopicPartition]]] = []

    class Listener:
        def on_partitions_assigned(self, p: set[TopicPartition]) -> None:
            events.append(("assigned", p))

        def on_partitions_revoked(self, p: set[TopicPartition]) -> None:
            events.append(("revoked", p))

        def on_partitions_lost(self, p: set[TopicPartition]) -> None:
            events.append(("lost", p))

    consumer = driver_consumer(sim, "l", max_poll_interval_ms=12_000)
    consumer.subscribe(["t"], listener=Listener())
    assert poll_until(consumer, lambda: bool(consumer.assignment()), 60)
    sim.run_for(20_000)  # poll timeout: the member left and its partitions are lost
    consumer.close()
    assert [k for k, _ in events] == ["revoked", "assigned", "lost"] and not events[0][1]


def test_close_waits_for_async_commits_and_commits_before_leaving(make_sim: Sim) -> None:
    """Defect 10: close() lets in-flight async commits finish (their callbacks run) before leaving."""
    sim, consumer, got = consuming(make_sim, 1, 10, "c", enable_auto_commit=False)
    answered: list[object] = []
    consumer.commit_async(callback=lambda offsets, error: answered.append(error))
    consumer.close()
    assert answered == [None]
    assert sim.committed() == {TopicPartition("t", 0): len(got)}


def test_commit_async_leaves_a_pending_wakeup_to_the_next_blocking_call(make_sim: Sim) -> None:
    """Defect 10: commit_async never raises WakeupError; the next poll() does."""
    sim, consumer, _ = consuming(make_sim, 1, 5, "w", enable_auto_commit=False)
    consumer.wakeup()
    consumer.commit_async()
    try:
        consumer.poll(100)
    except WakeupError:
        pass
    else:
        raise AssertionError("the wakeup was lost")
    consumer.close()


def test_a_stable_member_goes_on_consuming_while_its_coordinator_is_looked_up(make_sim: Sim) -> None:
    """Losing the coordinator does not stop consumption before the lease ends (as in Java, which
    keeps fetching); the member rediscovers the coordinator meanwhile."""
    sim = make_sim(topics={"t": 2})
    sim.produce("t", 10)
    a = sim.add_member("a", behaviour=Behaviour(poll_timeout_ms=200))
    stable(sim)
    assert sim.run_until(lambda: sum(len(v) for v in a.delivered.values()) == 10, 10_000)
    sim.inject_fault(FaultRule(int(ApiKey.FIND_COORDINATOR), FaultKind.ERROR, count=1_000,
                               error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE))
    sim.inject_fault(FaultRule(int(ApiKey.HEARTBEAT), FaultKind.ERROR, error_code=ErrorCode.NOT_COORDINATOR))
    assert sim.run_until(lambda: a.consumer._group is not None and a.consumer._group.member.coordinator_unknown(),
                         5_000)
    before = sum(len(v) for v in a.delivered.values())
    sim.produce("t", 20)
    sim.run_for(4_000)
    assert sum(len(v) for v in a.delivered.values()) - before == 20
    sim.core.faults.clear()
    stable(sim)


def test_a_leader_that_assigned_without_metadata_refreshes_it_and_rebalances(make_sim: Sim) -> None:
    """Found by the random schedules: Metadata answered with a topic error just before the leader
    assigns; the leader assigned nothing for that topic and, its metadata never retried before
    metadata_max_age_ms, the group sat stable with no partitions for 5 minutes."""
    sim = make_sim()
    leader = driver_consumer(sim, "a")
    leader.subscribe(["t"])
    poll_until(leader, lambda: bool(leader.assignment()), 60)
    assert leader.assignment() == sim.partitions()
    sim.inject_fault(FaultRule(int(ApiKey.METADATA), FaultKind.ERROR, count=10,
                               error_code=ErrorCode.UNKNOWN_SERVER_ERROR))
    leader._client.metadata.request_update()
    # a metadata refresh that gets the error: "t" is unavailable to the leader now
    assert poll_until(leader, lambda: "t" in leader._client.metadata.unavailable, 20, 200)
    sim.add_member("b")
    assert poll_until(leader, sim.converged, 60), sim.describe()
    leader.close()


def test_a_classic_member_resumed_past_its_session_reports_its_partitions_lost(make_sim: Sim) -> None:
    """Found by the chaos run (seed 645730909): a and b own three partitions each; a is frozen
    (SIGSTOP) past its session and b is given a's partitions.  On resuming, a's heartbeat thread
    ends the lease and is switched out between deciding the loss (the member goes UNJOINED, its
    generation kept) and dropping the partitions (here: it blocks there for 200 ms); a's
    application polls meanwhile.  That poll must neither hand out a record of what a owned before
    nor prepare its rejoin as a revocation (on_partitions_revoked, a commit for partitions b owns):
    the listener hears on_partitions_lost, as when the drop comes first."""
    sim = make_sim(seed=1, topics={"t": 6}, check_invariants=False)
    a = sim.add_member("a")
    b = sim.add_member("b")
    assert sim.run_until(sim.converged, 30_000), sim.describe()
    sim.produce("t", 600)
    assert sim.run_until(lambda: all(sum(len(v) for v in m.delivered.values()) > 0 for m in (a, b)), 10_000)
    before = set(a.owned())
    session_ms = a.consumer.config["session_timeout_ms"]
    assert a.consumer._group is not None
    member = a.consumer._group.member
    batches: list[tuple[int, set[TopicPartition]]] = []
    a.on_batch = lambda m, batch: batches.append((sim.now, set(batch)))
    switch = DropAfterASwitch(sim, member.ownership)
    held_up = switch.held_up
    member.ownership = switch
    # a's application is between polls when it is stopped, and polls again 100 ms after it resumes:
    # its heartbeat thread, which sees the lease ended, runs first
    frozen_ms = session_ms + 5_000
    resumed_at = sim.now + frozen_ms
    sim.pause("a", frozen_ms + 100)
    sim.run_for(1_500)
    sim.stall("a", frozen_ms - 1_500)
    assert sim.run_until(lambda: before <= b.owned(), frozen_ms - 1_500), "b was given a's partitions"
    sim.run_for(resumed_at - sim.now + 2_000)
    assert held_up and held_up[0] >= resumed_at, "a's heartbeat thread ended the lease on resuming"
    after = [e for e in a.events if e.at_ms >= resumed_at and e.kind in ("lost", "revoked") and e.partitions & before]
    lost_at = min((e.at_ms for e in after if e.kind == "lost"), default=None)
    stale = [(at, sorted(tp.partition for tp in partitions & before)) for at, partitions in batches
             if at >= resumed_at and (lost_at is None or at < lost_at) and partitions & before]
    assert not stale, f"a resumed at {resumed_at} and handed out records of partitions b owns: {stale}"
    assert after and after[0].kind == "lost", \
        f"a's listener heard {[(e.kind, e.at_ms) for e in after]} after resuming at {resumed_at}, not on_partitions_lost"
    assert lost_at is not None and lost_at < held_up[0] + 200, "the loss waited for the heartbeat thread"


def owner_of_three(sim: GroupSimulation) -> tuple[GroupConsumer, set[TopicPartition], BrokerNode]:
    """A classic member ``a`` (6 s session, 1 s heartbeats) owning the 3 partitions of ``t`` on a
    cluster of several nodes, and the node coordinating its group."""
    sim.produce("t", 30)
    a = sim.consumer("a", session_timeout_ms=6000, heartbeat_interval_ms=1000)
    a.subscribe(["t"])
    assert poll_until(a, lambda: len(a.assignment()) == 3, 60), sim.describe()
    node = sim.core.coordinator_node_for(sim.group_id)
    assert node is not None
    return a, a.assignment(), node


def told_in_time(sim: GroupSimulation, a: GroupConsumer, owned: set[TopicPartition]) -> None:
    """Poll ``a`` (6 s session, cut off just now) in 1 s polls until its listener hears that it
    lost ``owned``: within one session after the last answered heartbeat (sent before the cut),
    then one poll at most."""
    cut = sim.now
    for _ in range(40):
        a.poll(1000)
        lost = {tp for e in sim.members["a"].events if e.kind == "lost" for tp in e.partitions}
        if lost:
            assert lost == owned and not a.assignment()
            assert sim.now - cut <= 6000 + 1000 + 100, (cut, sim.now)
            return
    raise AssertionError(f"never told of the loss: {sim.members['a'].events}")


def test_a_lease_that_ends_while_the_coordinator_is_unreachable_is_told_at_the_next_poll(make_sim: Sim) -> None:
    """The coordinator stops answering a classic member (its heartbeats and its FindCoordinator
    get no answer): the heartbeat thread ends the lease one session after the last answered
    heartbeat and gives the partitions up.  The application's listener hears of it at the next
    poll(), not only once a coordinator is found again and the member rejoins (which may be never):
    the Kafka chaos run's seed 3303056178 told a member's listener 1.7-2.7 s late."""
    sim = make_sim(topics={"t": 3})
    sim.produce("t", 30)
    a = sim.consumer("a", session_timeout_ms=6000, heartbeat_interval_ms=1000)
    a.subscribe(["t"])
    assert poll_until(a, lambda: len(a.assignment()) == 3, 60), sim.describe()
    owned = a.assignment()
    for api in (ApiKey.HEARTBEAT, ApiKey.FIND_COORDINATOR, ApiKey.OFFSET_COMMIT, ApiKey.JOIN_GROUP):
        sim.inject_fault(FaultRule(int(api), FaultKind.DELAY, count=1000, delay_ms=600_000))
    told_in_time(sim, a, owned)
    sim.core.faults.clear()
    a.close()


def test_a_lease_that_ends_is_told_at_the_next_poll_even_if_the_coordinator_was_just_found_again(
        make_sim: Sim) -> None:
    """The heartbeat thread ends the lease (no heartbeat answered) while the application is not
    polling, and has found the coordinator again by the time the application polls, but its
    connection never becomes ready (a blackhole: the connection opens, the broker never answers).
    That poll sees a coordinator and goes to the join, which waits for the connection: the
    listener must hear of the loss at that poll all the same.  The Kafka chaos run's seed
    3303056178 cut a classic member off from its coordinator and told its listener 1.7-2.9 s late
    (the coordinator, found and lost every few milliseconds, was often known at the top of a poll)."""
    sim = make_sim(nodes=3, topics={"t": 3})
    a, owned, node = owner_of_three(sim)
    for api in (ApiKey.API_VERSIONS, ApiKey.HEARTBEAT, ApiKey.JOIN_GROUP, ApiKey.OFFSET_COMMIT):
        sim.inject_fault(FaultRule(int(api), FaultKind.DELAY, count=1000, delay_ms=600_000, node_id=node.node_id))
    sim.run_for(8000)  # the application is busy: the heartbeat thread alone sees the lease end
    assert not a.assignment() and not [e for e in sim.members["a"].events if e.kind == "lost"]
    # as found by the heartbeat thread an instant before the poll (which the schedule here does
    # not reach by itself): the coordinator is known, its connection not ready
    driver = a._group
    assert driver is not None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(driver.member, "coordinator_unknown", lambda: False)
        a.poll(1000)
    lost = {tp for e in sim.members["a"].events if e.kind == "lost" for tp in e.partitions}
    assert lost == owned, f"the listener heard {sim.members['a'].events} at the poll after the lease ended"
    sim.core.faults.clear()
    a.close()


def _find_coordinator_requests(sim: GroupSimulation, member: str, since_ms: int) -> int:
    assert sim.network.trace is not None
    return sum(1 for at, kind, who, _node, payload in sim.network.trace
               if kind == "request" and who == member and at >= since_ms
               and struct.unpack_from(">h", payload, 4)[0] == ApiKey.FIND_COORDINATOR)


def test_a_member_cut_off_from_its_coordinator_tells_the_loss_in_time_and_looks_it_up_with_backoff(
        make_sim: Sim) -> None:
    """A classic member cut off from its coordinator's node only (the other nodes answer its
    FindCoordinator, which names the node it cannot reach): the Kafka chaos run's seed
    3303056178.  The listener hears of the loss at the first poll() after the lease ends (it was
    told 1.7-2.9 s late: the coordinator, found again and again, was known at the top of the poll,
    whose join then spent it looking the coordinator up), and the lookups back off as Java's
    ensureCoordinatorReady does, where they went out every few milliseconds."""
    sim = make_sim(nodes=3, topics={"t": 3}, record_trace=True)
    a, owned, coordinator = owner_of_three(sim)
    sim.cut_off("a", coordinator.node_id)
    told_in_time(sim, a, owned)
    looked_from = sim.now
    for _ in range(10):
        a.poll(1000)
    lookups = _find_coordinator_requests(sim, "a", looked_from)
    # retry_backoff_ms 100 doubling to retry_backoff_max_ms 1000 (with 20% jitter): some 15 in 10 s
    assert 3 <= lookups <= 25, f"{lookups} FindCoordinator requests in {sim.now - looked_from} ms"
    sim.reconnect("a")
    assert poll_until(a, lambda: len(a.assignment()) == 3, 60), sim.describe()
    # once the coordinator answers again the backoff starts over: a later cut-off looks it up
    # after 100 ms, 200 ms, 400 ms..., not at the 1 s the last one had grown to
    cut_again = sim.now
    sim.cut_off("a", coordinator.node_id)
    for _ in range(12):
        a.poll(1000)
    assert sim.network.trace is not None
    first = min(at for at, kind, who, _node, payload in sim.network.trace
                if kind == "request" and who == "a" and at >= cut_again
                and struct.unpack_from(">h", payload, 4)[0] == ApiKey.FIND_COORDINATOR)
    early = _find_coordinator_requests(sim, "a", first) - _find_coordinator_requests(sim, "a", first + 1600)
    assert early >= 4, f"{early} lookups in the first 1.6 s after the second cut-off"
    a.close()
