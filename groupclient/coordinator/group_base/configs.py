"""A group's own configs (Kafka 4.4's ``GroupConfig``): one table of their names, types, Kafka's
defaults and bounds; how a group's stored configs are checked, with Kafka's messages; what they
read as; and what a consumer group's members are held to when its group sets its own.

A group's configs are strings by name, as IncrementalAlterConfigs sets them and the store keeps
them (``storage/group_store.py``).  They are checked whole, after every change, as Kafka's
controller checks a GROUP resource (``ControllerConfigurationValidator`` → ``GroupConfig.validate``):

1. every name must be one of the table's (internal ones too: Kafka takes them);
2. ``streams.rack.aware.assignment.tags`` must not repeat a tag;
3. each value must parse as its type and pass its own check, in the table's order (Kafka's
   ``ConfigDef.parse``: "Invalid value X for configuration K: ...");
4. each bounded value must lie within the broker's bounds (``group.consumer.min.*`` and
   ``group.consumer.max.*`` from :class:`CoordinatorConfig`; the share and streams bounds at
   Kafka's defaults, which this coordinator does not take as settings);
5. a session timeout must exceed its heartbeat interval, the broker's value standing in for the
   one the group does not set;
6. a dead-letter topic must not start with ``__``.

A stored value is then used clamped to the broker's bounds of the moment (Kafka's
``GroupConfig.evaluate``): a coordinator restarted with narrower bounds holds groups to them.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...error_codes import ErrorCode
from ..config import CoordinatorConfig

_INT_MAX = 2**31 - 1
_LONG_MAX = 2**63 - 1


class ConfigKind(enum.IntEnum):
    """A config's type, by the number DescribeConfigs answers it with (``ConfigType``)."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    LONG = 5
    LIST = 7


@dataclass(frozen=True)
class GroupConfigKey:
    """One group config: Kafka's name, type and default, its own lower limit or allowed strings,
    whether Kafka keeps it internal (not described unless a group sets it), and the broker
    setting that gives its default (its synonym; None: Kafka's default stands)."""

    name: str
    kind: ConfigKind
    default: str | None
    at_least: int | None = None
    one_of: tuple[str, ...] = ()
    internal: bool = False
    broker_setting: str | None = None


def _key(name: str, kind: ConfigKind, default: str | None, at_least: int | None = None,
         broker: str | None = None, **more: Any) -> GroupConfigKey:
    return GroupConfigKey(name, kind, default, at_least, broker_setting=broker, **more)


I, S, B, L, LONG = ConfigKind.INT, ConfigKind.STRING, ConfigKind.BOOLEAN, ConfigKind.LIST, ConfigKind.LONG
# Kafka 4.4's GroupConfig.CONFIG_DEF, in its order (the order values are parsed and checked in)
GROUP_CONFIG_KEYS: tuple[GroupConfigKey, ...] = (
    _key("consumer.session.timeout.ms", I, "45000", 1, "group.consumer.session.timeout.ms"),
    _key("consumer.heartbeat.interval.ms", I, "5000", 1, "group.consumer.heartbeat.interval.ms"),
    _key("consumer.assignment.interval.ms", I, "1000", 0, "group.consumer.assignment.interval.ms"),
    _key("consumer.assignor.offload.enable", B, "true", None, "group.consumer.assignor.offload.enable", internal=True),
    _key("share.session.timeout.ms", I, "45000", 1, "group.share.session.timeout.ms"),
    _key("share.heartbeat.interval.ms", I, "5000", 1, "group.share.heartbeat.interval.ms"),
    _key("share.record.lock.duration.ms", I, "30000", 1000, "group.share.record.lock.duration.ms"),
    _key("share.delivery.count.limit", I, "5", 2, "group.share.delivery.count.limit"),
    _key("share.partition.max.record.locks", I, "2000", 100, "group.share.partition.max.record.locks"),
    _key("share.auto.offset.reset", S, "latest"),
    _key("share.isolation.level", S, "read_uncommitted", one_of=("read_committed", "read_uncommitted")),
    _key("share.renew.acknowledge.enable", B, "true"),
    _key("share.assignment.interval.ms", I, "1000", 0, "group.share.assignment.interval.ms"),
    _key("share.assignor.offload.enable", B, "true", None, "group.share.assignor.offload.enable", internal=True),
    _key("streams.session.timeout.ms", I, "45000", 1, "group.streams.session.timeout.ms"),
    _key("streams.heartbeat.interval.ms", I, "5000", 1, "group.streams.heartbeat.interval.ms"),
    _key("streams.num.standby.replicas", I, "0", 0, "group.streams.num.standby.replicas"),
    _key("streams.initial.rebalance.delay.ms", I, "3000", 0, "group.streams.initial.rebalance.delay.ms"),
    _key("streams.assignment.interval.ms", I, "1000", 0, "group.streams.assignment.interval.ms"),
    _key("streams.assignor.offload.enable", B, "true", None, "group.streams.assignor.offload.enable", internal=True),
    _key("streams.task.offset.interval.ms", I, "60000", 1, "group.streams.task.offset.interval.ms", internal=True),
    _key("streams.num.warmup.replicas", I, "2", 0, "group.streams.num.warmup.replicas", internal=True),
    _key("streams.rack.aware.assignment.tags", L, "", None, "group.streams.rack.aware.assignment.tags"),
    _key("streams.acceptable.recovery.lag", LONG, "10000", 0, "group.streams.acceptable.recovery.lag", internal=True),
    # Kafka's default is none: the first of the broker's group.streams.assignors stands
    _key("streams.assignor.name", S, None, None, "group.streams.assignors"),
    _key("errors.deadletterqueue.topic.name", S, ""),
    _key("errors.deadletterqueue.copy.record.enable", B, "false"),
)
GROUP_CONFIGS: dict[str, GroupConfigKey] = {key.name: key for key in GROUP_CONFIG_KEYS}
STREAMS_ASSIGNORS = ("sticky",)  # group.streams.assignors: Kafka's built-in task assignors

