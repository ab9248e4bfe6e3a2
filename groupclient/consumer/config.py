"""GroupConsumer settings: kafka-python's names and defaults, checked up front."""

from __future__ import annotations

import math
from typing import Any

from .. import __version__
from ..errors import ConfigurationError

DEFAULTS: dict[str, Any] = {
    "bootstrap_servers": "localhost",
    "client_id": f"groupclient-{__version__}",
    "group_id": None,
    "group_instance_id": None,
    "client_rack": None,
    "key_deserializer": None,
    "value_deserializer": None,
    "fetch_max_wait_ms": 500,
    "fetch_min_bytes": 1,
    "fetch_max_bytes": 52428800,
    "max_partition_fetch_bytes": 1 * 1024 * 1024,
    "request_timeout_ms": 30000,
    "retry_backoff_ms": 100,
    "reconnect_backoff_ms": 50,
    "reconnect_backoff_max_ms": 30000,
    "max_in_flight_requests_per_connection": 5,
    "auto_offset_reset": "latest",
    "enable_auto_commit": True,
    "auto_commit_interval_ms": 5000,
    "default_offset_commit_callback": None,
    "check_crcs": True,
    "isolation_level": "read_uncommitted",
    "allow_auto_create_topics": True,
    "metadata_max_age_ms": 5 * 60 * 1000,
    "partition_assignment_strategy": ("range", "roundrobin"),
    "max_poll_records": 500,
    "max_poll_interval_ms": 300000,
    "session_timeout_ms": 45000,
    "heartbeat_interval_ms": 3000,
    "consumer_timeout_ms": math.inf,
    "exclude_internal_topics": True,
    "bootstrap_timeout_ms": 30000,
    "security_protocol": "PLAINTEXT",
}

# kafka-python settings accepted so configurations carry over, but with no effect here.
IGNORED = {
    "api_version", "client_dns_lookup", "connections_max_idle_ms", "enable_incremental_fetch_sessions",
    "kafka_client", "metric_group_prefix", "metric_reporters", "metrics_enabled", "metrics_num_samples",
    "metrics_sample_window_ms", "receive_buffer_bytes", "receive_message_max_bytes", "selector", "send_buffer_bytes",
    "socket_options",
}
# kafka-python settings for features this client does not have: only their "off" value is accepted.
UNSUPPORTED = {
    "ssl_context": None, "ssl_check_hostname": True, "ssl_cafile": None, "ssl_certfile": None, "ssl_keyfile": None,
    "ssl_crlfile": None, "ssl_password": None, "ssl_ciphers": None, "sasl_mechanism": None,
    "sasl_plain_username": None, "sasl_plain_password": None, "sasl_kerberos_name": None,
    "sasl_kerberos_service_name": "kafka", "sasl_kerberos_domain_name": None, "sasl_oauth_token_provider": None,
    "proxy_url": None, "socks5_proxy": None,
}


def build_config(configs: dict[str, Any]) -> dict[str, Any]:
    unknown = set(configs) - set(DEFAULTS) - IGNORED - set(UNSUPPORTED)
    if unknown:
        raise ConfigurationError(f"unrecognized configs: {sorted(unknown)}")
    for key, off in UNSUPPORTED.items():
        if key in configs and configs[key] != off:
            raise ConfigurationError(f"{key} is not supported by groupclient (plaintext connections only)")
    config = {**DEFAULTS, **{k: v for k, v in configs.items() if k in DEFAULTS}}
    if config["security_protocol"] != "PLAINTEXT":
        raise ConfigurationError("security_protocol: only PLAINTEXT is supported")
    deprecated = {"smallest": "earliest", "largest": "latest"}
    config["auto_offset_reset"] = deprecated.get(config["auto_offset_reset"], config["auto_offset_reset"])
    if config["auto_offset_reset"] not in ("earliest", "latest", "none"):
        raise ConfigurationError(f"auto_offset_reset must be 'earliest', 'latest' or 'none', "
                                 f"not {config['auto_offset_reset']!r}")
    if config["isolation_level"] not in ("read_uncommitted", "read_committed"):
        raise ConfigurationError("isolation_level must be 'read_uncommitted' or 'read_committed'")
    for key in ("request_timeout_ms", "session_timeout_ms", "heartbeat_interval_ms", "max_poll_interval_ms",
                "max_poll_records", "fetch_max_bytes", "max_partition_fetch_bytes", "auto_commit_interval_ms",
                "max_in_flight_requests_per_connection", "metadata_max_age_ms"):
        value = config[key]
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ConfigurationError(f"{key} must be a positive integer, not {value!r}")
    for key in ("retry_backoff_ms", "reconnect_backoff_ms", "reconnect_backoff_max_ms", "fetch_max_wait_ms",
                "fetch_min_bytes"):
        value = config[key]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigurationError(f"{key} must be a non-negative integer, not {value!r}")
    if config["heartbeat_interval_ms"] >= config["session_timeout_ms"]:
        raise ConfigurationError("heartbeat_interval_ms must be lower than session_timeout_ms")
    if config["group_instance_id"] is not None:
        if config["group_id"] is None:
            raise ConfigurationError("group_instance_id requires group_id")
        if not isinstance(config["group_instance_id"], str) or config["group_instance_id"] in ("", ".", ".."):
            raise ConfigurationError("group_instance_id must be a non-empty string other than '.' and '..'")
    if config["client_rack"] is not None and (not isinstance(config["client_rack"], str) or not config["client_rack"]):
        raise ConfigurationError(f"client_rack must be a non-empty string or None, not {config['client_rack']!r}")
    if config["group_id"] is not None and (not isinstance(config["group_id"], str) or not config["group_id"]):
        raise ConfigurationError("group_id must be a non-empty string or None")
    return config
