"""SASL PLAIN and SCRAM messages (protocol/sasl.py) and a SASL listener's per-connection state
machine (coordinator/sasl_session.py), without sockets."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings, strategies as st

from groupclient.coordinator.sasl_session import Gate, SaslPhase, SaslSession
from groupclient.coordinator.security import ListenerSecurity, UserStore
from groupclient.network.security import SaslExchange, SaslSettings
from groupclient.protocol.apis import ApiKey
from groupclient.error_codes import ErrorCode
from groupclient.protocol.sasl import (
    SCRAM_SHA_256, SCRAM_SHA_512, SaslError, ScramClient, ScramServer, make_credential, parse_plain, plain_message,
)

SECURITY = ListenerSecurity("SASL_PLAINTEXT", users={"alice": "alice-secret", "b=o,b": "bob-secret"})


def test_scram_sha_256_client_matches_rfc_7677() -> None:
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = client.final(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")


def test_scram_server_checks_the_rfc_7677_proof() -> None:
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = make_credential(SCRAM_SHA_256, "pencil", 4096, salt)
    server = ScramServer(SCRAM_SHA_256, lambda name: credential if name == "user" else None,
                         nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    assert server.first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO") == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert server.final(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=") == \
        b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512])
def test_scram_round_trip_and_refusals(mechanism: str) -> None:
    store = UserStore({"a,l=ice": "right"})

    def exchange(password: str) -> None:
        server = ScramServer(mechanism, lambda name: store.scram(mechanism, name))
        client = ScramClient(mechanism, "a,l=ice", password)
        client.verify(server.final(client.final(server.first(client.first()))))

    exchange("right")
    with pytest.raises(SaslError, match="invalid credentials"):
        exchange("wrong")
    server = ScramServer(mechanism, lambda name: None)
    with pytest.raises(SaslError, match="Invalid user credentials"):
        server.first(ScramClient(mechanism, "nobody", "x").first())


def test_scram_client_refuses_a_server_that_does_not_know_the_password() -> None:
    store = UserStore({"alice": "the-real-one"})
    honest = ScramServer(SCRAM_SHA_256, lambda name: store.scram(SCRAM_SHA_256, name))
    client = ScramClient(SCRAM_SHA_256, "alice", "the-real-one")
    server_final = honest.final(client.final(honest.first(client.first())))
    signature = bytearray(base64.b64decode(server_final[2:]))
    signature[0] ^= 1  # what a server without the user's ServerKey would have to guess
    with pytest.raises(SaslError, match="signature is wrong"):
        client.verify(b"v=" + base64.b64encode(bytes(signature)))
    with pytest.raises(SaslError, match="refused"):
        client.verify(b"e=other-error")
    client = ScramClient(SCRAM_SHA_256, "alice", "the-real-one")
    client.first()
    with pytest.raises(SaslError, match="nonce"):
        client.final(b"r=someone-elses-nonce,s=c2FsdA==,i=4096")
    with pytest.raises(SaslError, match="iterations"):
        client.final(f"r={client.nonce}x,s=c2FsdA==,i=1".encode())


def test_plain_rules() -> None:
    assert parse_plain(plain_message("alice", "pw")) == ("alice", "pw")
    assert parse_plain(b"alice\x00alice\x00pw") == ("alice", "pw")
    for bad, message in [(b"alice\x00pw", "3 tokens"), (b"\x00\x00pw", "username not specified"),
                         (b"\x00alice\x00", "password not specified"), (b"bob\x00alice\x00pw", "authorization id")]:
        with pytest.raises(SaslError, match=message):
            parse_plain(bad)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.binary(max_size=200))
def test_random_sasl_tokens_are_refused_cleanly(first: bytes, second: bytes) -> None:
    """Whatever a client sends, the server raises SaslError or answers; nothing else escapes."""
    store = UserStore({"alice": "alice-secret"}, iterations=4096)
    for mechanism in (SCRAM_SHA_256, SCRAM_SHA_512):
        server = ScramServer(mechanism, lambda name: store.scram(mechanism, name))
        try:
            server.first(first)
            server.final(second)
        except SaslError:
            pass
    try:
        parse_plain(first)
    except SaslError:
        pass


# -- a SASL listener's connection --------------------------------------------------------------
def authenticated(mechanism: str, password: str = "alice-secret") -> SaslSession:
    session = SaslSession(SECURITY, "peer")
    assert session.gate(ApiKey.API_VERSIONS) is Gate.SERVE
    assert session.gate(ApiKey.SASL_HANDSHAKE) is Gate.SASL
    assert session.handshake(mechanism)[0] == ErrorCode.NONE
    exchange = SaslExchange(SaslSettings(mechanism, "alice", password))
    token: bytes | None = exchange.first()
    while token is not None and not session.failed:
        assert session.gate(ApiKey.SASL_AUTHENTICATE) is Gate.SASL
        code, message, answer = session.authenticate(token)
        if code:
            assert session.failed and message
            break
        token = exchange.step(answer)
    return session


@pytest.mark.parametrize("mechanism", ["PLAIN", SCRAM_SHA_256, SCRAM_SHA_512])
def test_a_session_authenticates_then_serves_everything(mechanism: str) -> None:
    session = authenticated(mechanism)
    assert session.complete and session.principal == "alice"
    for key in ApiKey:
        assert session.gate(key) is Gate.SERVE


@pytest.mark.parametrize("mechanism, message", [
    ("PLAIN", "Authentication failed: Invalid username or password"),
    (SCRAM_SHA_256, "invalid credentials with SASL mechanism SCRAM-SHA-256"),
])
def test_a_wrong_password_fails_the_session_with_kafkas_message(mechanism: str, message: str) -> None:
    session = SaslSession(SECURITY, "peer")
    session.gate(ApiKey.SASL_HANDSHAKE)
    session.handshake(mechanism)
    exchange = SaslExchange(SaslSettings(mechanism, "alice", "wrong"))
    code, text, answer = session.authenticate(exchange.first())
    if mechanism != "PLAIN":
        assert code == ErrorCode.NONE
        code, text, _ = session.authenticate(exchange.step(answer) or b"")
    assert code == ErrorCode.SASL_AUTHENTICATION_FAILED and text is not None and message in text
    assert session.phase is SaslPhase.FAILED and session.principal is None


def test_requests_out_of_turn_close_the_connection() -> None:
    session = SaslSession(SECURITY, "peer")
    assert session.gate(ApiKey.METADATA) is Gate.CLOSE  # before the handshake: no answer
    session = SaslSession(SECURITY, "peer")
    assert session.gate(ApiKey.API_VERSIONS, served=False) is Gate.SERVE  # KIP-511: ask again lower
    assert session.gate(ApiKey.API_VERSIONS) is Gate.SERVE
    assert session.gate(ApiKey.API_VERSIONS) is Gate.CLOSE  # only once
    session = SaslSession(SECURITY, "peer")
    assert session.gate(ApiKey.SASL_AUTHENTICATE) is Gate.CLOSE  # tokens before the handshake
    session = SaslSession(SECURITY, "peer")
    session.gate(ApiKey.SASL_HANDSHAKE)
    session.handshake(SCRAM_SHA_512)
    assert session.gate(ApiKey.JOIN_GROUP) is Gate.REFUSE  # during the exchange: ILLEGAL_SASL_STATE
    session = SaslSession(SECURITY, "peer")
    code, enabled = session.handshake("GSSAPI")
    assert code == ErrorCode.UNSUPPORTED_SASL_MECHANISM and set(enabled) == {"PLAIN", SCRAM_SHA_256, SCRAM_SHA_512}
    assert session.failed


def test_no_password_is_kept_or_shown() -> None:
    security = ListenerSecurity("SASL_PLAINTEXT", users={"alice": "alice-secret"})
    assert "alice-secret" not in repr(security) and "alice-secret" not in repr(vars(security.users))
    assert "alice-secret" not in repr(SaslSettings("PLAIN", "alice", "alice-secret"))
    assert security.users.check_password("alice", "alice-secret")
    assert not security.users.check_password("alice", "alice-secreT")
    assert not security.users.check_password("mallory", "alice-secret")


def test_listener_security_is_checked_when_made() -> None:
    with pytest.raises(ValueError, match="needs users"):
        ListenerSecurity("SASL_PLAINTEXT")
    with pytest.raises(ValueError, match="ssl_certfile"):
        ListenerSecurity("SSL")
    with pytest.raises(ValueError, match="unknown SASL mechanisms"):
        ListenerSecurity("SASL_PLAINTEXT", users={"a": "b"}, sasl_mechanisms=("GSSAPI",))
    with pytest.raises(ValueError, match="cannot set up TLS"):
        ListenerSecurity("SSL", ssl_certfile="/no/such/file.pem")
