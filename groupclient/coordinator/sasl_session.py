"""One connection's SASL authentication on a SASL listener, as Kafka's SaslServerAuthenticator
runs it: sans-IO, the node feeds it requests and sends what it returns.

Phases: INITIAL (ApiVersions at most once, then SaslHandshake) -> AUTHENTICATE (SaslAuthenticate
tokens) -> COMPLETE (every API, as on a plain listener), or FAILED.  A request out of turn closes
the connection: without an answer before the handshake, with ILLEGAL_SASL_STATE during the
exchange.  A failed exchange is answered (after connection_failed_authentication_delay_ms, which
slows down password guessing) and the connection closed.
"""

from __future__ import annotations

import enum
import logging

from ..protocol.apis import ApiKey
from ..error_codes import ErrorCode
from ..protocol.sasl import PLAIN, SaslError, ScramServer, parse_plain
from .security import ListenerSecurity

log = logging.getLogger("groupclient.coordinator.sasl")


class SaslPhase(enum.Enum):
    INITIAL = "initial"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    FAILED = "failed"


class Gate(enum.Enum):
    """What the node does with a request, given the connection's phase."""

    SERVE = "serve"  # the usual handler
    SASL = "sasl"  # this session's handshake() / authenticate()
    CLOSE = "close"  # close without an answer
    REFUSE = "refuse"  # answer ILLEGAL_SASL_STATE, then close


class SaslSession:
    def __init__(self, security: ListenerSecurity, peer: str) -> None:
        self.security = security
        self.peer = peer
        self.phase = SaslPhase.INITIAL
        self.mechanism: str | None = None
        self.principal: str | None = None
        self._versions_seen = False
        self._scram: ScramServer | None = None

    @property
    def complete(self) -> bool:
        return self.phase is SaslPhase.COMPLETE

    @property
    def failed(self) -> bool:
        return self.phase is SaslPhase.FAILED

    def gate(self, key: ApiKey, served: bool = True) -> Gate:
        """``served``: the request's version is one this server has (an ApiVersions at a version
        it does not have is answered UNSUPPORTED_VERSION and does not count, so the client can
        ask again at a lower one, as KIP-511 has it)."""
        if self.phase is SaslPhase.COMPLETE:
            return Gate.SERVE
        if self.phase is SaslPhase.INITIAL:
            if key is ApiKey.API_VERSIONS and not self._versions_seen:
                self._versions_seen = served
                return Gate.SERVE
            if key is ApiKey.SASL_HANDSHAKE:
                return Gate.SASL
            return self._out_of_turn(key, Gate.CLOSE, "during SASL handshake")
        if self.phase is SaslPhase.AUTHENTICATE and key is ApiKey.SASL_AUTHENTICATE:
            return Gate.SASL
        return self._out_of_turn(key, Gate.REFUSE, "during SASL authentication")

    def _out_of_turn(self, key: ApiKey, gate: Gate, when: str) -> Gate:
        log.info("closing connection from %s: unexpected Kafka request of type %s %s", self.peer, key.name, when)
        self.phase = SaslPhase.FAILED
        return gate

    def handshake(self, mechanism: str) -> tuple[int, list[str]]:
        """(error code, the enabled mechanisms) for SaslHandshake."""
        enabled = list(self.security.sasl_mechanisms)
        if mechanism not in enabled:
            log.info("closing connection from %s: unsupported SASL mechanism %r", self.peer, mechanism)
            self.phase = SaslPhase.FAILED
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM, enabled
        self.mechanism = mechanism
        self.phase = SaslPhase.AUTHENTICATE
        return ErrorCode.NONE, enabled

    def authenticate(self, token: bytes) -> tuple[int, str | None, bytes]:
        """(error code, error message, token for the client) for one SaslAuthenticate."""
        assert self.mechanism is not None
        try:
            if self.mechanism == PLAIN:
                return self._plain(token)
            return self._scram_step(token)
        except SaslError as exc:
            return self._fail(str(exc) if self.mechanism == PLAIN else (
                f"Authentication failed during authentication due to invalid credentials with SASL mechanism "
                f"{self.mechanism}"), detail=str(exc))

    def _plain(self, token: bytes) -> tuple[int, str | None, bytes]:
        username, password = parse_plain(token)
        if not self.security.users.check_password(username, password):
            return self._fail("Authentication failed: Invalid username or password", username=username)
        return self._succeed(username)

    def _scram_step(self, token: bytes) -> tuple[int, str | None, bytes]:
        assert self.mechanism is not None
        if self._scram is None:
            mechanism = self.mechanism
            self._scram = ScramServer(mechanism, lambda name: self.security.users.scram(mechanism, name))
            return ErrorCode.NONE, None, self._scram.first(token)
        answer = self._scram.final(token)
        assert self._scram.username is not None
        code, message, _ = self._succeed(self._scram.username)
        return code, message, answer

    def _succeed(self, username: str) -> tuple[int, str | None, bytes]:
        self.phase = SaslPhase.COMPLETE
        self.principal = username
        log.debug("%s authenticated as %r with %s", self.peer, username, self.mechanism)
        return ErrorCode.NONE, None, b""

    def _fail(self, message: str, username: str | None = None, detail: str | None = None) -> tuple[int, str, bytes]:
        self.phase = SaslPhase.FAILED
        who = username if username is not None else (self._scram.username if self._scram else None)
        log.info("failed authentication with %s (user %r, %s): %s", self.peer, who, self.mechanism, detail or message)
        return ErrorCode.SASL_AUTHENTICATION_FAILED, message, b""
