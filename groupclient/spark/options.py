"""Consumer configuration for Spark: a plain dict that travels to the executors.

Consumers are built inside the executors from this dict, never pickled.  So the dict holds only
plain values (no deserializers, no callbacks, no OpenTelemetry providers), it is checked on the
driver before any task starts, and the data source's string options are turned into the same dict
here.

One entry is the integration's, not a GroupConsumer setting: ``otel_setup``, the
``"package.module:function"`` each Python worker calls once before its first consumer, to set the
global OpenTelemetry providers there (a provider object cannot travel).  It is checked here and
run by telemetry.py; :func:`consumer_settings` leaves it out of what reaches ``GroupConsumer``.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from ..consumer.config import DEFAULTS, IGNORED, UNSUPPORTED, build_config
from ..errors import ConfigurationError
from .stop import StopWhen

log = logging.getLogger("groupclient.spark")

# settings whose values are Python objects: they cannot travel as plain data
_NOT_PLAIN = {"key_deserializer", "value_deserializer", "default_offset_commit_callback", "interceptors",
              "rebalance_event_callback", "tracer_provider", "meter_provider"}
_PROVIDERS = {"tracer_provider", "meter_provider"}
OTEL_SETUP = "otel_setup"
# "package.module:function" (the function may be an attribute path, as in entry points: "mod:obj.setup")
_SETUP_FORM = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
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
        if plain[key] is None:
            continue
        if key in _PROVIDERS:
            raise ConfigurationError(
                f"{key} cannot be used with groupclient.spark: a provider object cannot travel to the executors. "
                "Set otel_setup='package.module:function' instead: a function importable on the executors that "
                "sets the global providers (opentelemetry.trace.set_tracer_provider, "
                "opentelemetry.metrics.set_meter_provider) with your exporters; each Python worker calls it "
                "once, before its first consumer (docs/observability.md)")
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
    setup = plain.pop(OTEL_SETUP, None)
    build_config(plain)  # every other check GroupConsumer makes, now, on the driver
    if setup is not None:
        plain[OTEL_SETUP] = check_otel_setup(setup)
    return plain


def check_otel_setup(value: Any) -> str:
    """``value`` as an ``otel_setup``: of the form ``"package.module:function"`` and, when the
    module imports on the driver, naming a callable there.  Never calls it: the driver's
    providers are the application's own.  A module the driver cannot import is let through with
    a warning (it may be on the executors' path only)."""
    if not isinstance(value, str) or not _SETUP_FORM.fullmatch(value):
        raise ConfigurationError(f"otel_setup must be 'package.module:function' (a function the executors can "
                                 f"import, called with no arguments), not {value!r}")
    try:
        setup_function(value)
    except ImportError as exc:
        log.warning("otel_setup %r: %s on the driver; the executors must be able to import it", value, exc)
    return value


def setup_function(value: str) -> Callable[[], object]:
    """The function ``"package.module:function"`` names, imported.  ImportError when the module
    does not import; ConfigurationError when it has no such callable."""
    module_name, _, path = value.partition(":")
    found: Any = importlib.import_module(module_name)
    for part in path.split("."):
        if not hasattr(found, part):
            raise ConfigurationError(f"otel_setup {value!r}: {module_name} has no {path}")
        found = getattr(found, part)
    if not callable(found):
        raise ConfigurationError(f"otel_setup {value!r}: {path} is not a function")
    return cast("Callable[[], object]", found)


def consumer_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The GroupConsumer settings of ``config``: all but the integration's own (``otel_setup``)."""
    return {k: v for k, v in config.items() if k != OTEL_SETUP}


def without_group(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a consumer that reads assigned ranges and joins no group."""
    return {k: v for k, v in consumer_settings(config).items() if k not in ("group_id", "group_instance_id")}


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
        elif key == OTEL_SETUP:
            config[key] = value
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


def check_handler_arguments(handler: Any, stop: StopWhen, batch_format: str, formats: tuple[str, ...],
                            batch_records: int, batch_ms: int) -> None:
    """The checks a consuming job's own arguments get on the driver (ConfigurationError)."""
    if batch_format not in formats:
        raise ConfigurationError(f"batch_format must be one of {formats}, not {batch_format!r}")
    for label, value in (("batch_records", batch_records), ("batch_ms", batch_ms)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigurationError(f"{label} must be a positive integer, not {value!r}")
    if not callable(handler):
        raise ConfigurationError("handler must be a function taking one batch")
    if not isinstance(stop, StopWhen):
        raise ConfigurationError("stop must be a StopWhen")
