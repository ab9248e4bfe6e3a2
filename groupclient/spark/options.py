"""Consumer configuration for Spark: a plain dict that travels to the executors.

Consumers are built inside the executors from this dict, never pickled.  So the dict holds only
plain values (no deserializers, no callbacks), it is checked on the driver before any task starts,
and the data source's string options are turned into the same dict here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..consumer.config import DEFAULTS, IGNORED, UNSUPPORTED, build_config
from ..errors import ConfigurationError

# settings whose values are Python objects: they cannot travel as plain data
_NOT_PLAIN = {"key_deserializer", "value_deserializer", "default_offset_commit_callback", "interceptors",
              "rebalance_event_callback"}
# the integration commits after delivery; a consumer that also committed on its own would
# commit records Spark has not received yet
_OWNED = {"enable_auto_commit"}
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def topic_list(topics: Iterable[str] | str) -> list[str]:
    names = [t.strip() for t in topics.split(",")] if isinstance(topics, str) else list(topics)
    if not names or any(not isinstance(t, str) or not t for t in names):
        raise ConfigurationError(f"topics must be one or more non-empty names, not {topics!r}")
    return sorted(set(names))


def consumer_config(config: Mapping[str, Any], *, group: bool = True) -> dict[str, Any]:
    """Check ``config`` as GroupConsumer settings and return the plain dict the executors use.

    Raises ConfigurationError on the driver for what would otherwise fail in every task."""
    if not isinstance(config, Mapping):
        raise ConfigurationError(f"the consumer configuration must be a dict, not {type(config).__name__}")
    plain = dict(config)
    for key in sorted(_NOT_PLAIN & set(plain)):
        if plain[key] is not None:
            raise ConfigurationError(
                f"{key} cannot be used with groupclient.spark: the configuration travels to the executors "
                "as plain data; records arrive as binary key and value columns, decode them in Spark")
    if plain.get("enable_auto_commit"):
        raise ConfigurationError(
            "enable_auto_commit must be False (or left out) with groupclient.spark: offsets are committed "
            "after the records were delivered to Spark")
    if plain.get("group_instance_id") is not None:
        raise ConfigurationError(
            "group_instance_id cannot be used with groupclient.spark: every task gets the same configuration, "
            "so the members would share one static identity and fence each other")
    if group and not plain.get("group_id"):
        raise ConfigurationError("group_id is required: the executors consume as members of a consumer group")
    plain["enable_auto_commit"] = False
    build_config(plain)  # every other check GroupConsumer makes, now, on the driver
    return plain


def without_group(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a consumer that reads assigned ranges and joins no group."""
    return {k: v for k, v in config.items() if k not in ("group_id", "group_instance_id")}


def parse_options(options: Mapping[str, str]) -> tuple[list[str], dict[str, Any]]:
    """The data source's options (all strings) as (topics, consumer config).

    ``topics`` (or ``subscribe``) names the topics; every other option is a GroupConsumer
    setting, written ``group_id`` or ``group.id`` (a ``kafka.`` prefix is dropped), its value
    converted to the setting's type.  Options of the data source itself are left out."""
    topics: list[str] | None = None
    config: dict[str, Any] = {}
    for raw_key, value in options.items():
        key = raw_key.lower()
        if key.startswith("kafka."):
            key = key[len("kafka."):]
        key = key.replace(".", "_")
        if key in ("topics", "subscribe"):
            topics = topic_list(value)
        elif key in SOURCE_OPTIONS or key == "path":
            continue
        elif key in DEFAULTS or key in IGNORED or key in UNSUPPORTED:
            config[key] = _convert(key, value)
        else:
            raise ConfigurationError(f"unknown option {raw_key!r} for the groupclient data source")
    if topics is None:
        raise ConfigurationError("the groupclient data source needs the option 'topics' (comma-separated names)")
    return topics, consumer_config(config)


# options read by the data source, not by the consumer
SOURCE_OPTIONS = {"max_records_per_trigger", "read_timeout_ms", "join_timeout_ms"}


def source_int(options: Mapping[str, str], key: str, default: int) -> int:
    for raw_key, value in options.items():
        name = raw_key.lower()
        name = name[len("kafka."):] if name.startswith("kafka.") else name
        if name.replace(".", "_") == key:
            return _positive_int(key, value)
    return default


def _convert(key: str, value: str) -> Any:
    default = DEFAULTS.get(key, UNSUPPORTED.get(key))
    if isinstance(default, bool):
        lowered = str(value).strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ConfigurationError(f"option {key} must be true or false, not {value!r}")
    if isinstance(default, int):
        try:
            return int(value)
        except ValueError:
            raise ConfigurationError(f"option {key} must be an integer, not {value!r}") from None
    if isinstance(default, float):
        try:
            return float(value)
        except ValueError:
            raise ConfigurationError(f"option {key} must be a number, not {value!r}") from None
    if isinstance(default, tuple):
        return tuple(part.strip() for part in str(value).split(",") if part.strip())
    return value


def _positive_int(key: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ConfigurationError(f"option {key} must be a positive integer, not {value!r}") from None
    if number <= 0:
        raise ConfigurationError(f"option {key} must be a positive integer, not {value!r}")
    return number
