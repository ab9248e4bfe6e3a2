"""A throw-away certificate authority and server certificate for TLS tests and demos.

``make_certificates(directory)`` writes ``ca.pem`` (what clients trust: ssl_cafile,
ssl.ca.location), ``server.pem`` (the server's certificate chain and PKCS#8 key in one file: what
Kafka's ``ssl.keystore.type=PEM`` reads, and ``ListenerSecurity.ssl_certfile``) and
``client.pem`` (a client certificate and key signed by the same CA, for ssl_client_auth).  The
server certificate names 127.0.0.1 and localhost, so host name checks pass.  Needs the
``cryptography`` package (a test dependency).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Certificates:
    ca: Path
    server: Path
    client: Path
    other_ca: Path  # a CA that signed none of these: trusting it must fail the handshake


def make_certificates(directory: str | Path, days: int = 2) -> Certificates:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)

    def name(common: str) -> Any:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def authority(common: str) -> tuple[Any, Any]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(name(common)).issuer_name(name(common))
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
                .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                             crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .sign(key, hashes.SHA256()))
        return key, cert

    def leaf(common: str, ca_key: Any, ca_cert: Any, usage: Any, names: list[Any]) -> tuple[Any, Any]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder().subject_name(name(common)).issuer_name(ca_cert.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=days))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                                  critical=False))
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return key, builder.sign(ca_key, hashes.SHA256())

    def pem(cert: Any) -> bytes:
        return bytes(cert.public_bytes(serialization.Encoding.PEM))

    def key_pem(key: Any) -> bytes:
        return bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))

    ca_key, ca_cert = authority("groupclient test CA")
    server_key, server_cert = leaf("127.0.0.1", ca_key, ca_cert, ExtendedKeyUsageOID.SERVER_AUTH,
                                   [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")])
    client_key, client_cert = leaf("groupclient-test-client", ca_key, ca_cert, ExtendedKeyUsageOID.CLIENT_AUTH, [])
    _, other_cert = authority("a CA nobody uses")
    files = Certificates(directory / "ca.pem", directory / "server.pem", directory / "client.pem",
                         directory / "other-ca.pem")
    files.ca.write_bytes(pem(ca_cert))
    # key first, then the chain (leaf first): Kafka's PEM key store and Python's
    # load_cert_chain both read this one file
    files.server.write_bytes(key_pem(server_key) + pem(server_cert) + pem(ca_cert))
    files.client.write_bytes(key_pem(client_key) + pem(client_cert))
    files.other_ca.write_bytes(pem(other_cert))
    for path in (files.server, files.client):
        path.chmod(0o600)
    return files
