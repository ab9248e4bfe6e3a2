"""A client's security settings: TLS (an ``ssl.SSLContext``) and SASL (mechanism and credentials).

:func:`security_from_config` reads kafka-python's setting names (``security_protocol``,
``ssl_cafile``, ``sasl_mechanism``, ``sasl_plain_username`` ...) and refuses a combination that
cannot work with a :class:`ConfigurationError` naming the setting, before anything connects.
The password is kept only in :class:`SaslSettings` and never appears in its repr.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigurationError
from ..protocol.sasl import MECHANISMS, PLAIN, ScramClient, SaslError, plain_message

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SSL_KEYS = ("ssl_context", "ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_crlfile", "ssl_password", "ssl_ciphers")
_SASL_KEYS = ("sasl_mechanism", "sasl_plain_username", "sasl_plain_password")


@dataclass(frozen=True)
class SaslSettings:
    mechanism: str
    username: str
    password: str = field(repr=False)

    def exchange(self) -> SaslExchange:
        return SaslExchange(self)


class SaslExchange:
    """The client's tokens for one authentication: :meth:`first`, then :meth:`step` with each
    token the broker answers until it returns None (done).  Raises SaslError on a broker token
    that breaks the mechanism (for SCRAM: a server that does not know the password)."""

    def __init__(self, settings: SaslSettings) -> None:
        self._settings = settings
        self._scram = (None if settings.mechanism == PLAIN
                       else ScramClient(settings.mechanism, settings.username, settings.password))
        self._steps = 0

    def first(self) -> bytes:
        if self._scram is None:
            return plain_message(self._settings.username, self._settings.password)
        return self._scram.first()

    def step(self, token: bytes) -> bytes | None:
        self._steps += 1
        if self._scram is None:
            return None  # PLAIN: the broker's (empty) answer means accepted
        if self._steps == 1:
            return self._scram.final(token)
        if self._steps == 2:
            self._scram.verify(token)
            return None
        raise SaslError("the broker sent a SCRAM token after the exchange ended")


@dataclass(frozen=True)
class Security:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslSettings | None = None


PLAINTEXT = Security()


def _path(config: Mapping[str, Any], key: str) -> str | None:
    value = config.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigurationError(f"{key} must be a file path, not {value!r}")
    return value


def _ssl_context(config: Mapping[str, Any]) -> ssl.SSLContext:
    """kafka-python's recipe: ssl_context when given, else one built from the ssl_* files."""
    given = config.get("ssl_context")
    if given is not None:
        if not isinstance(given, ssl.SSLContext):
            raise ConfigurationError(f"ssl_context must be an ssl.SSLContext, not {type(given).__name__}")
        return given
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = bool(config.get("ssl_check_hostname", True))
    context.verify_mode = ssl.CERT_REQUIRED
    cafile, certfile, keyfile = (_path(config, k) for k in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"))
    crlfile = _path(config, "ssl_crlfile")
    try:
        if cafile is not None:
            context.load_verify_locations(cafile=cafile)
        else:
            context.load_default_certs()
        if certfile is not None:
            context.load_cert_chain(certfile, keyfile, password=config.get("ssl_password"))
        elif keyfile is not None:
            raise ConfigurationError("ssl_keyfile needs ssl_certfile")
        if crlfile is not None:
            context.load_verify_locations(cafile=crlfile)
            context.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
        if config.get("ssl_ciphers") is not None:
            context.set_ciphers(config["ssl_ciphers"])
    except (OSError, ssl.SSLError) as exc:
        # a missing file, a key that does not match its certificate, a wrong ssl_password
        raise ConfigurationError(f"cannot set up TLS from the ssl_* settings: {exc}") from None
    return context


def _sasl(config: Mapping[str, Any]) -> SaslSettings:
    mechanism = config.get("sasl_mechanism")
    if mechanism is None:
        raise ConfigurationError(f"security_protocol {config['security_protocol']} needs sasl_mechanism "
                                 f"({', '.join(MECHANISMS)})")
    if mechanism not in MECHANISMS:
        raise ConfigurationError(f"sasl_mechanism {mechanism!r} is not supported: use one of {', '.join(MECHANISMS)}")
    username, password = config.get("sasl_plain_username"), config.get("sasl_plain_password")
    if not isinstance(username, str) or not username:
        raise ConfigurationError(f"sasl_mechanism {mechanism} needs sasl_plain_username")
    if not isinstance(password, str) or not password:
        raise ConfigurationError(f"sasl_mechanism {mechanism} needs sasl_plain_password")
    return SaslSettings(mechanism, username, password)


def security_from_config(config: Mapping[str, Any]) -> Security:
    protocol = config.get("security_protocol", "PLAINTEXT")
    if protocol not in PROTOCOLS:
        raise ConfigurationError(f"security_protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")
    uses_sasl = protocol.startswith("SASL_")
    # a TLS or SASL setting that would be ignored means the program expects a protection it
    # would not get (kafka-python ignores them silently): refused
    if not uses_sasl and (unused := [k for k in _SASL_KEYS if config.get(k) is not None]):
        raise ConfigurationError(f"{', '.join(unused)} set but security_protocol is {protocol}: "
                                 f"use SASL_SSL or SASL_PLAINTEXT")
    if not protocol.endswith("SSL") and (unused := [k for k in _SSL_KEYS if config.get(k) is not None]):
        raise ConfigurationError(f"{', '.join(unused)} set but security_protocol is {protocol}: "
                                 f"use SSL or SASL_SSL")
    return Security(protocol, _ssl_context(config) if protocol.endswith("SSL") else None,
                    _sasl(config) if uses_sasl else None)
