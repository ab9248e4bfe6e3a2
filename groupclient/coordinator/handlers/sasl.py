"""SaslHandshake (17) and SaslAuthenticate (36) outside an authentication: on a listener without
SASL, or again after one completed.  Kafka answers both with ILLEGAL_SASL_STATE there.  During an
authentication the node hands them to the connection's SaslSession (coordinator/sasl_session.py)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.sasl import SaslAuthenticateResponse, SaslHandshakeResponse

from ...error_codes import ErrorCode
from .context import Handler, RequestContext


def handshake_response(req: Any, error: int, mechanisms: list[str]) -> Any:
    return SaslHandshakeResponse(version=req.version, error_code=int(error), mechanisms=mechanisms)


def authenticate_response(req: Any, error: int, message: str | None, token: bytes) -> Any:
    return SaslAuthenticateResponse(version=req.version, error_code=int(error), error_message=message,
                                    auth_bytes=token, session_lifetime_ms=0)


async def _handshake(ctx: RequestContext, req: Any) -> Any:
    return handshake_response(req, ErrorCode.ILLEGAL_SASL_STATE, [])


async def _authenticate(ctx: RequestContext, req: Any) -> Any:
    return authenticate_response(req, ErrorCode.ILLEGAL_SASL_STATE,
                                 "SaslAuthenticate request received outside a SASL authentication", b"")


HANDSHAKE = Handler(_handshake, lambda req, error: handshake_response(req, error, []))
AUTHENTICATE = Handler(_authenticate, lambda req, error: authenticate_response(req, error, None, b""))
