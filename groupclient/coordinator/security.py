"""What the embedded coordinator's listeners require of clients: TLS, SASL, or both.

``ListenerSecurity(protocol="SASL_SSL", ssl_certfile=..., ssl_keyfile=..., users={"alice": "..."})``
is passed as ``EmbeddedCluster(security=...)`` (or ``--security-protocol`` and friends on the
command line).  Passwords are turned into salted SCRAM credentials when the object is made
(RFC 5802: salt, StoredKey, ServerKey; SCRAM-SHA-256 and -512 each with their own salt) and are
not kept; PLAIN is checked against the SCRAM-SHA-256 credential, so no password is stored or
logged anywhere.
"""

from __future__ import annotations

import hmac
import ssl
from collections.abc import Mapping
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

from ..protocol.sasl import (
    DEFAULT_ITERATIONS, MECHANISMS, SCRAM_MECHANISMS, SCRAM_SHA_256, ScramCredential, make_credential,
)

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
CLIENT_AUTH = ("none", "requested", "required")


class UserStore:
    """Salted credentials per user and SCRAM mechanism; ``check_password`` for PLAIN."""

    def __init__(self, users: Mapping[str, str], iterations: int = DEFAULT_ITERATIONS) -> None:
        self._credentials: dict[tuple[str, str], ScramCredential] = {}
        for name, password in users.items():
            if not isinstance(name, str) or not name or not isinstance(password, str) or not password:
                raise ValueError("every SASL user needs a non-empty name and password (strings)")
            for mechanism in SCRAM_MECHANISMS:
                self._credentials[(mechanism, name)] = make_credential(mechanism, password, iterations)

    def __repr__(self) -> str:
        return f"UserStore({len(self.users())} users)"

    def users(self) -> list[str]:
        return sorted({name for _, name in self._credentials})

    def scram(self, mechanism: str, username: str) -> ScramCredential | None:
        return self._credentials.get((mechanism, username))

    def check_password(self, username: str, password: str) -> bool:
        """PLAIN: derive the SCRAM-SHA-256 StoredKey from ``password`` and compare, in constant
        time.  An unknown user costs the same work as a known one."""
        credential = self._credentials.get((SCRAM_SHA_256, username))
        probe = credential or make_credential(SCRAM_SHA_256, "unknown", salt=b"\x00" * 32)
        candidate = make_credential(SCRAM_SHA_256, password, probe.iterations, probe.salt)
        return credential is not None and hmac.compare_digest(candidate.stored_key, credential.stored_key)


@dataclass(frozen=True)
class ListenerSecurity:
    """A listener's security.  ``users`` maps user names to passwords for SASL (PLAIN and
    SCRAM-SHA-256/512); it becomes a :class:`UserStore` at once.  ``ssl_client_auth``:
    Kafka's ssl.client.auth (``required`` needs ``ssl_cafile`` to verify client certificates)."""

    protocol: str = "PLAINTEXT"
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_client_auth: str = "none"
    sasl_mechanisms: tuple[str, ...] = MECHANISMS
    users: Any = field(default_factory=dict)  # Mapping[str, str] given, UserStore kept
    scram_iterations: int = DEFAULT_ITERATIONS

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"security protocol must be one of {', '.join(PROTOCOLS)}, not {self.protocol!r}")
        if self.ssl_client_auth not in CLIENT_AUTH:
            raise ValueError(f"ssl_client_auth must be one of {', '.join(CLIENT_AUTH)}")
        if self.uses_tls and not self.ssl_certfile:
            raise ValueError(f"{self.protocol} needs ssl_certfile (the certificate chain, and the key unless "
                             f"ssl_keyfile names it)")
        if self.ssl_client_auth != "none" and not self.ssl_cafile:
            raise ValueError("ssl_client_auth needs ssl_cafile to verify client certificates")
        mechanisms = tuple(self.sasl_mechanisms)
        if unknown := [m for m in mechanisms if m not in MECHANISMS]:
            raise ValueError(f"unknown SASL mechanisms {unknown}: use {', '.join(MECHANISMS)}")
        if self.uses_sasl and not mechanisms:
            raise ValueError(f"{self.protocol} needs at least one SASL mechanism")
        object.__setattr__(self, "sasl_mechanisms", mechanisms)
        if not isinstance(self.users, UserStore):
            object.__setattr__(self, "users", UserStore(dict(self.users), self.scram_iterations))
        if self.uses_sasl and not self.users.users():
            raise ValueError(f"{self.protocol} needs users (name -> password)")
        if self.uses_tls:
            self.server_context()  # a missing file or a bad key fails here, not at the first client

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            assert self.ssl_certfile is not None
            context.load_cert_chain(self.ssl_certfile, self.ssl_keyfile, password=self.ssl_password)
            if self.ssl_cafile:
                context.load_verify_locations(cafile=self.ssl_cafile)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"cannot set up TLS for the listener: {exc}") from None
        context.verify_mode = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                               "required": ssl.CERT_REQUIRED}[self.ssl_client_auth]
        return context


PLAINTEXT = ListenerSecurity()


def read_users_file(path: str | Path) -> dict[str, str]:
    """``NAME=PASSWORD`` lines (blank lines and ``#`` comments skipped); the password is
    everything after the first ``=``.  A line without one is an error naming its number only."""
    users: dict[str, str] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, password = line.partition("=")
        if not sep or not name.strip() or not password:
            raise ValueError(f"{path}, line {number}: expected NAME=PASSWORD")
        users[name.strip()] = password
    return users