# the coordinator's settings for the consumer.* configs: (value, lower bound, upper bound)
_CONSUMER_SETTINGS = {
    "consumer.session.timeout.ms": "group_consumer_{}session_timeout_ms",
    "consumer.heartbeat.interval.ms": "group_consumer_{}heartbeat_interval_ms",
    "consumer.assignment.interval.ms": "group_consumer_{}assignment_interval_ms",
}
# the broker's bounds this coordinator does not take as settings, at Kafka's defaults: (min, max),
# None where Kafka checks one side only
_FIXED_BOUNDS: dict[str, tuple[int | None, int | None]] = {
    "share.heartbeat.interval.ms": (5000, 15000),
    "share.session.timeout.ms": (45000, 60000),
    "share.record.lock.duration.ms": (15000, 60000),
    "share.delivery.count.limit": (2, 10),
    "share.partition.max.record.locks": (100, 4000),
    "share.assignment.interval.ms": (0, 15000),
    "streams.heartbeat.interval.ms": (5000, 15000),
    "streams.session.timeout.ms": (45000, 60000),
    "streams.num.standby.replicas": (None, 2),
    "streams.assignment.interval.ms": (0, 15000),
    "streams.task.offset.interval.ms": (15000, None),
    "streams.num.warmup.replicas": (None, 20),
}
_BOUNDED_ORDER = ("consumer.heartbeat.interval.ms", "consumer.session.timeout.ms", "consumer.assignment.interval.ms",
                  "share.heartbeat.interval.ms", "share.session.timeout.ms", "share.record.lock.duration.ms",
                  "share.delivery.count.limit", "share.partition.max.record.locks", "share.assignment.interval.ms",
                  "streams.heartbeat.interval.ms", "streams.session.timeout.ms", "streams.num.standby.replicas",
                  "streams.assignment.interval.ms", "streams.task.offset.interval.ms", "streams.num.warmup.replicas")
