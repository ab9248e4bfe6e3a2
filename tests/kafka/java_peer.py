"""Compiles tests/kafka/JavaPeer.java (a consumer group member), JavaSharePeer.java (a share group
member) and JavaProducer.java (the record-path corpus's producer) against the downloaded
kafka-clients, once per source."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from tests.locks import file_lock

from .broker import KAFKA_VERSION, fetch, home

HERE = Path(__file__).parent


def java_command(program: str, version: str = KAFKA_VERSION) -> list[str]:
    """The command line running ``program`` (JavaPeer or JavaProducer) on kafka-clients ``version``."""
    libs = fetch(version)
    source = HERE / f"{program}.java"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    classes = home(version) / f"{program.lower()}-{digest}"
    compiled = classes / f"{program}.class"
    if not compiled.exists():
        # compiled beside, then renamed into place: another pytest-xdist worker may be compiling
        # it too, and must not run the classes half written
        with file_lock(home(version) / f"{program.lower()}.lock"):
            if not compiled.exists():
                building = classes.with_name(classes.name + ".building")
                for leftover in (building, classes):  # of a compilation that was interrupted
                    shutil.rmtree(leftover, ignore_errors=True)
                building.mkdir(parents=True)
                subprocess.run(["javac", "-nowarn", "-cp", f"{libs}/*", "-d", str(building), str(source)],
                               check=True, capture_output=True, timeout=300)
                building.rename(classes)
    return ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            f"-Dlog4j2.configurationFile={home(version) / 'log4j2.xml'}", "-cp", f"{libs}/*:{classes}", program]


def java_peer_command(version: str = KAFKA_VERSION) -> list[str]:
    """The Java consumer group member (tests/integration/peers.py)."""
    return java_command("JavaPeer", version)


def java_share_peer_command(version: str = KAFKA_VERSION) -> list[str]:
    """The Java share-group member (tests/integration/share_peers.py)."""
    return java_command("JavaSharePeer", version)
