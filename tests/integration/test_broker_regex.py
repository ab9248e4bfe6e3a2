"""KIP-848's SubscribedTopicRegex as Kafka 4.4 compiles and matches it (RE2/J), and the embedded
coordinator beside it: the same raw ConsumerGroupHeartbeats to both, one table of expected answers
(recorded from Kafka 4.4.0).  Then the consumer: it refuses, before sending anything, exactly what
the broker would refuse, in RE2/J's words.

RE2/J is not Python's ``re``: ``\\Q...\\E``, POSIX and Unicode classes and flags in mid-pattern
are RE2/J's and not ``re``'s, ``a{,3}`` is literal text to RE2/J, look-around and back-references
are ``re``'s only.  A whole topic name must match.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator

import pytest
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from groupclient import GroupConsumer
from groupclient.errors import ConfigurationError
from groupclient.protocol.consumer_group_heartbeat import (
    JOIN_EPOCH, LEAVE_EPOCH, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, new_member_id,
)
from tests.integration import external
from tests.integration.kip848_wire import REBALANCE_TIMEOUT_MS, Coordinator, E, Scene, coordinator_of, opened_scene, unique
from tests.integration.peers import wait_until

pytestmark = pytest.mark.integration

# a pattern Kafka 4.4 refuses -> the end of its message (RE2/J's description)
REFUSED = {
    r"t\N{DIGIT ONE}": "invalid escape sequence",
    r"a(?=b)": "invalid or unsupported Perl syntax",
    "(": "missing closing )",
    ")": "regexp/syntax: internal error",
    "a**": "invalid nested repetition operator",
    "[z-a]": "invalid character class range",
    r"\1": "invalid escape sequence",
    "a{1001}": "invalid repeat count",
    "a{2,1}": "invalid repeat count",
    "(?P=n)": "invalid or unsupported Perl syntax",
    "(?#c)": "invalid or unsupported Perl syntax",
    r"\C": "invalid escape sequence",
    r"a\Z": "invalid escape sequence",
    "(?x) a": "invalid or unsupported Perl syntax",
    r"\p{Foo}": "invalid character class range",
    "[[:foo:]]": "invalid character class range",
    "a\\": "trailing backslash at end of expression",
    "[a": "missing closing ]",
    "*a": "missing argument to repetition operator",
    "(?P<n>a)(?P<n>b)": "duplicate capture group name",
    "(?<n>a)(?<n>b)": "duplicate capture group name",
    "(?P<n": "invalid named capture",
    "(?i": "invalid or unsupported Perl syntax",
}

# topics (after a per-test prefix) and, for each pattern (after the same prefix), those it matches
TOPICS = ("a.b", "axb", "12x", "aaa", "a", "ab1")
MATCHED = {
    r"\Qa.b\E": {"a.b"},
    "[[:digit:]]+x": {"12x"},
    r"\pL+": {"axb", "aaa", "a"},
    "a{,3}": set(),  # literal text, not a repetition
    "(?i)AAA": {"aaa"},  # a flag after the start
    "a.b": {"a.b", "axb"},
    "a|ab1": {"a", "ab1"},  # whole names only
    "(?P<n>a)(?<m>xb)": {"axb"},
}
SENTINEL = "sentinel"  # every pattern also matches the prefix's sentinel topic: resolved once it is assigned


@pytest.fixture
def scene(kip848_bootstrap: str) -> Iterator[Scene]:
    with opened_scene(kip848_bootstrap, unique("rx")) as scene:
        yield scene


def test_a_pattern_re2j_does_not_compile_is_refused_in_its_words(scene: Scene) -> None:
    """Kafka 4.4.0 answers each join with INVALID_REGULAR_EXPRESSION and "SubscribedTopicRegex `P`
    is not a valid regular expression: D." (D: RE2/J's description, the table's)."""
    answers = {}
    for pattern in REFUSED:
        beat = scene.member("M").join(subscribed_topic_names=None, subscribed_topic_regex=pattern)
        answers[pattern] = (beat.error, beat.message)
    assert answers == {p: (E.INVALID_REGULAR_EXPRESSION,
                           f"SubscribedTopicRegex `{p}` is not a valid regular expression: {d}.")
                       for p, d in REFUSED.items()}


