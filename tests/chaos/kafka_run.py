"""The chaos run on a real Apache Kafka 4.4 cluster: three KRaft nodes (tests/kafka/cluster.py),
each behind a FaultProxy, a topic of 12 partitions replicated 3 times (min.insync.replicas 2, the
cluster's defaults), and one group of six members of three kinds: groupclient members of the
classic protocol, groupclient members of the consumer protocol (KIP-848), and kafka-python 3.0
members (classic), which Kafka 4 lets into a consumer-protocol group.  The mix is drawn from the
seed (``KafkaChaosSettings``), with at least two consumer-protocol members when there are any
(see ``ChaosSettings.protocol_of``).

The episodes, the seeded schedule and the invariants are the embedded run's (harness.py,
checks.py); the faults are Kafka's own:

- a member's connections to one broker through its proxy: reset (RST, as a dropped
  connection), delayed, refused for a while, or blackholed: to a broker that is not the group's
  coordinator (``cut_broker``), or to the coordinator's node for longer than the session while
  the member still reaches the partition leaders on the other brokers (``cut_coordinator``: the
  classic zombie, which the coordinator expires and whose partitions it gives away);
- SIGKILL of a broker and its restart: the group coordinator's node (``kill_coordinator``: the
  group moves to another node, which loads it from __consumer_offsets) or another node
  (``kill_leader``: its partitions get new leaders); a preferred leader election follows the
  restart, so leadership (the coordinator's too) does not pile up on the surviving nodes;
- member freezes (SIGSTOP), stalls past max_poll_interval_ms, kills (SIGKILL) and graceful
  closes (SIGTERM: close(), then the member reports what it left behind).

Faults that test a member's own fencing (SIGSTOP, stalls, coordinator cut-offs) go to groupclient
members only: kafka-python 3.0 keeps returning buffered records after them, which is
kafka-python's behaviour and not under test here.  kafka-python members take kills, closes, the
connection faults that keep them within their session, and every broker fault (their poll()
raises KafkaConnectionError on a refused or reset connection, where Java's retries: member.py
polls again), and are judged by the same invariants, except what close() leaves behind.

One session for every member: the classic members' ``session_timeout_ms``, and the consumer
group's ``consumer.session.timeout.ms`` set to the same on the group itself (a KIP-848 group
config), which the groupclient consumer-protocol members read for their lease.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groupclient.admin import AdminConnection, AdminError, GroupAdmin
from groupclient.admin.model import GroupDescription
from groupclient.errors import GroupClientError
from tests.integration.peers import wait_until
from tests.kafka.cluster import SETTINGS as CLUSTER_SETTINGS
from tests.kafka.cluster import KafkaCluster

from .harness import ChaosRun, ChaosSettings, Episode, Incarnation, every_step

KAFKA_FAULT_WEIGHTS = {
    "kill_member": 3, "close_member": 1, "pause_member": 2, "stall_member": 2, "cut_coordinator": 3,
    "cut_broker": 1, "delay_connections": 2, "reset_connections": 2, "refuse_connections": 1,
    "kill_coordinator": 2, "kill_leader": 2,
}
STRATEGIES = ("range", "roundrobin", "cooperative-sticky")  # groupclient's and kafka-python's alike
# how long the controller waits for a dead node's heartbeats before it fences the node and elects
# new leaders for its partitions
BROKER_SESSION_S = int(CLUSTER_SETTINGS["broker.session.timeout.ms"]) / 1000
# a killed node that was the KRaft quorum's leader: the others notice (fetch timeout), then elect
CONTROLLER_ELECTION_S = (int(CLUSTER_SETTINGS["controller.quorum.fetch.timeout.ms"])
                         + int(CLUSTER_SETTINGS["controller.quorum.election.timeout.ms"])) / 1000
Heal = Callable[[], None]
MEMBER_SETTLING_S = 5.0  # a member this young is not cut off from its coordinator (_cut_coordinator)


@dataclass(frozen=True)
class KafkaChaosSettings(ChaosSettings):
    # Kafka's smallest consumer-protocol session here (group.consumer.min.session.timeout.ms),
    # and the classic members' too
    session_ms: int = 6000
    max_poll_interval_ms: int = 8000
    kinds: tuple[str, ...] = tuple(sorted(KAFKA_FAULT_WEIGHTS))
    protocols: str = "mixed"
    # each commit bounded, so that a member polls, and hears of partitions it lost, soon
    commit_timeout_ms: int = 1000

    def _mix(self) -> tuple[list[int], list[int]]:
        """(the kafka-python slots, the groupclient consumer-protocol slots), drawn from the seed
        on a stream of its own (the schedule's draws stay as they are)."""
        rng = random.Random(f"{self.seed}/kafka-mix")
        kafka_python = rng.randint(1, 2)
        consumer = rng.choice((0, 2, 2, 3))  # never one alone: see ChaosSettings.protocol_of
        slots = rng.sample(range(self.members), kafka_python + consumer)
        return slots[:kafka_python], slots[kafka_python:]

    def client_of(self, slot: int) -> str:
        return "kafka-python" if slot in self._mix()[0] else "groupclient"

    def protocol_of(self, slot: int) -> str:
        return "consumer" if slot in self._mix()[1] else "classic"

    @property
    def consumer_members(self) -> bool:
        return bool(self._mix()[1])

    @property
    def convergence_bound_s(self) -> float:
        """The group is whole again this soon after a fault heals, and after a node's kill with the
        node still down (``_kill_node``): a session (a member killed or cut off is expired only
        then), a rebalance timeout (a classic rebalance waits that long for every member to rejoin),
        the controller's broker session (a node that went down is fenced, and its partitions, the
        group's __consumer_offsets partition among them, get new leaders, only then), and 4 s for
        the members to find the new coordinator and leaders (metadata_max_age_ms 2 s, reconnect
        backoff at most 1 s) and for the new coordinator to load the group."""
        return (self.session_ms + self.max_poll_interval_ms) / 1000 + BROKER_SESSION_S + 4


def kafka_settings(seed: int, seconds: float, strategy: str | None = None,
                   kinds: tuple[str, ...] | None = None) -> KafkaChaosSettings:
    """The settings of a run: the assignor drawn from the seed unless given; a topic and a group
    of its own (a session's cluster is shared with other tests, and a group's configs outlive it)."""
    token = os.urandom(3).hex()
    return KafkaChaosSettings(seed=seed, seconds=seconds, strategy=strategy or STRATEGIES[seed % len(STRATEGIES)],
                              kinds=kinds or tuple(sorted(KAFKA_FAULT_WEIGHTS)),
                              topic=f"chaos-{seed}-{token}", group=f"chaos-group-{seed}-{token}")


class KafkaIncarnation(Incarnation):
    """A member process of the Kafka run: its client (groupclient or kafka-python), bounded commits."""

    @property
    def client_id(self) -> str:
        # the proxies' rules match a client_id prefix: the "/" ends it, so that m3.1's rule is not m3.12's
        return f"{self.name}/"

    def arguments(self, settings: ChaosSettings, bootstrap: str) -> list[str]:
        timeout_ms = getattr(settings, "commit_timeout_ms", None)
        return [*super().arguments(settings, bootstrap), "--client", self.client,
                *(["--commit-timeout-ms", str(timeout_ms)] if timeout_ms else [])]


class KafkaChaosRun(ChaosRun):
    """ChaosRun on a running KafkaCluster (the caller's: it is left running, whole and healed)."""

    weights = KAFKA_FAULT_WEIGHTS
    combinable = ("reset_connections", "delay_connections", "refuse_connections", "cut_broker", "cut_coordinator")
    converge_interval_s = 0.25  # each look is a DescribeGroups / ConsumerGroupDescribe of the coordinator

    def __init__(self, settings: KafkaChaosSettings, log_dir: Path, kafka: KafkaCluster) -> None:
        super().__init__(settings, log_dir)
        self.kafka = kafka
        self.connection: AdminConnection | None = None
        self.admin: GroupAdmin | None = None
        self.confirmed = 0  # records the producer had acknowledged
        self.producer_errors: Counter[str] = Counter()
        self.failovers: list[float] = []  # after each coordinator's kill: until the group was whole without it
        self.election_errors: Counter[str] = Counter()  # preferred leader elections that failed

    # -- the cluster ---------------------------------------------------------------------
    def _start_cluster(self) -> None:
        self._clear_faults()  # every node running, no rule left (as a test finds the session's cluster)
        # closed by _stop_cluster, which run() calls however the start ended
        self.connection = AdminConnection(self.kafka.bootstrap_servers, timeout_ms=5000, client_id="chaos-observer")
        self.admin = GroupAdmin(self.connection)
        from kafka.admin import ConfigResource, ConfigResourceType

        s = self.settings
        admin = self.kafka.admin()
        try:  # KIP-848 group configs: the consumer-protocol members' session is the classic members'
            answer = admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, s.group, configs={
                "consumer.session.timeout.ms": str(s.session_ms),
                "consumer.heartbeat.interval.ms": str(max(s.session_ms // 6, 500))})], raise_on_unknown=False)
        finally:
            admin.close()
        if answer != {"group": {s.group: "OK"}}:
            raise RuntimeError(f"setting the session of group {s.group}: {answer}")

    def _stop_cluster(self) -> None:
        every_step(self._clear_faults, lambda: self.connection.close() if self.connection is not None else None,
                   self._delete_topic)

    def _delete_topic(self) -> None:
        admin = self.kafka.admin()
        try:  # the session's cluster outlives the run: not its topic
            admin.delete_topics([self.settings.topic], raise_errors=False)
        except Exception:  # best effort: a topic left behind harms no other test
            pass
        finally:
            admin.close()

    def _bootstrap(self) -> str:
        return self.kafka.bootstrap_servers

    def _create_topic(self) -> None:
        self.kafka.create_topic(self.settings.topic, self.settings.partitions)  # replicated 3 times

    def _clear_faults(self) -> None:
        for proxy in self.kafka.proxies:
            proxy.heal()
        for node in range(self.kafka.nodes):
            if not self.kafka.alive(node):
                self.kafka.start_node(node)

    def _end_offsets(self) -> dict[int, int]:
        return self.kafka.end_offsets(self.settings.topic)

    def _incarnation(self, slot: int, number: int) -> Incarnation:
        return KafkaIncarnation(slot, number, self.settings, self._bootstrap(), self.log_dir)

    def _finish(self, producer: threading.Thread) -> None:
        self._clear_faults()
        self._stop_producing.set()
        producer.join(60)  # it flushes what it has sent: its records must all be in before the end offsets are read
        if producer.is_alive():
            raise AssertionError(f"seed {self.settings.seed}: the producer did not stop within 60 s")
        # a record written but not yet replicated when its request timed out may still come in:
        # the end offsets are read once they have stopped moving
        def unchanged_for_2_s() -> bool:
            before = self._end_offsets()
            time.sleep(2)
            return self._end_offsets() == before
        wait_until(unchanged_for_2_s, 30, interval_s=0)
        super()._finish(producer)

    # -- the group, as its coordinator describes it --------------------------------------
    def _describe(self, offsets: bool) -> GroupDescription | None:
        assert self.admin is not None and self.connection is not None
        try:
            return self.admin.describe_group(self.settings.group, self.connection.timer(3000), offsets=offsets)
        except (AdminError, GroupClientError):  # no coordinator (a node down), or the group not known yet
            return None

    def _group(self) -> dict[str, Any] | None:
        found = self._describe(offsets=False)
        if found is None:
            return None
        # a classic group has no generation in DescribeGroups: its rebalances are not counted
        return {"state": found.state, "type": found.group_type, "generation": found.group_epoch or 0,
                "members": sorted(m.client_id for m in found.members)}

    def _committed(self) -> dict[int, int]:
        found = self._describe(offsets=True)
        if found is None:
            return {}
        return {p.partition: p.committed for p in found.offsets
                if p.topic == self.settings.topic and p.committed is not None}

    def _produce(self) -> None:
        """kafka-python's producer, acks=all, through the proxies: a record to every partition
        every ``produce_every_s``.  A record it could not confirm may or may not be in the log:
        checks.py judges against the end offsets read at the end, not against what was sent."""
        from kafka import KafkaProducer
        from kafka.errors import KafkaError

        s = self.settings
        producer = KafkaProducer(bootstrap_servers=self.kafka.bootstrap_servers, client_id="chaos-producer",
                                 acks="all", linger_ms=5, max_block_ms=2000, request_timeout_ms=5000,
                                 retry_backoff_ms=100, reconnect_backoff_max_ms=1000)

        def confirmed(_: Any) -> None:
            self.confirmed += 1  # on the producer's I/O thread only

        def failed(exc: BaseException) -> None:
            self.producer_errors[type(exc).__name__] += 1
        seq = 0
        try:
            while not self._stop_producing.wait(s.produce_every_s):
                for p in range(s.partitions):
                    try:
                        sent = producer.send(s.topic, f"{p}:{seq}".encode(), partition=p)
                    except KafkaError as exc:  # no leader known within max_block_ms: a node down
                        failed(exc)
                        continue
                    sent.add_callback(confirmed)
                    sent.add_errback(failed)
                    self.produced += 1
                seq += 1
            producer.flush(timeout=40)
        finally:
            producer.close(timeout=10)

    # -- the faults ----------------------------------------------------------------------
    def _node_other_than_coordinator(self) -> int:
        coordinator = self.kafka.coordinator_of(self.settings.group)
        others = [n for n in range(self.kafka.nodes) if n != coordinator]
        return others[self.rng.randrange(len(others))]

    def _role(self, node: int) -> str:
        led = sorted(p for p, n in self.kafka.leaders(self.settings.topic).items() if n == node)
        coordinator = self.kafka.coordinator_of(self.settings.group) == node
        return f"node {node} ({'the coordinator, ' if coordinator else ''}leader of {led})"

    def _rule_for(self, episode: Episode, victim: Incarnation, node: int, hold_s: float, what: str,
                  apply: Callable[[str], Any]) -> Heal:
        """A proxy rule for the victim's connections to ``node``, removed after ``hold_s``."""
        episode.detail.append(f"{victim.name} ({victim.client}/{victim.protocol}): {what} {self._role(node)} "
                              f"for {hold_s:.2f} s")
        proxy, began = self.kafka.proxies[node], time.monotonic()
        apply(victim.client_id)

        def heal() -> None:
            time.sleep(max(0.0, began + hold_s - time.monotonic()))
            proxy.heal(victim.client_id)
        return heal

    def _cut_coordinator(self, episode: Episode) -> Heal:
        victim = self._member(own_fencing=True)
        hold = self.settings.session_ms / 1000 + self.rng.uniform(1.0, 4.0)
        # a consumer-protocol member learns its session from the group's configs after it joins;
        # until then it holds on until told it was fenced (documented): not a zombie under test
        time.sleep(max(0.0, victim.started_at + MEMBER_SETTLING_S - time.monotonic()))
        node = self.kafka.coordinator_of(self.settings.group)
        proxy = self.kafka.proxies[node]
        heal = self._rule_for(episode, victim, node, hold, "blackholed to", proxy.blackhole)
        cut = time.monotonic()

        def heal_and_note() -> None:
            heal()
            if self.kafka.coordinator_of(self.settings.group) == node:
                victim.cut_off.append((cut, time.monotonic()))  # the zombie's window, for checks.py
            else:  # the coordinator moved meanwhile: the member may have followed it, uncut
                episode.detail.append("the coordinator moved during the cut: not judged as a cut-off")
        return heal_and_note

    def _cut_broker(self, episode: Episode) -> Heal:
        victim, node = self._member(), self._node_other_than_coordinator()
        return self._rule_for(episode, victim, node, self.rng.uniform(2.0, 8.0), "blackholed to",
                              self.kafka.proxies[node].blackhole)

    def _delay_connections(self, episode: Episode) -> Heal:
        victim, node = self._member(), self.rng.randrange(self.kafka.nodes)
        delay_ms, hold = self.rng.randint(200, 2000), self.rng.uniform(2.0, 6.0)
        return self._rule_for(episode, victim, node, hold, f"{delay_ms} ms delay to",
                              lambda prefix: self.kafka.proxies[node].delay(prefix, delay_ms))

    def _refuse_connections(self, episode: Episode) -> Heal:
        victim, node = self._member(), self.rng.randrange(self.kafka.nodes)
        return self._rule_for(episode, victim, node, self.rng.uniform(1.0, 3.0), "connections refused by",
                              self.kafka.proxies[node].refuse)

    def _reset_connections(self, episode: Episode) -> Heal:
        victim, node, times = self._member(), self.rng.randrange(self.kafka.nodes), self.rng.randint(1, 3)
        episode.detail.append(f"{victim.name} ({victim.client}/{victim.protocol}): connections to "
                              f"{self._role(node)} reset {times} times, 0.5 s apart")
        proxy = self.kafka.proxies[node]

        def heal() -> None:
            for n in range(times):
                proxy.reset(victim.client_id)
                if n + 1 < times:
                    time.sleep(0.5)
        return heal

    def _close_member(self, episode: Episode) -> Heal:
        victim, wait = self._member(), self.rng.uniform(0.0, 1.0)
        episode.detail.append(f"close {victim.name} ({victim.client}/{victim.protocol}) with SIGTERM, "
                              f"restart {wait:.2f} s later")
        victim.close()

        def heal() -> None:
            time.sleep(wait)
            self.gone.append(victim)
            self.slots[victim.slot] = self._incarnation(victim.slot, len(self.gone))
        return heal

    def _kill_coordinator(self, episode: Episode) -> Heal:
        return self._kill_node(episode, self.kafka.coordinator_of(self.settings.group), failover=True)

    def _kill_leader(self, episode: Episode) -> Heal:
        # the group's coordinator stays: the group is whole at once, so no failover is measured
        return self._kill_node(episode, self._node_other_than_coordinator(), failover=False)

    def _kill_node(self, episode: Episode, node: int, failover: bool) -> Heal:
        """SIGKILL a node; restart it ``down`` seconds later, but not before the group is whole
        again on the two nodes left (its failover, from the kill: the controller fences the node
        after broker.session.timeout.ms and elects new leaders, the coordinator's among them, and
        the members find them), within the convergence bound; then the convergence after the
        restart is the episode's, as for every fault."""
        down, bound = self.rng.uniform(1.0, 10.0), self.settings.convergence_bound_s
        if node == self.kafka.active_controller():
            # the quorum first elects another controller (controller.quorum.fetch.timeout.ms and
            # an election), and only that one fences the node
            bound += CONTROLLER_ELECTION_S
        episode.detail.append(f"SIGKILL {self._role(node)}, restart {down:.2f} s later (once the group "
                              f"has recovered without it)")
        self.kafka.kill(node)
        killed = time.monotonic()

        def heal() -> None:
            if not (self._wait_converged(max(0.0, killed + down - time.monotonic()))
                    or self._wait_converged(max(0.0, killed + bound - time.monotonic()))):
                raise AssertionError(f"seed {self.settings.seed}: the group did not recover within {bound:.0f} s "
                                     f"of node {node}'s kill, with the node down: {self._state()}")
            if failover:
                self.failovers.append(self._converged_at - killed)
                episode.detail.append(f"the group whole again {self.failovers[-1]:.2f} s after the kill")
            # its partitions have new leaders before it comes back (the controller fences a dead
            # node only after the broker session): a restart before that would elect nobody
            if not wait_until(lambda: node not in (self._leaders() or {node: node}).values(),
                              max(0.0, killed + bound - time.monotonic()), interval_s=0.25):
                raise AssertionError(f"seed {self.settings.seed}: node {node} still led partitions of "
                                     f"{self.settings.topic} {bound:.0f} s after its kill: {self._leaders()}")
            episode.detail.append(f"its partitions led by others {time.monotonic() - killed:.2f} s after the kill")
            time.sleep(max(0.0, killed + down - time.monotonic()))
            self.kafka.start_node(node)
            self._preferred_leaders()
        return heal

    def _leaders(self) -> dict[int, int] | None:
        """The topic's partition leaders, as a running node's metadata says; None if none said."""
        try:
            return self.kafka.leaders(self.settings.topic, timeout_s=5)
        except Exception:  # every node asked was down or had no answer yet
            return None

    def _preferred_leaders(self) -> None:
        """Once the restarted node has caught up, each partition (the group's __consumer_offsets
        partition too) goes back to its preferred leader: a leader, maybe the coordinator, moves
        again, this time from a running node."""
        topics = [self.settings.topic, "__consumer_offsets"]
        wait_until(lambda: all(self.kafka.in_sync(t) for t in topics), 20, interval_s=0.5)
        try:  # best effort, below the admin client's own 10 s request timeout: no invariant rests on it
            admin = self.kafka.admin()
            try:
                admin.elect_leaders(0, topics, timeout_ms=5000, raise_errors=False)
            finally:
                admin.close()
        except Exception as exc:
            self.election_errors[type(exc).__name__] += 1

    # -- what the test prints ------------------------------------------------------------
    def figures(self) -> dict[str, Any]:
        s = self.settings
        return {"records_sent": self.produced, "records_confirmed": self.confirmed,
                "producer_errors": dict(self.producer_errors),
                "clients": {m.name: f"{m.client}/{m.protocol}" for m in self.slots},
                "coordinator_kills": len(self.failovers),
                "max_failover_s": round(max(self.failovers, default=0.0), 2),
                "failed_preferred_elections": dict(self.election_errors),
                "convergence_bound_s": s.convergence_bound_s, "group": s.group, "topic": s.topic}
