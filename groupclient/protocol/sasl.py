"""SASL PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677) messages, as Kafka uses them.

Pure functions and small sans-IO objects, shared by the client (``network.sasl``) and the
embedded coordinator (``coordinator.security``).  Nothing here touches a socket or a clock;
nonces come from ``secrets`` unless a test passes its own.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
SCRAM_MECHANISMS = {SCRAM_SHA_256: "sha256", SCRAM_SHA_512: "sha512"}
MECHANISMS = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512)
# Kafka's ScramMechanism: the fewest iterations it accepts, and what kafka-configs uses by default
MIN_ITERATIONS = 4096
DEFAULT_ITERATIONS = 4096
MAX_ITERATIONS = 16384  # Kafka's ScramMechanism.maxIterations: a client is never asked for more


class SaslError(ValueError):
    """A SASL message that breaks the mechanism's rules (the text says which)."""


# -- PLAIN ------------------------------------------------------------------------------------
def plain_message(username: str, password: str) -> bytes:
    """authzid NUL authcid NUL passwd, with an empty authzid (what Kafka clients send)."""
    return b"\x00" + username.encode() + b"\x00" + password.encode()


def parse_plain(message: bytes) -> tuple[str, str]:
    """(username, password) from a PLAIN message; Kafka's PlainSaslServer rules: three parts,
    a non-empty username and password, and an authorization id, if any, equal to the username."""
    parts = message.split(b"\x00")
    if len(parts) != 3:
        raise SaslError("Invalid SASL/PLAIN response: expected 3 tokens")
    try:
        authzid, username, password = (p.decode() for p in parts)
    except UnicodeDecodeError:
        raise SaslError("Invalid SASL/PLAIN response: not UTF-8") from None
    if not username:
        raise SaslError("Authentication failed: username not specified")
    if not password:
        raise SaslError("Authentication failed: password not specified")
    if authzid and authzid != username:
        raise SaslError("Authentication failed: Client requested an authorization id that is different "
                        "from username")
    return username, password