def topic_names(wire: Coordinator, ids: set[uuid.UUID]) -> set[str]:
    answer = wire.call(MetadataRequest(version=12, topics=[MetadataRequest.MetadataRequestTopic(topic_id=i, name=None)
                                                           for i in sorted(ids)],
                                       allow_auto_topic_creation=False, include_topic_authorized_operations=False),
                       MetadataResponse)
    return {t.name for t in answer.topics}


def test_whole_topic_names_are_matched_as_re2j_matches_them(kip848_bootstrap: str) -> None:
    """Kafka 4.4.0: each pattern's member, alone in its group, is assigned the partitions of the
    table's topics (and of the sentinel topic every pattern also matches, which tells that the
    pattern was resolved)."""
    prefix = f"rx{uuid.uuid4().hex[:6]}-"
    for name in (*TOPICS, SENTINEL):
        external.create_topic(kip848_bootstrap, prefix + name, 1)
    got: dict[str, set[str]] = {}
    for body in MATCHED:
        group = unique("rxm")
        wire = coordinator_of(kip848_bootstrap, group)
        member_id = new_member_id(random.Random())
        regex = f"{prefix}(?:{body})|{prefix}{SENTINEL}"
        epoch = JOIN_EPOCH

        def resolved() -> bool:  # one heartbeat: the pattern's topics, once the sentinel is among them
            nonlocal epoch
            answer = wire.call(ConsumerGroupHeartbeatRequest(
                version=1, group_id=group, member_id=member_id, member_epoch=epoch,
                rebalance_timeout_ms=REBALANCE_TIMEOUT_MS, subscribed_topic_regex=regex,
                subscribed_topic_names=None if epoch else [], topic_partitions=[]), ConsumerGroupHeartbeatResponse)
            assert not answer.error_code, (body, answer)
            epoch = answer.member_epoch
            if answer.assignment is None:
                return False
            names = topic_names(wire, {tp.topic_id for tp in answer.assignment.topic_partitions})
            if prefix + SENTINEL not in names:
                return False
            got[body] = {n.removeprefix(prefix) for n in names} - {SENTINEL}
            return True

        try:
            assert wait_until(resolved, 30, interval_s=0.3), f"{body!r} was never resolved"
            wire.call(ConsumerGroupHeartbeatRequest(version=1, group_id=group, member_id=member_id,
                                                    member_epoch=LEAVE_EPOCH), ConsumerGroupHeartbeatResponse)
        finally:
            wire.close()
    assert got == MATCHED


@pytest.mark.parametrize("pattern", sorted(REFUSED))
def test_the_consumer_refuses_what_the_broker_would_before_sending_it(pattern: str) -> None:
    consumer = GroupConsumer(group_id="g", group_protocol="consumer", api_version=(4, 1))
    try:
        with pytest.raises(ConfigurationError, match="RE2/J") as refused:
            consumer.subscribe(pattern=pattern)
        assert f"({REFUSED[pattern]})" in str(refused.value)
        assert consumer.subscription() is None
    finally:
        consumer.close()


@pytest.mark.parametrize("pattern", sorted(MATCHED))
def test_the_consumer_sends_what_re2j_reads_even_where_python_would_not(pattern: str) -> None:
    consumer = GroupConsumer(group_id="g", group_protocol="consumer", api_version=(4, 1))
    try:
        consumer.subscribe(pattern=pattern)  # \Q..\E, [[:digit:]], \pL: not Python's re
        assert consumer.subscription() == set()
    finally:
        consumer.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol, pattern, refused", [
    ("consumer", r"\pL+", None),
    ("consumer", "a(?=b)", "invalid or unsupported Perl syntax"),
    ("classic", r"\pL+", "bad escape"),  # the client matches it, with Python's re
    ("classic", "a(?=b)", None),
])
async def test_groupclient_aio_checks_a_pattern_as_its_protocol_reads_it(protocol: str, pattern: str,
                                                                       refused: str | None) -> None:
    from groupclient.aio import AsyncGroupConsumer

    consumer = AsyncGroupConsumer(bootstrap_servers="127.0.0.1:9", group_id="g", group_protocol=protocol)
    if refused is None:
        consumer.subscribe(pattern=pattern)
    else:
        with pytest.raises(ConfigurationError, match=refused):
            consumer.subscribe(pattern=pattern)
