"""GroupConsumer settings: kafka-python's names and defaults, checked up front.

Checked as kafka-python 3.0 checks them (unknown names, ``fetch_max_wait_ms <
request_timeout_ms < connections_max_idle_ms``, heartbeat below the session timeout,
``isolation_level`` by name, number or ``IsolationLevel``, group_instance_id's characters) and
more strictly where kafka-python would only fail later: types of numbers, bootstrap servers and
deserializers are checked here, and a misspelt name comes with the nearest real one.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Mapping
from typing import Any

from kafka.protocol.consumer import IsolationLevel

from ..errors import ArgumentTypeError, ConfigurationError
from ..network.client import NetworkConfig, parse_bootstrap
from ..network.security import security_from_config
from ..otel.providers import api_installed
from ..protocol.names import name_problem
from .deserializers import check_deserializer
from .settings import declared, names, used_defaults

log = logging.getLogger("groupclient.consumer")

# made from the one declaration of every setting, settings.ConsumerSettings
DEFAULTS: dict[str, Any] = used_defaults()
# kafka-python settings accepted so configurations carry over, but with no effect here.
IGNORED = set(names("ignored"))
# kafka-python settings for features this client does not have: only their "off" value is accepted.
UNSUPPORTED = names("unsupported")
_POSITIVE = [d.name for d in declared() if d.setting.check == "positive"]
_NON_NEGATIVE = [d.name for d in declared() if d.setting.check == "non_negative"]


_KNOWN = set(DEFAULTS) | IGNORED | set(UNSUPPORTED)


def _unknown_names_error(unknown: set[str]) -> ConfigurationError:
    hints = []
    for name in sorted(unknown):
        close = difflib.get_close_matches(name.replace(".", "_").replace("-", "_").lower(), _KNOWN, n=1, cutoff=0.75)
        hints.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    return ConfigurationError(f"unrecognized configs: {', '.join(hints)}")


def check_name(kind: str, name: Any) -> str:
    """Kafka's rule for topic names (Topic.java), also kafka-python's for group_instance_id."""
    if not isinstance(name, str):
        raise ConfigurationError(f"{kind} must be a string, not {type(name).__name__} {name!r}")
    problem = name_problem(name, kind)
    if problem is not None:
        raise ConfigurationError(problem)
    return name


def _check_bootstrap(value: Any) -> None:
    if isinstance(value, str):
        if value.strip():
            return
    elif isinstance(value, (list, tuple)) and value and all(isinstance(v, str) and v.strip() for v in value):
        return
    error = ArgumentTypeError if not isinstance(value, (str, list, tuple)) else ConfigurationError
    raise error(f"bootstrap_servers must be 'host[:port]' or a list of them, not {value!r}")


def _isolation_level(value: Any) -> str:
    try:
        level = IsolationLevel.build_from(value)
    except (ValueError, TypeError):
        raise ConfigurationError(
            f"unrecognized isolation_level {value!r}: use 'read_uncommitted' or 'read_committed'") from None
    return "read_committed" if level == IsolationLevel.READ_COMMITTED else "read_uncommitted"


def default_config() -> dict[str, Any]:
    """Every setting kafka-python's KafkaConsumer knows, with groupclient's default (kafka-python's
    for those accepted and ignored), plus groupclient's own: ``GroupConsumer.DEFAULT_CONFIG``."""
    from kafka.consumer.group import KafkaConsumer

    theirs = KafkaConsumer.DEFAULT_CONFIG
    return {**{k: theirs[k] for k in sorted(IGNORED | set(UNSUPPORTED)) if k in theirs},
            **{k: v for k, v in UNSUPPORTED.items() if k not in theirs}, **DEFAULTS}


# settings only the classic protocol uses: the consumer protocol's are the broker's (Java's
# ConsumerConfig refuses them too, KAFKA-17338)
CLASSIC_ONLY = ("partition_assignment_strategy", "heartbeat_interval_ms", "session_timeout_ms")


def _check_group_protocol(given: Mapping[str, Any], config: dict[str, Any]) -> None:
    protocol = config["group_protocol"]
    if not isinstance(protocol, str) or protocol.lower() not in ("classic", "consumer"):
        raise ConfigurationError(f"group_protocol must be 'classic' or 'consumer', not {protocol!r}")
    config["group_protocol"] = protocol = protocol.lower()
    assignor = config["group_remote_assignor"]
    if protocol == "consumer":
        invalid = [key for key in CLASSIC_ONLY if key in given]
        if invalid:
            raise ConfigurationError(
                f"{', '.join(invalid)} cannot be set when group_protocol='consumer': under the consumer group "
                "protocol the broker assigns the partitions (group_remote_assignor picks its assignor) and sets "
                "the session timeout and heartbeat interval (group.consumer.session.timeout.ms, "
                "group.consumer.heartbeat.interval.ms); remove them, or use group_protocol='classic'")
        if assignor is not None and (not isinstance(assignor, str) or not assignor.strip()):
            raise ConfigurationError(f"group_remote_assignor must be a non-empty assignor name or None, not {assignor!r}")
    elif assignor is not None:
        raise ConfigurationError("group_remote_assignor cannot be set when group_protocol='classic': the classic "
                                 "protocol's assignors run in the members (partition_assignment_strategy)")


