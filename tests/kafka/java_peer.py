"""Compiles tests/kafka/JavaPeer.java against the downloaded kafka-clients (once per source)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from .broker import KAFKA_VERSION, fetch, home

SOURCE = Path(__file__).with_name("JavaPeer.java")


def java_peer_command(version: str = KAFKA_VERSION) -> list[str]:
    libs = fetch(version)
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    classes = home(version) / f"java-peer-{digest}"
    if not (classes / "JavaPeer.class").exists():
        classes.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-nowarn", "-cp", f"{libs}/*", "-d", str(classes), str(SOURCE)],
                       check=True, capture_output=True, timeout=300)
    return ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            f"-Dlog4j2.configurationFile={home(version) / 'log4j2.xml'}", "-cp", f"{libs}/*:{classes}", "JavaPeer"]
