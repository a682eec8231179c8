"""The secure stack's TLS material: a private CA and a loopback broker certificate, as PEM.

Kafka reads PEM key and trust stores (`ssl.keystore.type=PEM`), so no keytool
and no Java keystore password are needed. The CA's key signs the broker
certificate once and is then thrown away: nothing else can be signed with it.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALID_DAYS = 3650
"""How long the certificates are valid: a local stack is not rotated."""


def write_owner_only(path: Path, data: bytes) -> None:
    """Write `data` to a new file only its owner can read (0600 from the first byte)."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "metalog"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common)])  # fmt: skip


def write_certificates(ca_file: Path, broker_file: Path) -> None:
    """Write the CA certificate (`ca_file`) and the broker's key and certificate (`broker_file`).

    The broker certificate names 127.0.0.1 and localhost, the addresses the local
    stack listens on, so clients verify the host name as they do on any cluster.
    """
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("metalog local CA")).issuer_name(_name("metalog local CA"))
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1")).issuer_name(ca_cert.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName([
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
            critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH,
                                              x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    pem = serialization.Encoding.PEM
    # Kafka's PEM key store takes a PKCS#8 key; unencrypted, so no key password is configured.
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())  # fmt: skip
    write_owner_only(broker_file, key_pem + cert.public_bytes(pem) + ca_cert.public_bytes(pem))
    ca_file.write_bytes(ca_cert.public_bytes(pem))