def build_config(configs: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(configs) - _KNOWN
    if unknown:
        raise _unknown_names_error(unknown)
    for key, off in UNSUPPORTED.items():
        if key in configs and configs[key] != off:
            raise ConfigurationError(f"{key} is not supported by groupclient (SASL mechanisms: PLAIN, "
                                     f"SCRAM-SHA-256, SCRAM-SHA-512; no proxies)")
    config = {**DEFAULTS, **{k: v for k, v in configs.items() if k in DEFAULTS}}
    deprecated = {"smallest": "earliest", "largest": "latest"}
    config["auto_offset_reset"] = deprecated.get(config["auto_offset_reset"], config["auto_offset_reset"])
    if config["auto_offset_reset"] not in ("earliest", "latest", "none"):
        raise ConfigurationError(f"auto_offset_reset must be 'earliest', 'latest' or 'none', "
                                 f"not {config['auto_offset_reset']!r}")
    config["isolation_level"] = _isolation_level(config["isolation_level"])
    _check_bootstrap(config["bootstrap_servers"])
    for key in ("key_deserializer", "value_deserializer"):
        check_deserializer(key, config[key])
    for key in _POSITIVE:
        value = config[key]
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ConfigurationError(f"{key} must be a positive integer, not {value!r}")
    for key in _NON_NEGATIVE:
        value = config[key]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigurationError(f"{key} must be a non-negative integer, not {value!r}")
    if not config["fetch_max_wait_ms"] < config["request_timeout_ms"] < config["connections_max_idle_ms"]:
        raise ConfigurationError(
            f"connections_max_idle_ms ({config['connections_max_idle_ms']}) must be larger than request_timeout_ms "
            f"({config['request_timeout_ms']}) which must be larger than fetch_max_wait_ms ({config['fetch_max_wait_ms']})")
    _check_group_protocol(configs, config)
    if config["heartbeat_interval_ms"] >= config["session_timeout_ms"]:
        raise ConfigurationError(f"heartbeat_interval_ms ({config['heartbeat_interval_ms']}) must be lower than "
                                 f"session_timeout_ms ({config['session_timeout_ms']})")
    if (config["group_id"] is not None and config["group_protocol"] == "classic"
            and config["heartbeat_interval_ms"] > config["session_timeout_ms"] / 3):
        log.warning("heartbeat_interval_ms is high relative to session_timeout_ms (%s v %s): one lost heartbeat "
                    "may cost the member its partitions; a third of the session timeout or less is usual",
                    config["heartbeat_interval_ms"], config["session_timeout_ms"])
    timeout = config["consumer_timeout_ms"]
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
        raise ConfigurationError(f"consumer_timeout_ms must be a non-negative number, not {timeout!r}")
    _check_api_version(config["api_version"])
    if config["group_instance_id"] is not None:
        if config["group_id"] is None:
            raise ConfigurationError("group_instance_id requires group_id")
        check_name("group_instance_id", config["group_instance_id"])
    if config["client_rack"] == "":
        config["client_rack"] = None  # kafka-python's default for "no rack"
    if config["client_rack"] is not None and (not isinstance(config["client_rack"], str) or not config["client_rack"]):
        raise ConfigurationError(f"client_rack must be a non-empty string or None, not {config['client_rack']!r}")
    if config["group_id"] is not None and (not isinstance(config["group_id"], str) or not config["group_id"]):
        raise ConfigurationError("group_id must be a non-empty string or None")
    interceptors = config["interceptors"]
    if interceptors is None:
        interceptors = ()
    if not isinstance(interceptors, (list, tuple)):
        raise ConfigurationError(f"interceptors must be a list, not {type(interceptors).__name__}")
    config["interceptors"] = tuple(interceptors)
    callback = config["rebalance_event_callback"]
    if callback is not None and not callable(callback):
        raise ConfigurationError("rebalance_event_callback must be callable or None")
    for name, method in (("tracer_provider", "get_tracer"), ("meter_provider", "get_meter")):
        provider = config[name]
        if provider is not None and not callable(getattr(provider, method, None)):
            raise ConfigurationError(f"{name} must be an OpenTelemetry {name.split('_')[0].title()}Provider "
                                     f"(with {method}()) or None, not {type(provider).__name__}")
        if provider is not None and not api_installed():
            raise ConfigurationError(f"{name} needs the OpenTelemetry API: pip install 'groupclient[otel]'")
    return config


def _check_api_version(value: Any) -> None:
    if value is None or (isinstance(value, tuple) and value and all(isinstance(v, int) for v in value)):
        return
    if isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)*", value):
        return
    raise ConfigurationError(f"api_version must be None, a tuple of ints or a 'x.y.z' string, not {value!r}")


def network_config(config: Mapping[str, Any]) -> NetworkConfig:
    """The network client's settings of a checked configuration (GroupConsumer's or
    ShareConsumer's): TLS and SASL first, so that a bad one raises before anything starts, then
    the bootstrap servers (ConfigurationError naming a malformed one)."""
    security = security_from_config(config)
    try:
        bootstrap = parse_bootstrap(config["bootstrap_servers"])
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    return NetworkConfig(
        bootstrap, config["client_id"], config["request_timeout_ms"], config["reconnect_backoff_ms"],
        config["reconnect_backoff_max_ms"], config["max_in_flight_requests_per_connection"],
        config["metadata_max_age_ms"], config["allow_auto_create_topics"], config["retry_backoff_ms"], security)