# -- SCRAM ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScramCredential:
    """What a server stores for one user and mechanism: never the password (RFC 5802 section 3)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:  # keys are password-equivalent for this server: never printed
        return f"ScramCredential(iterations={self.iterations})"


def _hash(mechanism: str) -> str:
    try:
        return SCRAM_MECHANISMS[mechanism]
    except KeyError:
        raise SaslError(f"not a SCRAM mechanism: {mechanism!r}") from None


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(_hash(mechanism), password.encode(), salt, iterations)


def _hmac(mechanism: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, _hash(mechanism)).digest()


def _h(mechanism: str, data: bytes) -> bytes:
    return hashlib.new(_hash(mechanism), data).digest()


def make_credential(mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS,
                    salt: bytes | None = None) -> ScramCredential:
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise SaslError(f"iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}, not {iterations}")
    salt = secrets.token_bytes(32) if salt is None else salt
    salted = salted_password(mechanism, password, salt, iterations)
    client_key = _hmac(mechanism, salted, b"Client Key")
    return ScramCredential(salt, _h(mechanism, client_key), _hmac(mechanism, salted, b"Server Key"), iterations)


def _escape(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


def _unescape(name: str) -> str:
    if "=" in name.replace("=3D", "").replace("=2C", ""):
        raise SaslError("Invalid username: '=' not followed by 2C or 3D")
    return name.replace("=2C", ",").replace("=3D", "=")


def _attributes(message: str, expected: str) -> dict[str, str]:
    """``k=v,k=v`` in the order ``expected`` names (extra attributes after them are allowed)."""
    parts = message.split(",")
    found: dict[str, str] = {}
    for key, part in zip(expected, parts):
        if not part.startswith(key + "="):
            raise SaslError(f"Invalid SCRAM message: expected '{key}=' in {message!r}")
        found[key] = part[2:]
    if len(parts) < len(expected):
        raise SaslError(f"Invalid SCRAM message: too few attributes in {message!r}")
    return found


def _b64decode(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise SaslError(f"Invalid SCRAM message: {what} is not base64") from None


def _nonce() -> str:
    return secrets.token_urlsafe(24)


@dataclass
class ScramClient:
    """The client side of one SCRAM exchange: :meth:`first`, then :meth:`final` with the server's
    first message, then :meth:`verify` with the server's final message."""

    mechanism: str
    username: str
    password: str
    nonce: str = field(default_factory=_nonce)
    _client_first_bare: str = ""
    _server_signature: bytes = b""

    def first(self) -> bytes:
        _hash(self.mechanism)
        self._client_first_bare = f"n={_escape(self.username)},r={self.nonce}"
        return ("n,," + self._client_first_bare).encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode(errors="replace")
        if text.startswith("e="):
            raise SaslError(f"the server refused the SCRAM exchange: {text[2:]}")
        attrs = _attributes(text, "rsi")
        nonce, salt = attrs["r"], _b64decode(attrs["s"], "the salt")
        if not nonce.startswith(self.nonce) or len(nonce) == len(self.nonce):
            raise SaslError("Invalid SCRAM server nonce: it does not extend the client's")
        try:
            iterations = int(attrs["i"])
        except ValueError:
            raise SaslError(f"Invalid SCRAM iteration count {attrs['i']!r}") from None
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise SaslError(f"the server asked for {iterations} SCRAM iterations "
                            f"(between {MIN_ITERATIONS} and {MAX_ITERATIONS} are accepted)")
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        salted = salted_password(self.mechanism, self.password, salt, iterations)
        client_key = _hmac(self.mechanism, salted, b"Client Key")
        signature = _hmac(self.mechanism, _h(self.mechanism, client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        self._server_signature = _hmac(self.mechanism, _hmac(self.mechanism, salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        text = server_final.decode(errors="replace")
        if text.startswith("e="):
            raise SaslError(f"the server refused the SCRAM proof: {text[2:]}")
        signature = _b64decode(_attributes(text, "v")["v"], "the server signature")
        if not self._server_signature or not hmac.compare_digest(signature, self._server_signature):
            raise SaslError("the server's SCRAM signature is wrong: it does not know this user's credentials")


# (username) -> the stored credential, or None for an unknown user
CredentialLookup = Callable[[str], "ScramCredential | None"]


class ScramServer:
    """The server side of one SCRAM exchange.  ``lookup(username)`` gives the stored credential
    or None; an unknown user is refused at its first message, as Kafka's ScramSaslServer does
    (the server reports both refusals with one message, so they look the same to a client)."""

    def __init__(self, mechanism: str, lookup: CredentialLookup, nonce: str | None = None) -> None:
        _hash(mechanism)
        self.mechanism = mechanism
        self._lookup = lookup
        self._nonce = nonce or _nonce()
        self.username: str | None = None
        self._credential: ScramCredential | None = None
        self._combined_nonce = ""
        self._client_first_bare = ""
        self._server_first = ""

    def first(self, client_first: bytes) -> bytes:
        text = client_first.decode(errors="replace")
        header, sep, bare = text.partition(",")
        authzid, sep2, bare = bare.partition(",")
        if not sep or not sep2 or header not in ("n", "y"):
            raise SaslError("Invalid SCRAM client first message: channel binding is not supported")
        attrs = _attributes(bare, "nr")
        username = _unescape(attrs["n"])
        if authzid and authzid != "a=" + attrs["n"]:
            raise SaslError("Authentication failed: Client requested an authorization id that is different "
                            "from username")
        if not attrs["r"]:
            raise SaslError("Invalid SCRAM client first message: empty nonce")
        self.username = username
        credential = self._lookup(username)
        if credential is None:
            raise SaslError("Authentication failed: Invalid user credentials")
        self._credential = credential
        self._client_first_bare = bare
        self._combined_nonce = attrs["r"] + self._nonce
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._combined_nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode()

    def final(self, client_final: bytes) -> bytes:
        """The server's final message; raises SaslError when the proof is wrong."""
        credential = self._credential
        if credential is None:
            raise SaslError("SCRAM client final message before the first one")
        text = client_final.decode(errors="replace")
        without_proof, sep, proof_part = text.rpartition(",p=")
        if not sep:
            raise SaslError("Invalid SCRAM client final message: no proof")
        attrs = _attributes(without_proof, "cr")
        if attrs["c"] != "biws":
            raise SaslError("Invalid SCRAM client final message: channel binding is not supported")
        if attrs["r"] != self._combined_nonce:
            raise SaslError("Invalid SCRAM client final message: nonce mismatch")
        proof = _b64decode(proof_part, "the proof")
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self.mechanism, credential.stored_key, auth_message)
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if len(proof) != len(signature) or not hmac.compare_digest(_h(self.mechanism, client_key),
                                                                   credential.stored_key):
            raise SaslError(f"Authentication failed during authentication due to invalid credentials with SASL "
                            f"mechanism {self.mechanism}")
        server_signature = _hmac(self.mechanism, credential.server_key, auth_message)
        return f"v={base64.b64encode(server_signature).decode()}".encode()