# (session, heartbeat) pairs, and the broker's values where the coordinator takes none
_SESSION_OVER_HEARTBEAT = (("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
                           ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
                           ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"))
_OFFSET_RESET_MESSAGE = ("Invalid value `{}` for configuration share.auto.offset.reset. The value must be either "
                         "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")
# java.time.Duration.parse's grammar
_DURATION = re.compile(r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?"
                       r"(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?", re.IGNORECASE | re.ASCII)
_NUMBER = re.compile(r"[-+]?[0-9]+", re.ASCII)


class GroupConfigError(Exception):
    """A group's configs refused: the error code and Kafka's message for the answer."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def _invalid(message: str) -> GroupConfigError:
    return GroupConfigError(ErrorCode.INVALID_CONFIG, message)


def kafka_default(name: str) -> str | None:
    """Kafka's default for the broker setting behind a group config (its own default if none)."""
    return STREAMS_ASSIGNORS[0] if name == "streams.assignor.name" else GROUP_CONFIGS[name].default


def broker_value(name: str, config: CoordinatorConfig) -> str | None:
    """The broker's value for a group config nobody set on the group: the coordinator's setting
    for the consumer.* ones, Kafka's default for the rest."""
    field = _CONSUMER_SETTINGS.get(name)
    return str(getattr(config, field.format(""))) if field is not None else kafka_default(name)


def _broker_int(name: str, config: CoordinatorConfig) -> int:
    return int(broker_value(name, config) or "0")  # every int config has a value


def bounds(name: str, config: CoordinatorConfig) -> tuple[int | None, int | None]:
    """The broker's (min, max) for a group config (None: no bound that side)."""
    field = _CONSUMER_SETTINGS.get(name)
    if field is not None:
        return getattr(config, field.format("min_")), getattr(config, field.format("max_"))
    return _FIXED_BOUNDS.get(name, (None, None))


def parse(key: GroupConfigKey, raw: str) -> Any:
    """A value as Kafka's ``ConfigDef`` parses and checks it on its own (ConfigException's
    message as GroupConfigError)."""
    def refused(message: str, shown: object = raw) -> GroupConfigError:
        return _invalid(f"Invalid value {shown} for configuration {key.name}: {message}")

    text = raw.strip()
    value: Any
    if key.kind in (ConfigKind.INT, ConfigKind.LONG):
        top = _INT_MAX if key.kind is ConfigKind.INT else _LONG_MAX
        if not _NUMBER.fullmatch(text) or not -top - 1 <= int(text) <= top:
            raise refused(f"Not a number of type {key.kind.name}")
        value = int(text)
        if key.at_least is not None and value < key.at_least:
            raise refused(f"Value must be at least {key.at_least}", value)
    elif key.kind is ConfigKind.BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise refused("Expected value to be either true or false")
        value = text.lower() == "true"
    elif key.kind is ConfigKind.LIST:
        value = re.split(r"\s*,\s*", text) if text else []
    else:
        value = text
        if key.one_of and value not in key.one_of:
            raise refused(f"String must be one of: {', '.join(key.one_of)}", value)
        if key.name == "share.auto.offset.reset" and not _valid_offset_reset(value):
            raise refused(_OFFSET_RESET_MESSAGE.format(value), value)
    return value


def duration_ns(text: str) -> int | None:
    """An ISO-8601 duration (``PnDTnHnMn.nS``, as Java's ``Duration.parse`` reads it) in
    nanoseconds; None when it is not one."""
    match = _DURATION.fullmatch(text)
    if match is None or (match.group(3) or "").upper() == "T" or not (match.group(2) or match.group(3)):
        return None
    negate = -1 if match.group(1) == "-" else 1
    units = ((2, 86400), (4, 3600), (5, 60), (6, 1))
    seconds = sum(int(match.group(i)) * scale for i, scale in units if match.group(i))
    nanos = int((match.group(7) or "").ljust(9, "0")) * (-1 if (match.group(6) or "").startswith("-") else 1)
    return negate * (seconds * 10**9 + nanos)


def _valid_offset_reset(value: str) -> bool:
    """Kafka's ShareGroupAutoOffsetResetStrategy: earliest, latest (any case), or by_duration:
    and a non-negative ISO-8601 duration."""
    if value.lower().startswith("by_duration:"):
        nanos = duration_ns(value[len("by_duration:"):])
        return nanos is not None and nanos >= 0
    return value.lower() in ("earliest", "latest")


def as_text(key: GroupConfigKey, value: Any) -> str:
    """A parsed value as DescribeConfigs shows it (Kafka's ``ConfigDef.convertToString``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


def validate(configs: Mapping[str, str], config: CoordinatorConfig) -> None:
    """Check a group's whole stored configs as Kafka 4.4 does (the module's steps 1-6); raises
    GroupConfigError with Kafka's message for the first thing wrong."""
    for name in configs:
        if name not in GROUP_CONFIGS:
            raise _invalid(f"Unknown group config name: {name}")
    tags = configs.get("streams.rack.aware.assignment.tags")
    if tags is not None and tags.strip():
        listed = re.split(r"\s*,\s*", tags.strip())
        if len(set(listed)) != len(listed):
            raise _invalid("streams.rack.aware.assignment.tags must not contain duplicate tag keys.")
    parsed = {key.name: parse(key, configs[key.name]) for key in GROUP_CONFIG_KEYS if key.name in configs}
    for name in _BOUNDED_ORDER:
        if name in parsed:
            _check_bounds(name, parsed[name], *bounds(name, config))
    assignor = parsed.get("streams.assignor.name")
    if assignor is not None and assignor not in STREAMS_ASSIGNORS:
        raise _invalid(f"streams.assignor.name '{assignor}' is not a registered task assignor. Registered assignors "
                       f"are: [{', '.join(STREAMS_ASSIGNORS)}].")
    for session, heartbeat in _SESSION_OVER_HEARTBEAT:
        if session in parsed or heartbeat in parsed:
            session_ms = parsed.get(session, _broker_int(session, config))
            heartbeat_ms = parsed.get(heartbeat, _broker_int(heartbeat, config))
            if session_ms <= heartbeat_ms:
                raise _invalid(f"{session} must be greater than {heartbeat}")
    if str(parsed.get("errors.deadletterqueue.topic.name", "")).startswith("__"):
        raise _invalid("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")


def _check_bounds(name: str, value: int, low: int | None, high: int | None) -> None:
    if low is not None and high is not None:
        if not low <= value <= high:
            raise _invalid(f"{name} must be in the range {low} to {high} inclusive.")
    elif high is not None and value > high:
        raise _invalid(f"{name} must be less than or equal to {high}")
    elif low is not None and value < low:
        raise _invalid(f"{name} must be greater than or equal to {low}")


def effective_int(configs: Mapping[str, str], name: str, config: CoordinatorConfig) -> int:
    """What a group is held to for one of its integer configs (a time, a count): its own value
    clamped to the broker's bounds now, or the broker's value when it sets none."""
    raw = configs.get(name)
    if raw is None:
        return _broker_int(name, config)
    low, high = bounds(name, config)
    value: int = parse(GROUP_CONFIGS[name], raw)
    return max(low if low is not None else value, min(high if high is not None else value, value))
