"""Property tests of the built-in assignors on random groups.

Groups have 1-12 members, 1-6 topics of 0-40 partitions, equal or random subscriptions, static
instance ids on some members, and racks on some.  Each test states a guarantee Kafka's assignors
make (validity, balance, stickiness, cooperative safety, generation rules, rack alignment) and
checks it on every drawn group.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.structs import TopicPartition as TP

from groupclient.assignors.registry import BUILT_IN
from groupclient.assignors import (
    AssignorError, ClusterView, CooperativeStickyAssignor, PartitionAssignor, RangeAssignor, RebalanceProtocol,
    RoundRobinAssignor, StickyAssignor, validate_assignment,
)
from groupclient.assignors.sticky import encode_sticky_user_data
from groupclient.protocol.consumer_protocol import Assignment, Subscription

EAGER = RebalanceProtocol.EAGER
COOPERATIVE = RebalanceProtocol.COOPERATIVE
RACKS = ("rack-a", "rack-b", "rack-c")
GHOST_TOPIC = "not-in-metadata"  # a topic some members subscribe to that the leader has no metadata for

PROPERTIES = settings(deadline=None, max_examples=80, database=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(deadline=None, max_examples=50, database=None, suppress_health_check=[HealthCheck.too_slow])

# every built-in assignor, from the registry's one table: a new one is held to these properties
ALL_ASSIGNORS: tuple[type[PartitionAssignor], ...] = tuple(BUILT_IN.values())
STICKY_ASSIGNORS: tuple[type[StickyAssignor], ...] = (StickyAssignor, CooperativeStickyAssignor)


@dataclass(frozen=True)
class Group:
    cluster: ClusterView
    subs: dict[str, Subscription]
    topics: list[str]  # the topics of the cluster
    rnd: random.Random  # for further random choices about this group (churn, claims)


@st.composite
def groups(draw: st.DrawFn, equal: bool | None = None, racks: bool | None = None,
           min_members: int = 1, max_members: int = 12) -> Group:
    """A random group.  ``equal``: every member subscribes to the same topics (None: either);
    ``racks``: members may send racks and partitions have replica racks (None: either)."""
    rnd = draw(st.randoms(use_true_random=False))
    topics = [f"topic-{i}" for i in range(draw(st.integers(1, 6)))]
    counts = {t: draw(st.integers(0, 40)) for t in topics}
    n_members = draw(st.integers(min_members, max_members))
    uniform = draw(st.booleans()) if equal is None else equal
    with_racks = draw(st.booleans()) if racks is None else racks
    ghost = draw(st.booleans()) and draw(st.booleans())  # a quarter of the groups

    def some_topics() -> list[str]:
        chosen = rnd.sample(topics, rnd.randint(1, len(topics)))
        return sorted(chosen + ([GHOST_TOPIC] if ghost else []))

    shared = some_topics()
    instance_numbers = rnd.sample(range(1000), n_members)  # instance ids in another order than member ids
    subs: dict[str, Subscription] = {}
    for i in range(n_members):
        instance = f"instance-{instance_numbers[i]:03d}" if rnd.random() < 0.3 else None
        rack = rnd.choice(RACKS + (None,)) if with_racks else None
        subs[f"member-{i:02d}"] = Subscription(shared if uniform else some_topics(), group_instance_id=instance,
                                               rack_id=rack)
    partition_racks: dict[str, list[frozenset[str]]] = {}
    if with_racks:
        for t in topics:
            partition_racks[t] = [frozenset(rnd.sample(RACKS, rnd.randint(1, 2))) for _ in range(counts[t])]
    return Group(ClusterView(counts, partition_racks), subs, topics, rnd)


# -- helpers -------------------------------------------------------------------------------------
def subscribed_partitions(cluster: ClusterView, subs: Mapping[str, Subscription]) -> set[TP]:
    counts = cluster.partitions_per_topic
    topics = {t for s in subs.values() for t in s.topics if t in counts}
    return {TP(t, p) for t in topics for p in range(counts[t])}


def loads(result: Mapping[str, Assignment], subs: Mapping[str, Subscription]) -> list[int]:
    return [len(result[m].partitions) if m in result else 0 for m in subs]


def spread(result: Mapping[str, Assignment], subs: Mapping[str, Subscription]) -> int:
    counts = loads(result, subs)
    return max(counts) - min(counts)


def owned_by(result: Mapping[str, Assignment], member: str) -> set[TP]:
    return set(result[member].partitions) if member in result else set()


def assert_each_partition_once(cluster: ClusterView, subs: Mapping[str, Subscription],
                               result: Mapping[str, Assignment]) -> None:
    """Independent of validate_assignment: every subscribed partition exactly once, each to a
    member that subscribes to its topic."""
    given = Counter(tp for a in result.values() for tp in a.partitions)
    assert set(given) == subscribed_partitions(cluster, subs)
    assert all(n == 1 for n in given.values()), [tp for tp, n in given.items() if n > 1]
    for member, assignment in result.items():
        assert member in subs
        assert all(tp.topic in subs[member].topics for tp in assignment.partitions), member


def with_owned(subs: Mapping[str, Subscription], owned: Mapping[str, set[TP]], generation: int,
               cooperative: bool) -> dict[str, Subscription]:
    """Each member reports ``owned[member]`` from ``generation``: as owned partitions (cooperative)
    or as StickyAssignorUserData (eager sticky)."""
    out = {}
    for member, sub in subs.items():
        mine = sorted(owned.get(member, set()))
        if cooperative:
            out[member] = replace(sub, owned_partitions=mine, generation_id=generation if mine else -1)
        else:
            out[member] = replace(sub, user_data=encode_sticky_user_data(mine, generation) if mine else None)
    return out


def churn(group: Group) -> dict[str, Subscription]:
    """Remove and add up to about 30% of the members (at least one of either; at least one member
    stays).  New members subscribe like the first member."""
    rnd = group.rnd
    members = list(group.subs)
    most = max(1, round(0.3 * len(members)))
    leaving, joining = rnd.randint(0, most), rnd.randint(0, most)
    if leaving + joining == 0:
        joining = 1
    removed = set(rnd.sample(members, min(len(members) - 1, leaving)))
    subs = {m: s for m, s in group.subs.items() if m not in removed}
    template = next(iter(group.subs.values()))
    for i in range(joining):
        rack = rnd.choice(RACKS + (None,)) if group.cluster.partition_racks else None
        subs[f"joiner-{i:02d}"] = Subscription(template.topics, rack_id=rack)
    return subs


# -- validity ------------------------------------------------------------------------------------
@PROPERTIES
@given(groups())
def test_every_assignor_assigns_each_subscribed_partition_exactly_once(group: Group) -> None:
    for cls in ALL_ASSIGNORS:
        assignor = cls()
        result = assignor.assign(group.cluster, group.subs)
        validate_assignment(assignor, group.cluster, group.subs, result, EAGER)
        assert_each_partition_once(group.cluster, group.subs, result)
        assert set(result) == set(group.subs), cls.name


@PROPERTIES
@given(groups(), st.integers(0, 3))
def test_sticky_assignors_stay_valid_whatever_members_claim(group: Group, generations: int) -> None:
    """Members claim random partitions, including ones that do not exist, of topics they do not
    subscribe to, and ones other members claim in the same or another generation."""
    rnd = group.rnd
    everything = [TP(t, p) for t in group.topics + [GHOST_TOPIC] for p in range(45)]
    claims = {m: set(rnd.sample(everything, rnd.randint(0, 30))) for m in group.subs}
    coop = {m: replace(s, owned_partitions=sorted(claims[m]), generation_id=rnd.randint(1, 1 + generations))
            for m, s in group.subs.items()}
    eager = {m: replace(s, user_data=encode_sticky_user_data(sorted(claims[m]), rnd.randint(1, 1 + generations)))
             for m, s in group.subs.items()}
    result = StickyAssignor().assign(group.cluster, eager)
    validate_assignment(StickyAssignor(), group.cluster, eager, result, EAGER)
    assert_each_partition_once(group.cluster, eager, result)
    assignor = CooperativeStickyAssignor()
    result = assignor.assign(group.cluster, coop)
    validate_assignment(assignor, group.cluster, coop, result, COOPERATIVE)


# -- balance -------------------------------------------------------------------------------------
@PROPERTIES
@given(groups(equal=True))
def test_equal_subscriptions_are_balanced_by_sticky_and_roundrobin(group: Group) -> None:
    for cls in (StickyAssignor, CooperativeStickyAssignor, RoundRobinAssignor):
        result = cls().assign(group.cluster, group.subs)
        assert spread(result, group.subs) <= 1, (cls.name, loads(result, group.subs))


def movable_imbalance(result: Mapping[str, Assignment], subs: Mapping[str, Subscription]) -> list[str]:
    """Pairs where a member holds a partition that a member with at least two fewer partitions
    subscribes to, so one move would even them out (Java's isBalanced)."""
    load = dict(zip(subs, loads(result, subs)))
    found = []
    for giver in subs:
        topics = {tp.topic for tp in owned_by(result, giver)}
        for taker, sub in subs.items():
            if load[giver] >= load[taker] + 2 and topics & set(sub.topics):
                found.append(f"{giver} ({load[giver]}) -> {taker} ({load[taker]})")
    return found


@PROPERTIES
@given(groups(), st.booleans())
def test_sticky_leaves_no_move_that_would_even_out_loads(group: Group, with_claims: bool) -> None:
    """With any subscriptions (the general path too), before and after members report what they
    owned, no partition could move to an eligible member with two or more fewer partitions."""
    subs = group.subs
    if with_claims:  # members report a previous assignment of another group shape
        previous = RoundRobinAssignor().assign(group.cluster, subs)
        subs = with_owned(subs, {m: owned_by(previous, m) for m in subs}, 3, cooperative=False)
    result = StickyAssignor().assign(group.cluster, subs)
    assert movable_imbalance(result, subs) == []


@PROPERTIES
@given(groups())
def test_range_balances_each_topic_among_its_subscribers(group: Group) -> None:
    result = RangeAssignor().assign(group.cluster, group.subs)
    for topic, count in group.cluster.partitions_per_topic.items():
        members = [m for m, s in group.subs.items() if topic in s.topics]
        per_member = [sum(1 for tp in result[m].partitions if tp.topic == topic) for m in members]
        if members:
            assert sum(per_member) == count
            assert max(per_member) - min(per_member) <= 1, (topic, per_member)


@PROPERTIES
@given(groups(racks=False))
def test_range_gives_consecutive_ranges_in_member_order_without_racks(group: Group) -> None:
    """Kafka's ranges: per topic, the first members in MemberInfo order (static members by
    instance id first) get one partition more, and each member's partitions are consecutive."""
    result = RangeAssignor().assign(group.cluster, group.subs)
    order = sorted(group.subs, key=lambda m: (0, group.subs[m].group_instance_id) if group.subs[m].group_instance_id
                   else (1, m))
    for topic, count in group.cluster.partitions_per_topic.items():
        members = [m for m in order if topic in group.subs[m].topics]
        start = 0
        for i, member in enumerate(members):
            size = count // len(members) + (1 if i < count % len(members) else 0)
            mine = sorted(tp.partition for tp in result[member].partitions if tp.topic == topic)
            assert mine == list(range(start, start + size)), (topic, member)
            start += size


# -- stickiness after churn ----------------------------------------------------------------------
@PROPERTIES
@given(groups(equal=True, min_members=2), st.sampled_from(STICKY_ASSIGNORS))
def test_survivors_keep_their_partitions_up_to_the_new_quota(group: Group, cls: type[StickyAssignor]) -> None:
    cooperative = cls is CooperativeStickyAssignor
    before = cls().assign(group.cluster, group.subs)
    subs = churn(group)
    if cooperative:
        rejoined = with_owned(subs, {m: owned_by(before, m) for m in subs}, 5, cooperative=True)
    else:  # what each survivor's own assignor sends after it was given its partitions
        rejoined = {}
        for member, sub in subs.items():
            own = StickyAssignor()
            if member in before:
                own.on_assignment(before[member], 5)
            rejoined[member] = replace(sub, user_data=own.subscription_user_data(set(sub.topics)))
    assignor = cls()
    after = assignor.assign(group.cluster, rejoined)
    validate_assignment(assignor, group.cluster, rejoined, after, COOPERATIVE if cooperative else EAGER)
    total = len(subscribed_partitions(group.cluster, subs))
    floor = total // len(subs)
    for member in subs:
        previous = owned_by(before, member)
        kept = owned_by(after, member) & previous
        assert len(kept) >= min(len(previous), floor), (member, len(previous), len(kept), floor)
    if not cooperative:
        assert spread(after, subs) <= 1


# -- cooperative rounds --------------------------------------------------------------------------
def cooperative_round(cluster: ClusterView, subs: Mapping[str, Subscription], owned: Mapping[str, set[TP]],
                      generation: int) -> dict[str, Assignment]:
    rejoined = with_owned(subs, owned, generation, cooperative=True)
    assignor = CooperativeStickyAssignor()
    result = assignor.assign(cluster, rejoined)
    validate_assignment(assignor, cluster, rejoined, result, COOPERATIVE)
    # nothing goes straight from one member to another (validate_assignment checks it too)
    for member, assignment in result.items():
        others = {tp for m in subs if m != member for tp in owned.get(m, set())}
        assert not (set(assignment.partitions) - owned.get(member, set())) & others, member
    return result


@PROPERTIES
@given(groups(equal=True, min_members=2))
def test_cooperative_sticky_settles_in_two_rounds_without_double_ownership(group: Group) -> None:
    first = CooperativeStickyAssignor().assign(group.cluster, group.subs)
    subs = churn(group)
    owned = {m: owned_by(first, m) for m in subs}
    round1 = cooperative_round(group.cluster, subs, owned, 3)
    # each member keeps what round 1 gave it; the partitions it lost it has revoked
    owned = {m: owned_by(round1, m) for m in subs}
    round2 = cooperative_round(group.cluster, subs, owned, 4)
    validate_assignment(CooperativeStickyAssignor(), group.cluster, subs, round2, EAGER)  # complete
    assert_each_partition_once(group.cluster, subs, round2)
    assert spread(round2, subs) <= 1
    for member in subs:
        assert owned[member] <= owned_by(round2, member), "round 2 takes nothing away"


@PROPERTIES
@given(groups(equal=False, min_members=2))
def test_cooperative_sticky_with_different_subscriptions_never_double_assigns(group: Group) -> None:
    """With different subscriptions the general path may take more rounds to settle (up to four
    in our runs; ten are allowed), but every round is safe, and the round in which nothing
    changes any more is complete."""
    first = CooperativeStickyAssignor().assign(group.cluster, group.subs)
    subs = dict(group.subs)
    for member in group.rnd.sample(list(subs), len(subs) // 3):  # some members change their topics
        subs[member] = replace(subs[member], topics=sorted(group.rnd.sample(group.topics, 1)))
    owned = {m: owned_by(first, m) for m in subs}
    for generation in range(3, 13):
        result = cooperative_round(group.cluster, subs, owned, generation)
        new = {m: owned_by(result, m) for m in subs}
        if new == owned:
            validate_assignment(CooperativeStickyAssignor(), group.cluster, subs, result, EAGER)
            break
        owned = new
    else:
        pytest.fail("cooperative-sticky did not settle in 10 rounds")


# -- generations ---------------------------------------------------------------------------------
def claim(sub: Subscription, partitions: list[TP], generation: int, cooperative: bool) -> Subscription:
    if cooperative:
        return replace(sub, owned_partitions=partitions, generation_id=generation)
    return replace(sub, user_data=encode_sticky_user_data(partitions, generation))


@pytest.mark.parametrize("cls", STICKY_ASSIGNORS)
def test_the_newer_generation_keeps_a_partition_claimed_twice(cls: type[StickyAssignor]) -> None:
    cooperative = cls is CooperativeStickyAssignor
    cluster = ClusterView({"t": 6})
    base = {m: Subscription(["t"]) for m in ("a", "b", "c")}
    for old, new in (("a", "b"), ("b", "a")):
        subs = dict(base)
        subs[old] = claim(base[old], [TP("t", 5), TP("t", 0)], 3, cooperative)
        subs[new] = claim(base[new], [TP("t", 5)], 4, cooperative)
        result = cls().assign(cluster, subs)
        assert TP("t", 5) in result[new].partitions, (old, new)
        assert TP("t", 0) in result[old].partitions
        validate_assignment(cls(), cluster, subs, result, COOPERATIVE if cooperative else EAGER)


@pytest.mark.parametrize("cls", STICKY_ASSIGNORS)
def test_a_partition_claimed_twice_in_one_generation_is_given_afresh(cls: type[StickyAssignor]) -> None:
    """Nobody keeps it by claim: the result is the one without that claim.  Under COOPERATIVE
    it must not go straight to a third member while the two claimants still hold it: it waits a
    round, until they have revoked it."""
    cooperative = cls is CooperativeStickyAssignor
    cluster = ClusterView({"t": 3})
    base = {m: Subscription(["t"]) for m in ("a", "b", "c")}
    afresh = cls().assign(cluster, base)
    assert afresh["a"].partitions == [TP("t", 0)]  # in member order: a gets t-0 when nobody owns anything
    contested = dict(base)
    contested["b"] = claim(base["b"], [TP("t", 0)], 4, cooperative)
    contested["c"] = claim(base["c"], [TP("t", 0)], 4, cooperative)
    result = cls().assign(cluster, contested)
    validate_assignment(cls(), cluster, contested, result, COOPERATIVE if cooperative else EAGER)
    if not cooperative:
        assert result == afresh
        return
    assert all(TP("t", 0) not in a.partitions for a in result.values())
    assert result["b"].partitions == [TP("t", 1)] and result["c"].partitions == [TP("t", 2)]
    # b and c revoke t-0; the next round gives it to a
    following = {"a": base["a"], "b": claim(base["b"], [TP("t", 1)], 5, True),
                 "c": claim(base["c"], [TP("t", 2)], 5, True)}
    assert cls().assign(cluster, following) == afresh


@FEW
@given(groups(min_members=2), st.sampled_from(STICKY_ASSIGNORS))
def test_claims_resolve_to_the_single_newest_claimant(group: Group, cls: type[StickyAssignor]) -> None:
    """Random overlapping claims in random generations give the same result as each partition
    claimed only by its single newest claimant (and by nobody when the newest generation is
    claimed twice)."""
    cooperative = cls is CooperativeStickyAssignor
    rnd = group.rnd
    subscribed = sorted(subscribed_partitions(group.cluster, group.subs))
    claims: dict[str, tuple[list[TP], int]] = {}
    for member, sub in group.subs.items():
        mine = [tp for tp in subscribed if tp.topic in sub.topics and rnd.random() < 0.4]
        claims[member] = (mine, rnd.randint(1, 3))
    newest: dict[TP, list[tuple[int, str]]] = {}
    for member, (mine, generation) in claims.items():
        for tp in mine:
            newest.setdefault(tp, []).append((generation, member))
    winners: dict[str, list[TP]] = {m: [] for m in group.subs}
    for tp, holders in newest.items():
        top = max(g for g, _ in holders)
        at_top = [m for g, m in holders if g == top]
        if len(at_top) == 1:
            winners[at_top[0]].append(tp)
    subs = {m: claim(s, *claims[m], cooperative) for m, s in group.subs.items()}
    resolved = {m: claim(s, winners[m], 9, cooperative) for m, s in group.subs.items()}
    result = cls().assign(group.cluster, subs)
    validate_assignment(cls(), group.cluster, subs, result, COOPERATIVE if cooperative else EAGER)
    if not cooperative:
        assert result == cls().assign(group.cluster, resolved)
    else:
        # the same final placement, except what cooperative must hold back for revocation
        expected = cls().assign(group.cluster, resolved)
        for member in group.subs:
            assert owned_by(result, member) <= owned_by(expected, member), member


# -- racks ---------------------------------------------------------------------------------------
@PROPERTIES
@given(groups(racks=True))
def test_range_ignores_racks_when_every_partition_is_in_every_rack(group: Group) -> None:
    member_racks = {s.rack_id for s in group.subs.values() if s.rack_id}
    everywhere = {t: [frozenset(member_racks | {"rack-z"})] * n for t, n in group.cluster.partitions_per_topic.items()}
    aware = RangeAssignor().assign(ClusterView(group.cluster.partitions_per_topic, everywhere), group.subs)
    unaware = RangeAssignor().assign(ClusterView(group.cluster.partitions_per_topic), group.subs)
    assert aware == unaware


@st.composite
def two_rack_groups(draw: st.DrawFn) -> Group:
    """k members in each of two racks; each topic has 2*k*q partitions, half of them (at random
    places) with their replicas in one rack, half in the other."""
    rnd = draw(st.randoms(use_true_random=False))
    k = draw(st.integers(1, 5))
    topics = [f"topic-{i}" for i in range(draw(st.integers(1, 4)))]
    counts = {t: 2 * k * draw(st.integers(0, 4)) for t in topics}
    racks: dict[str, list[frozenset[str]]] = {}
    for t in topics:
        places = ["rack-a"] * (counts[t] // 2) + ["rack-b"] * (counts[t] // 2)
        rnd.shuffle(places)
        racks[t] = [frozenset([r]) for r in places]
    member_racks = ["rack-a"] * k + ["rack-b"] * k
    rnd.shuffle(member_racks)
    subs = {f"member-{i:02d}": Subscription(topics, rack_id=r,
                                            group_instance_id=f"i-{rnd.randint(0, 99)}-{i}" if rnd.random() < .3 else None)
            for i, r in enumerate(member_racks)}
    return Group(ClusterView(counts, racks), subs, topics, rnd)


@PROPERTIES
@given(two_rack_groups(), st.sampled_from([RangeAssignor, StickyAssignor, CooperativeStickyAssignor]))
def test_partitions_land_in_their_rack_when_each_rack_has_room(group: Group, cls: type[PartitionAssignor]) -> None:
    result = cls().assign(group.cluster, group.subs)
    validate_assignment(cls(), group.cluster, group.subs, result, EAGER)
    for member, assignment in result.items():
        rack = group.subs[member].rack_id
        for tp in assignment.partitions:
            assert rack in group.cluster.racks_of(tp.topic, tp.partition), (member, rack, tp)
    assert spread(result, group.subs) == 0


@PROPERTIES
@given(groups(equal=True, racks=True))
def test_rack_aware_sticky_is_balanced_and_keeps_in_rack_partitions_first(group: Group) -> None:
    first = StickyAssignor().assign(group.cluster, group.subs)
    assert spread(first, group.subs) <= 1
    subs = churn(group)
    owned = {m: owned_by(first, m) for m in subs}
    rejoined = with_owned(subs, owned, 2, cooperative=False)
    after = StickyAssignor().assign(group.cluster, rejoined)
    assert spread(after, subs) <= 1
    floor = len(subscribed_partitions(group.cluster, subs)) // len(subs)
    for member, sub in subs.items():
        if sub.rack_id is None:
            continue
        in_rack = {tp for tp in owned[member] if sub.rack_id in group.cluster.racks_of(tp.topic, tp.partition)}
        # when it must give some up, it gives up out-of-rack partitions first
        assert len(owned_by(after, member) & in_rack) >= min(len(in_rack), floor), member


# -- validation catches what these properties rely on ------------------------------------------
def test_the_properties_helpers_can_fail() -> None:
    cluster = ClusterView({"t": 3})
    subs = {"a": Subscription(["t"]), "b": Subscription(["t"])}
    lopsided = {"a": Assignment([TP("t", 0), TP("t", 1), TP("t", 2)]), "b": Assignment([])}
    assert spread(lopsided, subs) == 3
    with pytest.raises(AssertionError):
        assert_each_partition_once(cluster, subs, {"a": Assignment([TP("t", 0), TP("t", 0)])})
    owned = {"a": {TP("t", 0)}}
    with pytest.raises(AssignorError, match="straight"):
        validate_assignment(CooperativeStickyAssignor(), cluster, with_owned(subs, owned, 1, True),
                            {"a": Assignment([TP("t", 1), TP("t", 2)]), "b": Assignment([TP("t", 0)])}, COOPERATIVE)
    group = Group(cluster, {f"m{i}": Subscription(["t"]) for i in range(10)}, ["t"], random.Random(1))
    churned = churn(group)
    left, joined = set(group.subs) - set(churned), set(churned) - set(group.subs)
    assert 1 <= len(left) + len(joined) and len(left) <= 3 and len(joined) <= 3
